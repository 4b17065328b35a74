//! A route's actions near the edges of their rules, for the parity sample:
//! where requests go (`backend`, `backends` or `redirect`), `rewrite`, header
//! changes, `timeout` and `retries`. Mostly valid; each value's invalid
//! forms, and the combinations the route rules refuse, mixed in rarely, so
//! that the sample stays about half valid.

use aether_api::config::v1::{
    HeaderModifier, HeaderValue, HttpRoute, RouteMatch, RouteRedirect, RouteRetry, RouteRewrite, WeightedBackend,
    route_match::Path, route_redirect, route_rewrite,
};
use proptest::prelude::*;
use proptest::sample::select;

use super::boundary::{backend, dns_subdomain, header_name, name_of_length, path};

/// Mostly a plain valid value, sometimes one from `edges` (valid or not):
/// each route has many action values, so each must rarely be invalid for
/// the sample to stay about a quarter valid.
fn mostly<T: std::fmt::Debug>(
    plain: impl Strategy<Value = T> + 'static,
    edges: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<T> {
    prop_oneof![40 => plain, 1 => edges].boxed()
}

/// A path for rewrites and redirects.
fn action_path() -> BoxedStrategy<String> {
    mostly("(/[a-z0-9._~-]{1,6}){1,3}/?", path())
}

/// A duration in Gateway API's form, or one just outside it.
fn duration() -> BoxedStrategy<String> {
    let edges = prop_oneof![
        20 => Just(String::new()),
        30 => "([0-9]{1,5}(h|m|s|ms)){1,4}",
        6 => select(vec!["15s".to_owned(), "0s".into(), "1m30s".into(), "500ms".into(), "99999h99999m99999s99999ms".into()]),
        2 => select(vec![
            "1.5s".to_owned(),
            "15".into(),
            "-1s".into(),
            "1h1m1s1ms1h".into(),
            "100000s".into(),
            "10us".into(),
            "1m 30s".into(),
            "15S".into(),
            "99999h99999m99999s99999ms1h".into(),
        ]),
    ];
    mostly(prop_oneof![Just(String::new()), "[1-9][0-9]{0,2}(h|m|s|ms)"], edges)
}

/// A host for `redirect.host` and `rewrite.host`: a DNS name, never a wildcard.
fn precise_host() -> BoxedStrategy<String> {
    let edges = prop_oneof![
        20 => Just(String::new()),
        30 => "[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?(\\.[a-z0-9]{1,5}){0,2}",
        2 => Just(name_of_length(253)),
        2 => select(vec![
            name_of_length(254),
            "*.example.com".to_owned(),
            "example.com:443".into(),
            "API.example.com".into(),
            "a..b".into(),
        ]),
    ];
    mostly(prop_oneof![Just(String::new()), "[a-z]{1,8}\\.example\\.com"], edges)
}

fn weighted_backends() -> impl Strategy<Value = Vec<WeightedBackend>> {
    let port = mostly(prop_oneof![Just(0u32), 1u32..=65535], Just(65536u32));
    let weight = mostly(
        0u32..=100,
        prop_oneof![
            10 => 0u32..=100,
            2 => select(vec![0u32, 1, 1_000_000]),
            1 => Just(1_000_001u32),
        ],
    );
    let service = mostly("[a-z][a-z0-9]{0,7}", dns_subdomain());
    let one = (service, port, weight)
        .prop_map(|(service, port, weight)| WeightedBackend { service, port, weight })
        .boxed();
    prop_oneof![
        120 => proptest::collection::vec(one.clone(), 1..4),
        2 => proptest::collection::vec(one.clone(), 16..=16),
        1 => proptest::collection::vec(one.clone(), 17..=17),
        1 => Just(Vec::new()),
        // The same service and port twice.
        1 => one.prop_map(|b| vec![b.clone(), WeightedBackend { weight: 1, ..b }]),
    ]
}

fn redirect() -> impl Strategy<Value = RouteRedirect> {
    let scheme = mostly(
        select(vec![String::new(), "http".into(), "https".into()]),
        select(vec!["ftp".to_owned(), "HTTPS".into(), "https".into()]),
    );
    let port = mostly(prop_oneof![Just(0u32), 1u32..=65535], select(vec![65535u32, 65536]));
    let replace = prop_oneof![
        4 => Just(None),
        3 => action_path().prop_map(|p| Some(route_redirect::Replace::Path(p))),
        3 => action_path().prop_map(|p| Some(route_redirect::Replace::Prefix(p))),
    ];
    let status_code = mostly(
        select(vec![0u32, 301, 302, 303, 307, 308]),
        select(vec![300u32, 304, 200, 399, 308]),
    );
    (scheme, precise_host(), port, replace, status_code).prop_map(|(scheme, host, port, replace, status_code)| {
        RouteRedirect {
            scheme,
            host,
            port,
            replace,
            status_code,
        }
    })
}

fn rewrite() -> impl Strategy<Value = Option<RouteRewrite>> {
    let replace = prop_oneof![
        2 => Just(None),
        3 => action_path().prop_map(|p| Some(route_rewrite::Replace::Prefix(p))),
        3 => action_path().prop_map(|p| Some(route_rewrite::Replace::Path(p))),
    ];
    prop_oneof![
        6 => Just(None),
        4 => (replace, precise_host()).prop_map(|(replace, host)| Some(RouteRewrite { replace, host })),
    ]
}

fn header_value() -> BoxedStrategy<String> {
    mostly(
        "[!-~]([\t -~]{0,8}[!-~])?",
        prop_oneof![
            1 => Just("v".repeat(4096)),
            1 => select(vec![String::new(), "v".repeat(4097), " a".into(), "a ".into(), "a\r\nb".into(), "\u{e9}".into()]),
        ],
    )
}

/// A header name for changes: mostly the matches' names, sometimes one the
/// proxy owns.
fn changed_header_name() -> BoxedStrategy<String> {
    mostly(
        "x-[a-z0-9-]{1,10}",
        prop_oneof![
            3 => header_name(),
            1 => select(
                ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer", "content-length"]
                    .map(String::from)
                    .to_vec()
            ),
        ],
    )
}

fn header_values() -> impl Strategy<Value = Vec<HeaderValue>> {
    let one = (changed_header_name(), header_value())
        .prop_map(|(name, value)| HeaderValue { name, value })
        .boxed();
    prop_oneof![
        60 => Just(Vec::new()),
        100 => proptest::collection::vec(one.clone(), 1..4),
        1 => proptest::collection::vec(one.clone(), 17..=17),
        // One name twice.
        1 => one.prop_map(|h| vec![h.clone(), h]),
    ]
}

fn header_modifier() -> impl Strategy<Value = Option<HeaderModifier>> {
    let remove = prop_oneof![
        60 => Just(Vec::new()),
        60 => proptest::collection::vec(changed_header_name(), 1..4),
        1 => proptest::collection::vec("x-[a-z]{8}", 16..=16),
        1 => proptest::collection::vec("x-[a-z]{8}", 17..=17),
        1 => header_name().prop_map(|n| vec![n.clone(), n]),
    ];
    prop_oneof![
        7 => Just(None),
        3 => (header_values(), header_values(), remove).prop_map(|(set, add, remove)| Some(HeaderModifier { set, add, remove })),
    ]
}

fn retries() -> impl Strategy<Value = Option<RouteRetry>> {
    const ON: [&str; 7] = [
        "5xx",
        "gateway-error",
        "reset",
        "reset-before-request",
        "connect-failure",
        "refused-stream",
        "retriable-4xx",
    ];
    let all = || ON.map(String::from).to_vec();
    let retry_on = prop_oneof![
        40 => Just(Vec::new()),
        40 => proptest::sample::subsequence(all(), 1..=7).prop_shuffle(),
        1 => Just([all(), vec!["5xx".to_owned()]].concat()),
        1 => select(vec!["retriable-status-codes".to_owned(), "5xx,reset".into(), "5XX".into(), String::new()]).prop_map(|c| vec![c]),
    ];
    let attempts = mostly(0u32..=10, select(vec![10u32, 11]));
    prop_oneof![
        6 => Just(None),
        4 => (attempts, duration(), retry_on).prop_map(|(attempts, per_try_timeout, retry_on)| Some(RouteRetry { attempts, per_try_timeout, retry_on })),
    ]
}

/// A route: `r#match` with a destination and actions; mostly coherent (a
/// prefix rewrite or redirect on a prefix match, no request actions on a
/// redirect), sometimes not.
pub fn route(r#match: impl Strategy<Value = Option<RouteMatch>>) -> impl Strategy<Value = HttpRoute> {
    // Which of backend, backends and redirect are set: one, mostly.
    let destination = prop_oneof![
        100 => Just((true, false, false)),
        30 => Just((false, true, false)),
        16 => Just((false, false, true)),
        1 => select(vec![(true, true, false), (true, false, true), (false, true, true), (true, true, true)]),
    ];
    let actions = (rewrite(), header_modifier(), header_modifier(), duration(), retries());
    let coherent = prop_oneof![25 => Just(true), 1 => Just(false)];
    (
        r#match,
        destination,
        backend(),
        weighted_backends(),
        redirect(),
        actions,
        coherent,
    )
        .prop_map(
            |(r#match, (one, many, away), backend, backends, redirect, actions, coherent)| {
                let (mut rewrite, mut request_headers, response_headers, mut timeout, mut retries) = actions;
                let mut redirect = Some(redirect).filter(|_| away);
                if coherent {
                    let prefix_match = matches!(r#match.as_ref().and_then(|m| m.path.as_ref()), Some(Path::Prefix(_)));
                    if let Some(RouteRewrite {
                        replace: replace @ Some(route_rewrite::Replace::Prefix(_)),
                        ..
                    }) = rewrite.as_mut()
                        && !prefix_match
                    {
                        *replace = None;
                    }
                    if let Some(RouteRedirect {
                        replace: replace @ Some(route_redirect::Replace::Prefix(_)),
                        ..
                    }) = redirect.as_mut()
                        && !prefix_match
                    {
                        *replace = None;
                    }
                    if redirect.is_some() {
                        (rewrite, request_headers, retries) = (None, None, None);
                        timeout.clear();
                    }
                }
                HttpRoute {
                    r#match,
                    backend: backend.filter(|_| one),
                    backends: if many { backends } else { Vec::new() },
                    redirect,
                    rewrite,
                    request_headers,
                    response_headers,
                    timeout,
                    retries,
                }
            },
        )
}

/// Whether a route uses any action beyond v1's `backend`.
pub fn uses_actions(route: &HttpRoute) -> bool {
    !route.backends.is_empty()
        || route.redirect.is_some()
        || route.rewrite.is_some()
        || route.request_headers.is_some()
        || route.response_headers.is_some()
        || !route.timeout.is_empty()
        || route.retries.is_some()
}
