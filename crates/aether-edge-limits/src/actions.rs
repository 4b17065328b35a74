//! Which route actions Envoy would refuse: a header it does not let a
//! route change, a value it does not take in a header or a redirect, a
//! split whose weights add up past its limit, a redirect status it does
//! not send, a duration the edge cannot read. The projection builds
//! Envoy's action only for a route without any of these.

use std::borrow::Cow;
use std::fmt;

use aether_api::config::v1::{HeaderModifier, HttpRoute, RouteRedirect, RouteRetry, RouteRewrite};
use aether_api::validate::Violation;

use crate::duration::parse_gateway_duration;

/// The rule id of a valid route Envoy would refuse (a header it does not
/// let routes change, a split whose weights add up past its limit), or of
/// a value the edge cannot read (a duration).
pub const RULE_ENVOY: &str = "envoy";

/// Envoy's limit on a header name or value in a route (`HeaderValue`'s
/// `max_bytes`).
const MAX_HEADER_BYTES: usize = 16384;

/// A header value as Envoy reads a route's header values: as a
/// substitution format (`%REQ(x)%`), in which a literal `%` is `%%`. The
/// API's values are literal, so every `%` is doubled (Envoy refuses a
/// route holding `50%off` unescaped). Its limits apply to this form.
pub fn header_value_literal(value: &str) -> String {
    value.replace('%', "%%")
}

/// Route `index`'s action problems, in the order the parts are written:
/// the action (redirect, split, rewrite, timeout, retries), then the
/// request's and the response's header changes.
pub(crate) fn action_problems(index: usize, http_route: &HttpRoute) -> Vec<Violation> {
    let at = At { route: index, part: "" };
    let mut problems = Vec::new();
    action(at, http_route, &mut problems);
    header_changes(
        at.within(".requestHeaders"),
        http_route.request_headers.as_ref(),
        &mut problems,
    );
    header_changes(
        at.within(".responseHeaders"),
        http_route.response_headers.as_ref(),
        &mut problems,
    );
    problems
}

/// Where in the spec a route's part is (`spec.routes[2].requestHeaders`):
/// written out only for a problem, so a route without any formats nothing
/// (the webhook asks this of every route it admits).
#[derive(Debug, Clone, Copy)]
struct At {
    route: usize,
    part: &'static str,
}

impl At {
    fn within(self, part: &'static str) -> At {
        At { part, ..self }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "spec.routes[{}]{}", self.route, self.part)
    }
}

fn problem(field_path: String, message: impl Into<Cow<'static, str>>) -> Violation {
    Violation {
        field_path,
        rule_id: RULE_ENVOY,
        message: message.into(),
    }
}

/// The route's action: a redirect (nothing else of the route applies), or
/// a route to one cluster or a weighted split. A split of weight 0 answers
/// 500 itself, so nothing else of its action applies either.
fn action(at: At, http_route: &HttpRoute, problems: &mut Vec<Violation>) {
    if let Some(redirect) = &http_route.redirect {
        return redirect_problems(at, redirect, problems);
    }
    if http_route.backend.is_none() {
        if http_route.backends.is_empty() {
            return;
        }
        // The same cluster twice is one entry of Envoy's split, its weights
        // added: the total is the same.
        let total: u64 = http_route
            .backends
            .iter()
            .map(|backend| u64::from(backend.weight))
            .sum();
        if total == 0 {
            return;
        }
        if total > u64::from(u32::MAX) {
            problems.push(problem(
                format!("{at}.backends"),
                format!(
                    "the weights add up to {total}; Envoy refuses a split above {}",
                    u32::MAX
                ),
            ));
            return;
        }
    }
    if let Some(rewrite) = &http_route.rewrite {
        rewrite_problems(at, rewrite, problems);
    }
    if !http_route.timeout.is_empty()
        && let Err(err) = parse_gateway_duration(&http_route.timeout)
    {
        problems.push(problem(format!("{at}.timeout"), err.to_string()));
    }
    if let Some(retries) = &http_route.retries {
        retry_problems(at.within(".retries"), retries, problems);
    }
}

