//! The rules of an accepted route's actions, counted by hand: what the
//! validator accepted must hold them.

use aether_api::config::v1::{
    HeaderModifier, HeaderValue, HttpRoute, RouteBackend, RouteRedirect, RouteRetry, RouteRewrite, VirtualHostSpec,
    WeightedBackend, route_match, route_redirect, route_rewrite,
};
use std::ops::RangeInclusive;

use aether_rules::Scalar;
use prost_reflect::ReflectMessage;

use crate::bounds;

/// Whether `route` has only v1's actions: a `backend`, nothing else.
pub(crate) fn backend_only(route: &HttpRoute) -> bool {
    route.backend.is_some()
        && route.backends.is_empty()
        && route.redirect.is_none()
        && route.rewrite.is_none()
        && route.request_headers.is_none()
        && route.response_headers.is_none()
        && route.timeout.is_empty()
        && route.retries.is_none()
}

/// An accepted route's destination and actions keep the proto's rules.
pub(crate) fn are_consistent(route: &HttpRoute, spec: &VirtualHostSpec) {
    let destinations = usize::from(route.backend.is_some())
        + usize::from(!route.backends.is_empty())
        + usize::from(route.redirect.is_some());
    assert_eq!(destinations, 1, "exactly one destination, {spec:?}");
    if let Some(backend) = &route.backend {
        assert!(
            !backend.service.is_empty() && u64::from(backend.port) <= bounds::lte::<RouteBackend>("port"),
            "backend, {spec:?}"
        );
    }
    let most = bounds::max_items::<HttpRoute>("backends");
    assert!(route.backends.len() <= most, "backends: at most {most}, {spec:?}");
    for (i, backend) in route.backends.iter().enumerate() {
        assert!(
            !backend.service.is_empty()
                && u64::from(backend.port) <= bounds::lte::<WeightedBackend>("port")
                && u64::from(backend.weight) <= bounds::lte::<WeightedBackend>("weight"),
            "weighted backend, {spec:?}"
        );
        assert!(
            !route.backends[i + 1..]
                .iter()
                .any(|b| b.service == backend.service && b.port == backend.port),
            "unique service and port, {spec:?}"
        );
    }
    let prefix_match = matches!(
        route.r#match.as_ref().and_then(|m| m.path.as_ref()),
        Some(route_match::Path::Prefix(_))
    );
    if let Some(redirect) = &route.redirect {
        assert!(
            route.rewrite.is_none()
                && route.request_headers.is_none()
                && route.timeout.is_empty()
                && route.retries.is_none(),
            "a redirect route sends nothing on, {spec:?}"
        );
        // Empty is allowed: the scheme and status ignore their zero value.
        assert!(
            redirect.scheme.is_empty()
                || bounds::holds_text(bounds::one_of::<RouteRedirect>("scheme"), &redirect.scheme),
            "scheme, {spec:?}"
        );
        assert!(is_host::<RouteRedirect>(&redirect.host), "redirect host, {spec:?}");
        assert!(
            u64::from(redirect.port) <= bounds::lte::<RouteRedirect>("port"),
            "redirect port, {spec:?}"
        );
        assert!(
            redirect.status_code == 0
                || bounds::holds_uint(
                    bounds::one_of::<RouteRedirect>("status_code"),
                    redirect.status_code.into()
                ),
            "status, {spec:?}"
        );
        match &redirect.replace {
            Some(route_redirect::Replace::Prefix(path)) => {
                assert!(
                    prefix_match && is_path::<RouteRedirect>(path, "prefix"),
                    "redirect prefix, {spec:?}"
                )
            }
            Some(route_redirect::Replace::Path(path)) => {
                assert!(is_path::<RouteRedirect>(path, "path"), "redirect path, {spec:?}")
            }
            None => {}
        }
    }
    if let Some(rewrite) = &route.rewrite {
        assert!(is_host::<RouteRewrite>(&rewrite.host), "rewrite host, {spec:?}");
        match &rewrite.replace {
            Some(route_rewrite::Replace::Prefix(path)) => {
                assert!(
                    prefix_match && is_path::<RouteRewrite>(path, "prefix"),
                    "rewrite prefix, {spec:?}"
                )
            }
            Some(route_rewrite::Replace::Path(path)) => {
                assert!(is_path::<RouteRewrite>(path, "path"), "rewrite path, {spec:?}")
            }
            None => {}
        }
    }
    for changes in [&route.request_headers, &route.response_headers].into_iter().flatten() {
        headers_are_consistent(changes, spec);
    }
    assert!(is_duration(&route.timeout), "timeout, {spec:?}");
    if let Some(retries) = &route.retries {
        assert!(
            u64::from(retries.attempts) <= bounds::lte::<RouteRetry>("attempts"),
            "attempts, {spec:?}"
        );
        assert!(is_duration(&retries.per_try_timeout), "per-try timeout, {spec:?}");
        let most = bounds::max_items::<RouteRetry>("retry_on");
        assert!(retries.retry_on.len() <= most, "conditions: at most {most}, {spec:?}");
        let listed = bounds::item_one_of::<RouteRetry>("retry_on");
        for (i, on) in retries.retry_on.iter().enumerate() {
            assert!(bounds::holds_text(listed, on), "a listed condition, {spec:?}");
            assert!(!retries.retry_on[i + 1..].contains(on), "unique conditions, {spec:?}");
        }
    }
}

