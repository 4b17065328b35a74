//! Specs biased toward the edges of every rule: mostly valid parts, with
//! values on both sides of each boundary and each kind of forbidden input
//! mixed in, so that a sample holds many valid and many invalid specs.

use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, VirtualHostSpec, VirtualHostTls, route_match::Path};
use proptest::prelude::*;
use proptest::sample::select;

/// A DNS label of `len` characters (`a`s with a digit at the end).
fn label(len: usize) -> String {
    let mut s = "a".repeat(len.saturating_sub(1));
    s.push('7');
    s
}

/// A dotted name of exactly `total` characters from labels of at most 63.
pub fn name_of_length(total: usize) -> String {
    let mut parts = Vec::new();
    let mut left = total;
    while left > 0 {
        let take = left.min(63);
        // Leave room for the dot and a non-empty next label.
        let take = if left > take && left - take == 1 {
            take - 1
        } else {
            take
        };
        parts.push(label(take));
        left -= take;
        left = left.saturating_sub(1); // the dot, if another label follows
    }
    parts.join(".")
}

fn valid_host() -> impl Strategy<Value = String> {
    let label_len = prop_oneof![4 => 1usize..12, 1 => Just(62usize), 1 => Just(63usize)];
    (proptest::collection::vec(label_len, 1..4), any::<bool>()).prop_map(|(lens, wildcard)| {
        let name = lens.into_iter().map(label).collect::<Vec<_>>().join(".");
        if wildcard { format!("*.{name}") } else { name }
    })
}

fn invalid_host() -> impl Strategy<Value = String> {
    select(vec![
        "*".to_owned(),
        "a.*.example.com".into(),
        "a*.example.com".into(),
        "example.com:443".into(),
        "example.com.".into(),
        "API.example.com".into(),
        "-a.example.com".into(),
        "a-.example.com".into(),
        "a..example.com".into(),
        String::new(),
        "[::1]".into(),
        "ex\u{e4}mple.com".into(),
        "*.*.example.com".into(),
        "a b.com".into(),
        format!("{}.com", label(64)),
        name_of_length(254),
        format!("*.{}", name_of_length(252)),
    ])
}

fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => valid_host(),
        2 => select(vec![name_of_length(253), format!("*.{}", name_of_length(251)), "1.2.3.4".to_owned()]),
        3 => invalid_host(),
    ]
}

fn hosts() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        30 => proptest::collection::vec(host(), 1..4),
        2 => proptest::collection::vec(valid_host(), 16..=16),
        2 => proptest::collection::vec(valid_host(), 17..=17),
        1 => Just(Vec::new()),
        // A duplicate.
        2 => valid_host().prop_map(|h| vec![h.clone(), h]),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._~!$&'()*+,;=:@-]{1,8}|%[0-9A-Fa-f]{2}"
}

fn valid_path() -> impl Strategy<Value = String> {
    (proptest::collection::vec(segment(), 0..4), any::<bool>()).prop_map(|(segments, trailing)| {
        let mut path = format!("/{}", segments.join("/"));
        if trailing && !path.ends_with('/') {
            path.push('/');
        }
        path
    })
}

fn invalid_path() -> impl Strategy<Value = String> {
    select(vec![
        String::new(),
        "users".into(),
        "/a//b".into(),
        "//".into(),
        "/a/./b".into(),
        "/a/../b".into(),
        "/a/.".into(),
        "/a/..".into(),
        "/.".into(),
        "/a%2fb".into(),
        "/a%2Fb".into(),
        "/a%zz".into(),
        "/a%2".into(),
        "/a?b=1".into(),
        "/a#top".into(),
        "/a b".into(),
        "/a\tb".into(),
        "/caf\u{e9}".into(),
        format!("/{}", "a".repeat(1024)),
    ])
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => valid_path(),
        2 => Just(format!("/{}", "a".repeat(1023))),
        2 => select(vec!["/".to_owned(), "/a/.b".into(), "/a/..b".into(), "/.well-known".into(), "/%2e".into()]),
        4 => invalid_path(),
    ]
}

fn route_match() -> impl Strategy<Value = Option<RouteMatch>> {
    prop_oneof![
        30 => path().prop_map(|p| Some(RouteMatch {
            path: Some(Path::Prefix(p)),
            ..Default::default()
        })),
        15 => path().prop_map(|p| Some(RouteMatch {
            path: Some(Path::Exact(p)),
            ..Default::default()
        })),
        1 => Just(Some(RouteMatch::default())),
        1 => Just(None),
    ]
}

fn dns_subdomain() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => "[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?(\\.[a-z0-9]{1,5}){0,2}",
        2 => Just(name_of_length(253)),
        3 => select(vec![
            String::new(),
            name_of_length(254),
            "Svc".into(),
            "-svc".into(),
            "svc-".into(),
            "svc_users".into(),
            "svc..users".into(),
            "svc.".into(),
        ]),
    ]
}

fn backend() -> impl Strategy<Value = Option<RouteBackend>> {
    let port = prop_oneof![
        10 => Just(0u32),
        10 => 1u32..=65535,
        2 => select(vec![1u32, 65535]),
        2 => select(vec![65536u32, u32::MAX]),
    ];
    prop_oneof![
        40 => (dns_subdomain(), port).prop_map(|(service, port)| Some(RouteBackend { service, port })),
        1 => Just(None),
    ]
}

fn routes() -> impl Strategy<Value = Vec<HttpRoute>> {
    let route = (route_match(), backend())
        .prop_map(|(r#match, backend)| HttpRoute { r#match, backend })
        .boxed();
    prop_oneof![
        30 => proptest::collection::vec(route.clone(), 1..5),
        1 => Just(Vec::new()),
        // At the bound and one over it: one generated route, repeated.
        1 => route.clone().prop_map(|r| vec![r; 128]),
        1 => route.prop_map(|r| vec![r; 129]),
    ]
}

fn tls() -> impl Strategy<Value = Option<VirtualHostTls>> {
    // Only provider numbers the Kubernetes form can write (the CRD judge reads
    // that form); unknown numbers are covered by the reference test's cases.
    let provider = prop_oneof![10 => Just(1), 10 => Just(2), 1 => Just(0)];
    prop_oneof![
        2 => Just(None),
        5 => (dns_subdomain(), provider).prop_map(|(secret_name, provider)| Some(VirtualHostTls { secret_name, provider })),
    ]
}

/// A spec near the rules' edges; about half of them valid.
pub fn spec() -> impl Strategy<Value = VirtualHostSpec> {
    (hosts(), routes(), tls()).prop_map(|(hosts, routes, tls)| VirtualHostSpec {
        hosts,
        routes,
        tls,
        ..Default::default()
    })
}