/// Whether Envoy takes `value` where it takes a header value: no NUL, CR
/// or LF (`HTTP_HEADER_VALUE`, not strict), at most 16 KiB.
fn header_value_ok(value: &str) -> bool {
    value.len() <= MAX_HEADER_BYTES && !value.bytes().any(|b| matches!(b, 0 | b'\r' | b'\n'))
}

/// Why Envoy would refuse a route changing or removing the header `name`,
/// if it would: it never lets a route change `host` or a pseudo-header
/// (`:path`), on either side ("`:`-prefixed or host headers may not be
/// modified"), and takes only HTTP tokens as names.
fn header_name_refusal(name: &str) -> Option<&'static str> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || name.len() > MAX_HEADER_BYTES || !name.bytes().all(token) {
        if name.starts_with(':') {
            return Some("Envoy does not let a route change or remove a pseudo-header");
        }
        return Some("Envoy takes only HTTP tokens (at most 16384 bytes) as header names");
    }
    if name.eq_ignore_ascii_case("host") {
        return Some("Envoy does not let a route change or remove host (use rewrite.host to change it)");
    }
    None
}

/// The header changes of one side: the entries set, then added, then the
/// names removed.
fn header_changes(at: At, changes: Option<&HeaderModifier>, problems: &mut Vec<Violation>) {
    let Some(changes) = changes else {
        return;
    };
    for (list, entries) in [("set", &changes.set), ("add", &changes.add)] {
        for (i, header) in entries.iter().enumerate() {
            if let Some(why) = header_name_refusal(&header.name) {
                problems.push(problem(format!("{at}.{list}[{i}].name"), why));
            }
            if !header_value_ok(&header_value_literal(&header.value)) {
                problems.push(problem(
                    format!("{at}.{list}[{i}].value"),
                    "Envoy takes no NUL, CR or LF in a header value, and at most 16384 bytes",
                ));
            }
        }
    }
    for (i, name) in changes.remove.iter().enumerate() {
        if let Some(why) = header_name_refusal(name) {
            problems.push(problem(format!("{at}.remove[{i}]"), why));
        }
    }
}

/// A value Envoy takes in a header (a rewritten path or host, a redirect's
/// parts), at `field` of the route's `part`.
fn check_value(at: At, part: &str, field: &str, value: &str, problems: &mut Vec<Violation>) {
    if !header_value_ok(value) {
        problems.push(problem(
            format!("{at}.{part}.{field}"),
            "Envoy takes no NUL, CR or LF here, and at most 16384 bytes",
        ));
    }
}

/// `rewrite`: its path (`prefix` or `path`), then its `host`.
fn rewrite_problems(at: At, rewrite: &RouteRewrite, problems: &mut Vec<Violation>) {
    use aether_api::config::v1::route_rewrite::Replace as Path;
    match &rewrite.replace {
        Some(Path::Prefix(prefix)) => check_value(at, "rewrite", "prefix", prefix, problems),
        Some(Path::Path(path)) => check_value(at, "rewrite", "path", path, problems),
        None => {}
    }
    if !rewrite.host.is_empty() {
        check_value(at, "rewrite", "host", &rewrite.host, problems);
    }
}

/// `redirect`: the status Envoy redirects with, then its host, scheme and
/// path (`path` or `prefix`).
fn redirect_problems(at: At, redirect: &RouteRedirect, problems: &mut Vec<Violation>) {
    use aether_api::config::v1::route_redirect::Replace as Path;
    if !matches!(redirect.status_code, 0 | 301 | 302 | 303 | 307 | 308) {
        problems.push(problem(
            format!("{at}.redirect.statusCode"),
            format!(
                "Envoy redirects with 301, 302, 303, 307 or 308, not {}",
                redirect.status_code
            ),
        ));
    }
    check_value(at, "redirect", "host", &redirect.host, problems);
    check_value(at, "redirect", "scheme", &redirect.scheme, problems);
    match &redirect.replace {
        Some(Path::Path(path)) => check_value(at, "redirect", "path", path, problems),
        Some(Path::Prefix(prefix)) => check_value(at, "redirect", "prefix", prefix, problems),
        None => {}
    }
}

