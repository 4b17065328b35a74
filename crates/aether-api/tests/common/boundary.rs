//! Specs biased toward the edges of every rule: mostly valid parts, with
//! values on both sides of each boundary and each kind of forbidden input
//! mixed in, so that a sample holds many valid and many invalid specs.

use aether_api::config::v1::{
    HeaderMatch, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, VirtualHostSpec, VirtualHostTls, header_match,
    query_param_match, route_match::Path,
};
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

pub(crate) fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => valid_path(),
        2 => Just(format!("/{}", "a".repeat(1023))),
        2 => select(vec!["/".to_owned(), "/a/.b".into(), "/a/..b".into(), "/.well-known".into(), "/%2e".into()]),
        4 => invalid_path(),
    ]
}

/// A regular expression for `regex` members: the rules ask for 1 to 1024
/// printable ASCII characters (RE2 validity is the webhook's and the
/// edge's, not a rule the three judges state).
fn regex() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => "[ -~]{1,12}",
        10 => select(vec!["^/users/[0-9]+$".to_owned(), ".*".into(), "(GET|HEAD)".into(), "[ -~]*".into(), "a{2,5}".into()]),
        2 => Just(format!("[{}]", "a".repeat(1022))),
        1 => select(vec![
            String::new(),
            format!("[{}]", "a".repeat(1023)),
            "a\tb".into(),
            "a\nb".into(),
            "caf\u{e9}".into(),
        ]),
    ]
}

fn path_match() -> impl Strategy<Value = Option<Path>> {
    prop_oneof![
        30 => path().prop_map(|p| Some(Path::Prefix(p))),
        15 => path().prop_map(|p| Some(Path::Exact(p))),
        10 => regex().prop_map(|r| Some(Path::Regex(r))),
        1 => Just(None),
    ]
}

const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

fn methods() -> impl Strategy<Value = Vec<String>> {
    let all = || METHODS.iter().map(|m| (*m).to_owned()).collect::<Vec<_>>();
    prop_oneof![
        60 => Just(Vec::new()),
        20 => proptest::sample::subsequence(all(), 1..=9).prop_shuffle(),
        2 => Just(all()),
        // A method twice; ten methods (one over the bound, and so repeated).
        1 => select(all()).prop_map(|m| vec![m.clone(), "GET".into(), m]),
        1 => Just([all(), vec!["PATCH".to_owned()]].concat()),
        // A name outside the list.
        1 => select(vec!["get".to_owned(), "PROPFIND".into(), String::new(), "GET ".into()]).prop_map(|m| vec![m]),
    ]
}

pub(crate) fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        60 => "[a-z0-9!#$%&'*+.^_`|~-]{1,12}",
        2 => Just(format!("x-{}", "a".repeat(254))),
        1 => select(vec![
            String::new(),
            format!("x-{}", "a".repeat(255)),
            "X-Env".into(),
            ":method".into(),
            "x env".into(),
            "x\u{e9}".into(),
        ]),
    ]
}

fn header_value() -> impl Strategy<Value = Option<header_match::Value>> {
    use header_match::Value;
    let exact = prop_oneof![
        30 => "[!-~]([\t -~]{0,8}[!-~])?",
        2 => Just("v".repeat(4096)),
        1 => select(vec![String::new(), "v".repeat(4097), " a".into(), "a ".into(), "a\nb".into(), "\u{e9}".into()]),
    ];
    let prefix = prop_oneof![
        30 => "[!-~][\t -~]{0,8}",
        2 => Just("v".repeat(4096)),
        1 => select(vec![String::new(), "v".repeat(4097), " a".into(), "\ta".into(), "a\r".into()]),
    ];
    prop_oneof![
        10 => exact.prop_map(|v| Some(Value::Exact(v))),
        10 => prefix.prop_map(|v| Some(Value::Prefix(v))),
        10 => regex().prop_map(|v| Some(Value::Regex(v))),
        10 => Just(Some(Value::Present(true))),
        1 => Just(Some(Value::Present(false))),
        1 => Just(None),
    ]
}

fn headers() -> impl Strategy<Value = Vec<HeaderMatch>> {
    let header = (header_name(), header_value(), any::<bool>())
        .prop_map(|(name, value, invert)| HeaderMatch { name, value, invert })
        .boxed();
    let valid = ("[a-z]{1,6}", any::<bool>())
        .prop_map(|(name, invert)| HeaderMatch {
            name,
            value: Some(header_match::Value::Present(true)),
            invert,
        })
        .boxed();
    prop_oneof![
        60 => Just(Vec::new()),
        20 => proptest::collection::vec(header, 1..4),
        1 => proptest::collection::vec(valid.clone(), 16..=16),
        1 => proptest::collection::vec(valid, 17..=17),
    ]
}

fn query_name() -> impl Strategy<Value = String> {
    prop_oneof![
        60 => "([A-Za-z0-9._~!$'()*+,;:@/?-]|%[0-9A-Fa-f]{2}){1,8}",
        2 => Just("q".repeat(256)),
        1 => select(vec![
            String::new(),
            "q".repeat(257),
            "a&b".into(),
            "a=b".into(),
            "a#b".into(),
            "a%2".into(),
            "a b".into(),
        ]),
    ]
}

fn query_value() -> impl Strategy<Value = Option<query_param_match::Value>> {
    use query_param_match::Value;
    let exact = prop_oneof![
        30 => "([A-Za-z0-9._~!$'()*+,;=:@/?-]|%[0-9A-Fa-f]{2}){1,8}",
        2 => Just("v".repeat(1024)),
        1 => select(vec![String::new(), "v".repeat(1025), "a#".into(), "a&b".into(), "a b".into(), "%zz".into()]),
    ];
    prop_oneof![
        15 => exact.prop_map(|v| Some(Value::Exact(v))),
        10 => regex().prop_map(|v| Some(Value::Regex(v))),
        10 => Just(Some(Value::Present(true))),
        1 => Just(Some(Value::Present(false))),
        1 => Just(None),
    ]
}

fn query_params() -> impl Strategy<Value = Vec<QueryParamMatch>> {
    let param = (query_name(), query_value())
        .prop_map(|(name, value)| QueryParamMatch { name, value })
        .boxed();
    let valid = "[a-z]{1,6}"
        .prop_map(|name| QueryParamMatch {
            name,
            value: Some(query_param_match::Value::Present(true)),
        })
        .boxed();
    prop_oneof![
        60 => Just(Vec::new()),
        20 => proptest::collection::vec(param, 1..4),
        1 => proptest::collection::vec(valid.clone(), 16..=16),
        1 => proptest::collection::vec(valid, 17..=17),
    ]
}

fn route_match() -> impl Strategy<Value = Option<RouteMatch>> {
    prop_oneof![
        40 => (path_match(), methods(), headers(), query_params()).prop_map(|(path, methods, headers, query_params)| {
            Some(RouteMatch {
                path,
                methods,
                headers,
                query_params,
            })
        }),
        1 => Just(None),
    ]
}

pub(crate) fn dns_subdomain() -> impl Strategy<Value = String> {
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

pub(crate) fn backend() -> impl Strategy<Value = Option<RouteBackend>> {
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
    let route = super::actions::route(route_match()).boxed();
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
    // Only the named orders: the Kubernetes form the CRD judge reads cannot
    // write another number (the reference test covers those in binary).
    let route_order = prop_oneof![4 => Just(0), 1 => Just(1), 1 => Just(2)];
    (hosts(), routes(), tls(), route_order).prop_map(|(hosts, routes, tls, route_order)| VirtualHostSpec {
        hosts,
        routes,
        tls,
        route_order,
    })
}
