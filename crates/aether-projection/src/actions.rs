//! A route's action as Envoy's: where it sends (one backend, a weighted
//! split, or a redirect), how it rewrites the path and Host, which headers
//! it changes on either side, its timeout and its retry policy.
//!
//! Envoy refuses a whole route configuration, every host in it, for one
//! route it cannot take. A valid route Envoy would still refuse is left
//! out here (its problems name the field and why, rule [`RULE_ENVOY`]),
//! like a regular expression RE2 would refuse.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use aether_api::config::v1::HttpRoute;
use envoy_types::pb::envoy::config::core::v3::header_value_option::HeaderAppendAction;
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::envoy::r#type::matcher::v3::{RegexMatchAndSubstitute, RegexMatcher};
use envoy_types::pb::google::protobuf::{Duration as ProtoDuration, UInt32Value};

use crate::cluster_name;
use crate::duration::parse_gateway_duration;
use aether_api::validate::Violation;

/// The rule id of a valid route Envoy would refuse (a header it does not
/// let routes change, a split whose weights add up past its limit), or of
/// a value the edge cannot read (a duration).
pub const RULE_ENVOY: &str = "envoy";

/// Envoy's limit on a header name or value in a route (`HeaderValue`'s
/// `max_bytes`).
const MAX_HEADER_BYTES: usize = 16384;

/// The status of a weighted split whose weights are all 0: Gateway API's
/// HTTPRoute answers such a request with 500, and Envoy refuses a split
/// whose weights add up to 0, so the route answers it itself.
pub const NO_WEIGHT_STATUS: u32 = 500;

/// A Duration as protobuf's.
pub(crate) fn proto_duration(duration: Duration) -> ProtoDuration {
    ProtoDuration {
        // Saturates rather than wraps for absurd durations.
        seconds: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(duration.subsec_nanos()).unwrap_or(0),
    }
}

/// What a route adds to its Envoy `Route` besides the match: its action
/// and its header changes.
pub(crate) struct Actions {
    pub action: route::route::Action,
    pub request_headers_to_add: Vec<HeaderValueOption>,
    pub request_headers_to_remove: Vec<String>,
    pub response_headers_to_add: Vec<HeaderValueOption>,
    pub response_headers_to_remove: Vec<String>,
}