/// Header changes: within the counts, unique names, names lower-case tokens
/// the proxy does not own, values visible ASCII without line breaks.
fn headers_are_consistent(changes: &HeaderModifier, spec: &VirtualHostSpec) {
    // A set or added name and a removed one follow the same rules, each
    // read where the proto writes it.
    let name_ok = |name: &str, len: &RangeInclusive<usize>, owned: &[Scalar]| {
        len.contains(&name.len())
            && !name
                .bytes()
                .any(|b| b.is_ascii_uppercase() || b == b':' || !b.is_ascii_graphic())
            && !bounds::holds_text(owned, name)
    };
    let name_len = bounds::min_len::<HeaderValue>("name")..=bounds::max_len::<HeaderValue>("name");
    let owned = bounds::not_in::<HeaderValue>("name");
    let value_len = bounds::min_len::<HeaderValue>("value")..=bounds::max_len::<HeaderValue>("value");
    for (list, field) in [(&changes.set, "set"), (&changes.add, "add")] {
        let most = bounds::max_items::<HeaderModifier>(field);
        assert!(list.len() <= most, "{field}: at most {most} headers, {spec:?}");
        for (i, header) in list.iter().enumerate() {
            assert!(name_ok(&header.name, &name_len, owned), "header name, {spec:?}");
            assert!(
                !list[i + 1..].iter().any(|h| h.name == header.name),
                "unique names, {spec:?}"
            );
            let value = &header.value;
            assert!(
                value_len.contains(&value.len())
                    && value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
                    && !value.starts_with([' ', '\t'])
                    && !value.ends_with([' ', '\t']),
                "header value, {spec:?}"
            );
        }
    }
    let most = bounds::max_items::<HeaderModifier>("remove");
    assert!(changes.remove.len() <= most, "at most {most} removed, {spec:?}");
    // Non-empty: a removed name has no length floor, but its pattern asks
    // for a character.
    let name_len = 1..=bounds::item_max_len::<HeaderModifier>("remove");
    let owned = bounds::item_not_in::<HeaderModifier>("remove");
    for (i, name) in changes.remove.iter().enumerate() {
        assert!(name_ok(name, &name_len, owned), "removed name, {spec:?}");
        assert!(
            !changes.remove[i + 1..].contains(name),
            "unique removed names, {spec:?}"
        );
    }
}

/// Empty, or a DNS name within the length of `M.host`, without wildcard or
/// port.
fn is_host<M: ReflectMessage + Default>(host: &str) -> bool {
    host.len() <= bounds::max_len::<M>("host")
        && !host.contains(['*', ':', '/'])
        && host.bytes().all(|b| !b.is_ascii_uppercase())
}

/// An absolute path within the lengths of `M.field`, without empty or dot
/// segments and encoded slashes.
pub(crate) fn is_path<M: ReflectMessage + Default>(path: &str, field: &str) -> bool {
    path.starts_with('/')
        && (bounds::min_len::<M>(field)..=bounds::max_len::<M>(field)).contains(&path.len())
        && !path.contains("//")
        && !path.contains("/../")
        && !path.contains("/./")
        && !path.to_ascii_lowercase().contains("%2f")
}

/// Empty, or Gateway API's duration form: 1 to 4 parts of 1 to 5 digits and
/// a unit, `h`, `m`, `s` or `ms`.
fn is_duration(text: &str) -> bool {
    if text.is_empty() {
        return true;
    }
    let mut parts = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=5).contains(&digits) {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ms", "h", "m", "s"].into_iter().find(|unit| rest.starts_with(unit));
        let Some(unit) = unit else {
            return false;
        };
        rest = &rest[unit.len()..];
        parts += 1;
    }
    parts <= 4
}

#[cfg(test)]
mod tests {
    use super::is_duration;

    #[test]
    fn durations_are_read_as_gateway_api_writes_them() {
        for ok in [
            "",
            "15s",
            "0s",
            "1m30s",
            "500ms",
            "1h1m1s1ms",
            "99999h99999m99999s99999ms",
        ] {
            assert!(is_duration(ok), "{ok}");
        }
        for bad in ["1.5s", "15", "-1s", "1h1m1s1ms1h", "100000s", "10us", "1m 30s", "s"] {
            assert!(!is_duration(bad), "{bad}");
        }
    }
}