/// `retries`: its `perTryTimeout`, read only when it retries at all.
fn retry_problems(at: At, retries: &RouteRetry, problems: &mut Vec<Violation>) {
    if retries.attempts == 0 || retries.per_try_timeout.is_empty() {
        return;
    }
    if let Err(err) = parse_gateway_duration(&retries.per_try_timeout) {
        problems.push(problem(format!("{at}.perTryTimeout"), err.to_string()));
    }
}

#[cfg(test)]
mod tests {
    //! What the API's rules never let through today, but a looser rule or
    //! an object read tolerantly could: each is left out, never sent.
    use aether_api::config::v1::{HeaderModifier, HeaderValue as ApiHeader, HttpRoute, RouteRetry, WeightedBackend};

    use super::*;

    fn refusals(http_route: &HttpRoute) -> Vec<(String, &'static str)> {
        action_problems(3, http_route)
            .into_iter()
            .map(|p| (p.field_path, p.rule_id))
            .collect()
    }

    fn header(name: &str, value: &str) -> ApiHeader {
        ApiHeader {
            name: name.into(),
            value: value.into(),
        }
    }

    fn backend() -> Option<aether_api::config::v1::RouteBackend> {
        Some(aether_api::config::v1::RouteBackend {
            service: "svc".into(),
            port: 0,
        })
    }

    #[test]
    fn headers_envoy_refuses_leave_the_route_out() {
        let http_route = HttpRoute {
            backend: backend(),
            request_headers: Some(HeaderModifier {
                set: vec![header("Host", "a"), header(":path", "/"), header("x-ok", "a\r\nb")],
                add: vec![header("x ok", "a"), header("x-ok", &"%".repeat(8193))],
                remove: vec!["host".into(), "x-fine".into()],
            }),
            response_headers: Some(HeaderModifier {
                remove: vec![":status".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            refusals(&http_route),
            [
                ("spec.routes[3].requestHeaders.set[0].name".to_owned(), RULE_ENVOY),
                ("spec.routes[3].requestHeaders.set[1].name".to_owned(), RULE_ENVOY),
                ("spec.routes[3].requestHeaders.set[2].value".to_owned(), RULE_ENVOY),
                ("spec.routes[3].requestHeaders.add[0].name".to_owned(), RULE_ENVOY),
                ("spec.routes[3].requestHeaders.add[1].value".to_owned(), RULE_ENVOY),
                ("spec.routes[3].requestHeaders.remove[0]".to_owned(), RULE_ENVOY),
                ("spec.routes[3].responseHeaders.remove[0]".to_owned(), RULE_ENVOY),
            ]
        );
        // At Envoy's bounds: taken.
        let at_bounds = HttpRoute {
            backend: backend(),
            request_headers: Some(HeaderModifier {
                set: vec![header(&"x".repeat(MAX_HEADER_BYTES), &"%".repeat(MAX_HEADER_BYTES / 2))],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(refusals(&at_bounds), []);
    }

    #[test]
    fn a_split_above_envoys_sum_and_unreadable_durations_leave_the_route_out() {
        let split = |weights: &[u32]| HttpRoute {
            backends: weights
                .iter()
                .enumerate()
                .map(|(i, weight)| WeightedBackend {
                    service: format!("svc-{i}"),
                    port: 0,
                    weight: *weight,
                })
                .collect(),
            ..Default::default()
        };
        assert_eq!(
            refusals(&split(&[u32::MAX, 1])),
            [("spec.routes[3].backends".to_owned(), RULE_ENVOY)]
        );
        assert_eq!(refusals(&split(&[u32::MAX, 0])), []);
        let durations = HttpRoute {
            backend: backend(),
            timeout: "1.5s".into(),
            retries: Some(RouteRetry {
                attempts: 1,
                per_try_timeout: "1d".into(),
                retry_on: Vec::new(),
            }),
            ..Default::default()
        };
        assert_eq!(
            refusals(&durations),
            [
                ("spec.routes[3].timeout".to_owned(), RULE_ENVOY),
                ("spec.routes[3].retries.perTryTimeout".to_owned(), RULE_ENVOY),
            ]
        );
    }
}
