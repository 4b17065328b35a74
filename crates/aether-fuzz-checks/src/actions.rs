//! The rules of an accepted route's actions, counted by hand: what the
//! validator accepted must hold them.

use aether_api::config::v1::{HeaderModifier, HttpRoute, VirtualHostSpec, route_match, route_redirect, route_rewrite};

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
            !backend.service.is_empty() && backend.port <= 65535,
            "backend, {spec:?}"
        );
    }
    assert!(route.backends.len() <= 16, "backends: at most 16, {spec:?}");
    for (i, backend) in route.backends.iter().enumerate() {
        assert!(
            !backend.service.is_empty() && backend.port <= 65535 && backend.weight <= 1_000_000,
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
        assert!(
            ["", "http", "https"].contains(&redirect.scheme.as_str()),
            "scheme, {spec:?}"
        );
        assert!(is_host(&redirect.host), "redirect host, {spec:?}");
        assert!(redirect.port <= 65535, "redirect port, {spec:?}");
        assert!(
            [0, 301, 302, 303, 307, 308].contains(&redirect.status_code),
            "status, {spec:?}"
        );
        match &redirect.replace {
            Some(route_redirect::Replace::Prefix(path)) => {
                assert!(prefix_match && is_path(path), "redirect prefix, {spec:?}")
            }
            Some(route_redirect::Replace::Path(path)) => assert!(is_path(path), "redirect path, {spec:?}"),
            None => {}
        }
    }
    if let Some(rewrite) = &route.rewrite {
        assert!(is_host(&rewrite.host), "rewrite host, {spec:?}");
        match &rewrite.replace {
            Some(route_rewrite::Replace::Prefix(path)) => {
                assert!(prefix_match && is_path(path), "rewrite prefix, {spec:?}")
            }
            Some(route_rewrite::Replace::Path(path)) => assert!(is_path(path), "rewrite path, {spec:?}"),
            None => {}
        }
    }
    for changes in [&route.request_headers, &route.response_headers].into_iter().flatten() {
        headers_are_consistent(changes, spec);
    }
    assert!(is_duration(&route.timeout), "timeout, {spec:?}");
    if let Some(retries) = &route.retries {
        assert!(retries.attempts <= 10, "attempts, {spec:?}");
        assert!(is_duration(&retries.per_try_timeout), "per-try timeout, {spec:?}");
        assert!(retries.retry_on.len() <= 7, "conditions: at most 7, {spec:?}");
        for (i, on) in retries.retry_on.iter().enumerate() {
            assert!(
                [
                    "5xx",
                    "gateway-error",
                    "reset",
                    "reset-before-request",
                    "connect-failure",
                    "refused-stream",
                    "retriable-4xx"
                ]
                .contains(&on.as_str()),
                "a listed condition, {spec:?}"
            );
            assert!(!retries.retry_on[i + 1..].contains(on), "unique conditions, {spec:?}");
        }
    }
}

/// Header changes: at most 16 of each, unique names, names lower-case
/// tokens the proxy does not own, values visible ASCII without line breaks.
fn headers_are_consistent(changes: &HeaderModifier, spec: &VirtualHostSpec) {
    const OWNED: [&str; 9] = [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "te",
        "trailer",
        "content-length",
    ];
    let name_ok = |name: &str| {
        (1..=256).contains(&name.len())
            && !name
                .bytes()
                .any(|b| b.is_ascii_uppercase() || b == b':' || !b.is_ascii_graphic())
            && !OWNED.contains(&name)
    };
    for list in [&changes.set, &changes.add] {
        assert!(list.len() <= 16, "at most 16 headers, {spec:?}");
        for (i, header) in list.iter().enumerate() {
            assert!(name_ok(&header.name), "header name, {spec:?}");
            assert!(
                !list[i + 1..].iter().any(|h| h.name == header.name),
                "unique names, {spec:?}"
            );
            let value = &header.value;
            assert!(
                (1..=4096).contains(&value.len())
                    && value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
                    && !value.starts_with([' ', '\t'])
                    && !value.ends_with([' ', '\t']),
                "header value, {spec:?}"
            );
        }
    }
    assert!(changes.remove.len() <= 16, "at most 16 removed, {spec:?}");
    for (i, name) in changes.remove.iter().enumerate() {
        assert!(name_ok(name), "removed name, {spec:?}");
        assert!(
            !changes.remove[i + 1..].contains(name),
            "unique removed names, {spec:?}"
        );
    }
}

/// Empty, or a DNS name of at most 253 characters without wildcard or port.
fn is_host(host: &str) -> bool {
    host.len() <= 253 && !host.contains(['*', ':', '/']) && host.bytes().all(|b| !b.is_ascii_uppercase())
}

/// An absolute path of at most 1024 characters without empty or dot
/// segments and encoded slashes.
fn is_path(path: &str) -> bool {
    path.starts_with('/')
        && path.len() <= 1024
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