/// Route `index`'s actions, or why Envoy would refuse them. `default_retry`
/// is the projection's policy, for routes without `retries`.
pub(crate) fn actions(
    index: usize,
    http_route: &HttpRoute,
    default_retry: Option<&route::RetryPolicy>,
) -> Result<Actions, Vec<Violation>> {
    let at = At { route: index, part: "" };
    let mut problems = Vec::new();
    let action = action(at, http_route, default_retry, &mut problems);
    let request = header_changes(
        at.within(".requestHeaders"),
        http_route.request_headers.as_ref(),
        &mut problems,
    );
    let response = header_changes(
        at.within(".responseHeaders"),
        http_route.response_headers.as_ref(),
        &mut problems,
    );
    match action {
        Some(action) if problems.is_empty() => Ok(Actions {
            action,
            request_headers_to_add: request.0,
            request_headers_to_remove: request.1,
            response_headers_to_add: response.0,
            response_headers_to_remove: response.1,
        }),
        _ => Err(problems),
    }
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

/// The route's Envoy action: a redirect, or a route to one cluster or a
/// weighted split (or a 500 for a split of weight 0). `None` only with
/// problems added, or for a route without any (which validation refuses).
fn action(
    at: At,
    http_route: &HttpRoute,
    default_retry: Option<&route::RetryPolicy>,
    problems: &mut Vec<Violation>,
) -> Option<route::route::Action> {
    if let Some(redirect) = &http_route.redirect {
        return Some(route::route::Action::Redirect(redirect_action(at, redirect, problems)));
    }
    let cluster_specifier = if let Some(backend) = &http_route.backend {
        route::route_action::ClusterSpecifier::Cluster(cluster_name(&backend.service, backend.port))
    } else if !http_route.backends.is_empty() {
        // The same cluster twice is one entry, its weights added; weight 0
        // takes no traffic, so it is not an entry at all.
        let mut weights: BTreeMap<String, u64> = BTreeMap::new();
        for backend in &http_route.backends {
            *weights.entry(cluster_name(&backend.service, backend.port)).or_default() += u64::from(backend.weight);
        }
        weights.retain(|_, weight| *weight > 0);
        let total: u64 = weights.values().sum();
        if total == 0 {
            return Some(route::route::Action::DirectResponse(route::DirectResponseAction {
                status: NO_WEIGHT_STATUS,
                ..Default::default()
            }));
        }
        if total > u64::from(u32::MAX) {
            problems.push(problem(
                format!("{at}.backends"),
                format!(
                    "the weights add up to {total}; Envoy refuses a split above {}",
                    u32::MAX
                ),
            ));
            return None;
        }
        // In listed order, as written.
        let mut clusters = Vec::with_capacity(weights.len());
        for backend in &http_route.backends {
            let name = cluster_name(&backend.service, backend.port);
            if let Some(weight) = weights.remove(&name) {
                clusters.push(route::weighted_cluster::ClusterWeight {
                    name,
                    // At most the total, checked above.
                    weight: Some(UInt32Value {
                        value: u32::try_from(weight).unwrap_or(u32::MAX),
                    }),
                    ..Default::default()
                });
            }
        }
        route::route_action::ClusterSpecifier::WeightedClusters(route::WeightedCluster {
            clusters,
            ..Default::default()
        })
    } else {
        return None;
    };
    let mut action = route::RouteAction {
        cluster_specifier: Some(cluster_specifier),
        retry_policy: default_retry.cloned(),
        ..Default::default()
    };
    if let Some(rewrite) = &http_route.rewrite {
        apply_rewrite(at, rewrite, &mut action, problems);
    }
    if !http_route.timeout.is_empty() {
        match parse_gateway_duration(&http_route.timeout) {
            Ok(timeout) => action.timeout = Some(proto_duration(timeout)),
            Err(err) => problems.push(problem(format!("{at}.timeout"), err.to_string())),
        }
    }
    if let Some(retries) = &http_route.retries {
        action.retry_policy = retry_override(at.within(".retries"), retries, default_retry, problems);
    }
    Some(route::route::Action::Route(action))
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

/// A header value as Envoy reads a route's header values: as a
/// substitution format (`%REQ(x)%`), in which a literal `%` is `%%`. The
/// API's values are literal, so every `%` is doubled (Envoy refuses a
/// route holding `50%off` unescaped).
fn format_literal(value: &str) -> String {
    value.replace('%', "%%")
}

/// A substitution of RE2's rewrite, in which `\` starts a capture
/// reference: literal, so `\` is doubled (a path holds none; kept safe).
fn rewrite_literal(value: &str) -> String {
    value.replace('\\', "\\\\")
}

/// The header changes of one side: the entries to add (`set` overwrites,
/// `add` appends) and the names to remove.
fn header_changes(
    at: At,
    changes: Option<&aether_api::config::v1::HeaderModifier>,
    problems: &mut Vec<Violation>,
) -> (Vec<HeaderValueOption>, Vec<String>) {
    let Some(changes) = changes else {
        return (Vec::new(), Vec::new());
    };
    let mut add = Vec::with_capacity(changes.set.len() + changes.add.len());
    for (list, entries, append_action) in [
        ("set", &changes.set, HeaderAppendAction::OverwriteIfExistsOrAdd),
        ("add", &changes.add, HeaderAppendAction::AppendIfExistsOrAdd),
    ] {
        for (i, header) in entries.iter().enumerate() {
            if let Some(why) = header_name_refusal(&header.name) {
                problems.push(problem(format!("{at}.{list}[{i}].name"), why));
            }
            let value = format_literal(&header.value);
            if !header_value_ok(&value) {
                problems.push(problem(
                    format!("{at}.{list}[{i}].value"),
                    "Envoy takes no NUL, CR or LF in a header value, and at most 16384 bytes",
                ));
            }
            add.push(HeaderValueOption {
                header: Some(HeaderValue {
                    key: header.name.clone(),
                    value,
                    ..Default::default()
                }),
                append_action: append_action as i32,
                ..Default::default()
            });
        }
    }
    for (i, name) in changes.remove.iter().enumerate() {
        if let Some(why) = header_name_refusal(name) {
            problems.push(problem(format!("{at}.remove[{i}]"), why));
        }
    }
    (add, changes.remove.clone())
}

/// `rewrite` on Envoy's route action: `prefix` is Envoy's `prefix_rewrite`
/// (the matched prefix swapped for it), `path` a `regex_rewrite` of the
/// whole path (`^/.*$`; the query is kept), `host` `host_rewrite_literal`.
fn apply_rewrite(
    at: At,
    rewrite: &aether_api::config::v1::RouteRewrite,
    action: &mut route::RouteAction,
    problems: &mut Vec<Violation>,
) {
    use aether_api::config::v1::route_rewrite::Replace as Path;
    let mut check = |field: &str, value: &str| {
        if !header_value_ok(value) {
            problems.push(problem(
                format!("{at}.rewrite.{field}"),
                "Envoy takes no NUL, CR or LF here, and at most 16384 bytes",
            ));
        }
    };
    match &rewrite.replace {
        Some(Path::Prefix(prefix)) => {
            check("prefix", prefix);
            action.prefix_rewrite = prefix.clone();
        }
        Some(Path::Path(path)) => {
            check("path", path);
            action.regex_rewrite = Some(RegexMatchAndSubstitute {
                pattern: Some(RegexMatcher {
                    regex: WHOLE_PATH.to_owned(),
                    engine_type: None,
                }),
                substitution: rewrite_literal(path),
            });
        }
        None => {}
    }
    if !rewrite.host.is_empty() {
        check("host", &rewrite.host);
        action.host_rewrite_specifier = Some(route::route_action::HostRewriteSpecifier::HostRewriteLiteral(
            rewrite.host.clone(),
        ));
    }
}

/// The regular expression of a whole-path rewrite: every request path
/// (Envoy rewrites the path without its query).
pub const WHOLE_PATH: &str = "^/.*$";

/// `redirect` as Envoy's `RedirectAction`, as Gateway API's
/// `RequestRedirect`: the status defaults to 302; a scheme without a port
/// redirects to that scheme's port (80, 443), not the request's: with a
/// `host`, Envoy writes no port; without, it writes the scheme's.
fn redirect_action(
    at: At,
    redirect: &aether_api::config::v1::RouteRedirect,
    problems: &mut Vec<Violation>,
) -> route::RedirectAction {
    use aether_api::config::v1::route_redirect::Replace as Path;
    use route::redirect_action::{PathRewriteSpecifier, RedirectResponseCode, SchemeRewriteSpecifier};
    let response_code = match redirect.status_code {
        0 | 302 => RedirectResponseCode::Found,
        301 => RedirectResponseCode::MovedPermanently,
        303 => RedirectResponseCode::SeeOther,
        307 => RedirectResponseCode::TemporaryRedirect,
        308 => RedirectResponseCode::PermanentRedirect,
        other => {
            problems.push(problem(
                format!("{at}.redirect.statusCode"),
                format!("Envoy redirects with 301, 302, 303, 307 or 308, not {other}"),
            ));
            RedirectResponseCode::Found
        }
    };
    let scheme = redirect.scheme.to_ascii_lowercase();
    // Envoy keeps the request's port unless told one, or unless `host`
    // replaces the whole authority; a scheme without a port goes to that
    // scheme's port, so Envoy is told it (and writes it: `https://h:443/`).
    let port_redirect = match (redirect.port, scheme.as_str(), redirect.host.is_empty()) {
        (0, "https", true) => 443,
        (0, "http", true) => 80,
        (port, _, _) => port,
    };
    let mut check = |field: &str, value: &str| {
        if !header_value_ok(value) {
            problems.push(problem(
                format!("{at}.redirect.{field}"),
                "Envoy takes no NUL, CR or LF here, and at most 16384 bytes",
            ));
        }
    };
    check("host", &redirect.host);
    check("scheme", &redirect.scheme);
    let path_rewrite_specifier = match &redirect.replace {
        Some(Path::Path(path)) => {
            check("path", path);
            Some(PathRewriteSpecifier::PathRedirect(path.clone()))
        }
        Some(Path::Prefix(prefix)) => {
            check("prefix", prefix);
            Some(PathRewriteSpecifier::PrefixRewrite(prefix.clone()))
        }
        None => None,
    };
    route::RedirectAction {
        host_redirect: redirect.host.clone(),
        port_redirect,
        response_code: response_code as i32,
        strip_query: false,
        scheme_rewrite_specifier: (!scheme.is_empty()).then_some(SchemeRewriteSpecifier::SchemeRedirect(scheme)),
        path_rewrite_specifier,
    }
}

/// `retries`, replacing the projection's policy for the route: `attempts`
/// retries (0: none, no policy at all) on the conditions of `on` (the
/// default policy's when empty), each try bounded by `perTryTimeout`.
fn retry_override(
    at: At,
    retries: &aether_api::config::v1::RouteRetry,
    default_retry: Option<&route::RetryPolicy>,
    problems: &mut Vec<Violation>,
) -> Option<route::RetryPolicy> {
    if retries.attempts == 0 {
        return None;
    }
    let retry_on = if retries.retry_on.is_empty() {
        default_retry.map_or_else(
            || crate::RetryConfig::default().retry_on,
            |policy| policy.retry_on.clone(),
        )
    } else {
        retries.retry_on.join(",")
    };
    let per_try_timeout = if retries.per_try_timeout.is_empty() {
        None
    } else {
        match parse_gateway_duration(&retries.per_try_timeout) {
            // `0s`: no bound of its own, as absent.
            Ok(Duration::ZERO) => None,
            Ok(timeout) => Some(proto_duration(timeout)),
            Err(err) => {
                problems.push(problem(format!("{at}.perTryTimeout"), err.to_string()));
                None
            }
        }
    };
    Some(route::RetryPolicy {
        retry_on,
        num_retries: Some(UInt32Value {
            value: retries.attempts,
        }),
        per_try_timeout,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    //! What the API's rules never let through today, but a looser rule or
    //! an object read tolerantly could: each is left out, never sent.
    use aether_api::config::v1::{HeaderModifier, HeaderValue as ApiHeader, HttpRoute, RouteRetry, WeightedBackend};

    use super::*;

    fn refusals(http_route: &HttpRoute) -> Vec<(String, &'static str)> {
        match actions(3, http_route, None) {
            Ok(_) => Vec::new(),
            Err(problems) => problems.into_iter().map(|p| (p.field_path, p.rule_id)).collect(),
        }
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
    fn edge_problems_name_refused_regexes_and_actions_as_the_projection_leaves_them_out() {
        use aether_api::config::v1::{RouteMatch, VirtualHostSpec, route_match::Path};
        let route = |path: Path, header_name: &str| HttpRoute {
            r#match: Some(RouteMatch {
                path: Some(path),
                ..Default::default()
            }),
            backend: backend(),
            request_headers: Some(HeaderModifier {
                set: vec![header(header_name, "a")],
                ..Default::default()
            }),
            ..Default::default()
        };
        let spec = VirtualHostSpec {
            hosts: vec!["a.test".into()],
            routes: vec![
                route(Path::Prefix("/a".into()), "x-fine"),
                route(Path::Prefix("/b".into()), "host"),
                // A refused regex is the reason given, whatever else.
                route(Path::Regex("[a-z]{200}".into()), "host"),
            ],
            ..Default::default()
        };
        let problems: Vec<(String, &str)> = crate::edge_problems(&spec)
            .into_iter()
            .map(|p| (p.field_path, p.rule_id))
            .collect();
        assert_eq!(
            problems,
            [
                ("spec.routes[1].requestHeaders.set[0].name".to_owned(), RULE_ENVOY),
                ("spec.routes[2].match.regex".to_owned(), crate::RULE_RE2),
            ]
        );
        let (_, left_out) = crate::envoy::encoded_routes(&spec, None);
        let left_out: Vec<(String, &str)> = left_out.into_iter().map(|p| (p.field_path, p.rule_id)).collect();
        assert_eq!(left_out, problems);
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
