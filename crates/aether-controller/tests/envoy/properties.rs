//! Random sets of valid objects, at and near the API's bounds: Envoy
//! accepts every configuration the controller gives it, and runs exactly
//! the projection. Routes match on paths, regexes near Envoy's program
//! limit (and some above it, whose routes are left out), methods, headers
//! and query parameters, in either route order; and every action: one
//! backend, weighted splits (weight 0 and all 0 among them), redirects,
//! rewrites, header changes on both sides, timeouts and retries.

use aether_edge_envoy::descriptors;
use aether_projection::LeftOutReason;
use aether_projection::envoy_route::RouteConfiguration;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use prost::Message;
use serde_json::{Value, json};

use aether_e2e::Mode;
use aether_e2e::edge::{PATIENCE, projection};

use crate::edge;

/// Sets per test (each a reload of a running Envoy).
const CASES: usize = 48;

/// A DNS label of 1 to 63 characters.
fn label(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-z0-9]([-a-z0-9]{{0,{}}}[a-z0-9])?", max.saturating_sub(2)))
        .expect("a label regex")
}

/// The longest host the API allows: 253 characters, labels of 63.
fn longest_host() -> String {
    let label = |c: char, n: usize| c.to_string().repeat(n);
    format!(
        "{}.{}.{}.{}",
        label('a', 63),
        label('b', 63),
        label('c', 63),
        label('d', 61)
    )
}

/// Hosts: a small shared pool (so objects contest them, wildcards
/// included), random ones, and the longest.
fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["api.example.com", "*.example.com", "shop.example.com", "*.shop.example.com", "a.b.example.com"])
            .prop_map(String::from),
        4 => (any::<bool>(), label(63), label(8)).prop_map(|(wild, a, b)| format!("{}{a}.{b}.test", if wild { "*." } else { "" })),
        1 => Just(longest_host()),
    ]
}

/// A path segment of every character the API allows, `%XX` escapes
/// (never an encoded slash) included, never `.` or `..`.
pub fn segment() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::string::string_regex("[A-Za-z0-9._~!$&'()*+,;=:@-]").unwrap(),
        1 => proptest::string::string_regex("%[0-9A-Fa-f]{2}").unwrap()
            .prop_filter("an encoded slash", |escape| !escape.eq_ignore_ascii_case("%2f")),
    ];
    prop::collection::vec(piece, 1..6)
        .prop_map(|pieces| pieces.concat())
        .prop_filter("a dot segment", |segment| segment != "." && segment != "..")
}

/// A path: `/`, a few segments (with or without a final `/`), or the
/// longest (1024 characters).
pub fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("/".to_owned()),
        8 => (prop::collection::vec(segment(), 1..4), any::<bool>())
            .prop_map(|(segments, slash)| format!("/{}{}", segments.join("/"), if slash { "/" } else { "" })),
        1 => Just(format!("/{}", "x".repeat(1023))),
    ]
}

fn service() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => label(20),
        1 => Just("s".repeat(253)),
    ]
}

/// Regular expressions from the RE2 guard's generator: most accepted and
/// near Envoy's limit, some refused (their routes are left out). Drawn
/// once.
fn regexes() -> Vec<String> {
    static REGEXES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(draw_regexes);
    REGEXES.clone()
}

fn draw_regexes() -> Vec<String> {
    let mut expressions = aether_edge_limits::re2::testing::Expressions::new(0x9E2E);
    let (mut near, mut refused) = (Vec::new(), Vec::new());
    while near.len() < 200 || refused.len() < 20 {
        let regex = expressions.next_expression();
        if regex.len() > 1024 || !regex.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            continue;
        }
        match aether_edge_limits::re2::check(&regex) {
            Ok(bound) if bound >= 60 && near.len() < 200 => near.push(regex),
            Err(aether_edge_limits::re2::Re2Refusal::TooLarge { .. }) if refused.len() < 20 => refused.push(regex),
            _ => {}
        }
    }
    near.extend(refused);
    near
}

fn header() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["x-a", "x-env", "authorization", "x-b"]),
        0..4u8,
        prop::sample::select(regexes()),
        any::<bool>(),
    )
        .prop_map(|(name, kind, regex, invert)| {
            let mut header = match kind {
                0 => json!({"exact": "a b"}),
                1 => json!({"prefix": "Bearer "}),
                2 => json!({"regex": regex}),
                _ => json!({"present": true}),
            };
            header["name"] = json!(name);
            header["invert"] = json!(invert);
            header
        })
}

fn query_param() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["q", "id", "v"]),
        0..3u8,
        prop::sample::select(regexes()),
    )
        .prop_map(|(name, kind, regex)| {
            let mut param = match kind {
                0 => json!({"exact": "%41b"}),
                1 => json!({"regex": regex}),
                _ => json!({"present": true}),
            };
            param["name"] = json!(name);
            param
        })
}

/// A header change of one side: `set` and `add` entries (names unique in
/// each list), names to remove; values with `%` (literal, so escaped for
/// Envoy), spaces and every printable character class.
fn header_changes() -> impl Strategy<Value = Value> {
    let name = || prop::sample::select(vec!["x-a", "x-team", "cache-control", "x-%41", "x-b", "accept"]);
    let value = prop::sample::select(vec![
        "a",
        "50%",
        "%REQ(x-a)%",
        "%%",
        "a b\tc",
        "~!#$&'*+.^_`|",
        "no-store",
    ]);
    let entries = move || {
        prop::collection::btree_map(name(), value.clone(), 0..3).prop_map(|entries| {
            entries
                .into_iter()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect::<Vec<_>>()
        })
    };
    (entries(), entries(), prop::collection::btree_set(name(), 0..3))
        .prop_map(|(set, add, remove)| json!({"set": set, "add": add, "remove": remove}))
}

/// A duration in Gateway API's form, from 1 ms to the longest.
fn duration() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0s",
        "1ms",
        "500ms",
        "15s",
        "1m30s",
        "1h2m3s4ms",
        "99999h99999h99999h99999h",
    ])
    .prop_map(String::from)
}

/// Where a route sends: one backend, a weighted split (weights of 0, all 0
/// too, up to the largest), or a redirect (a prefix only after a prefix
/// match); then, unless it redirects, rewrites, request header changes, a
/// timeout and retries; response header changes either way.
fn actions(prefix_match: bool) -> impl Strategy<Value = Value> {
    let split = prop::collection::btree_map(
        (service(), prop_oneof![Just(0u32), 1..=65535u32]),
        prop::sample::select(vec![0u32, 1, 10, 90, 500_000, 1_000_000]),
        1..5,
    )
    .prop_map(|backends| {
        let backends: Vec<Value> = backends
            .into_iter()
            .map(|((service, port), weight)| json!({"service": service, "port": port, "weight": weight}))
            .collect();
        json!({"backends": backends})
    });
    let single = (service(), prop_oneof![Just(0u32), 1..=65535u32])
        .prop_map(|(service, port)| json!({"backend": {"service": service, "port": port}}));
    let replace = prop_oneof![
        Just(None),
        path().prop_map(|path| Some(("path", path))),
        path().prop_map(move |path| prefix_match.then_some(("prefix", path))),
    ];
    let redirect = (
        prop::option::of(prop::sample::select(vec!["http", "https"])),
        prop::option::of(label(63)),
        prop::sample::select(vec![0u32, 80, 443, 8443, 65535]),
        replace.clone(),
        prop::option::of(prop::sample::select(vec![301u32, 302, 303, 307, 308])),
    )
        .prop_map(|(scheme, host, port, replace, status)| {
            let mut redirect = json!({"port": port});
            if let Some(scheme) = scheme {
                redirect["scheme"] = json!(scheme);
            }
            if let Some(host) = host {
                redirect["host"] = json!(format!("{host}.example.com"));
            }
            if let Some((field, path)) = replace {
                redirect[field] = json!(path);
            }
            if let Some(status) = status {
                redirect["statusCode"] = json!(status);
            }
            json!({"redirect": redirect})
        });
    let forward = (
        prop_oneof![single, split],
        prop::option::of((replace, prop::option::of(label(20)))),
        prop::option::of(header_changes()),
        prop::option::of(duration()),
        prop::option::of((
            0..=10u32,
            prop::option::of(duration()),
            prop::sample::subsequence(
                vec![
                    "5xx",
                    "gateway-error",
                    "reset",
                    "reset-before-request",
                    "connect-failure",
                    "refused-stream",
                    "retriable-4xx",
                ],
                0..=3,
            ),
        )),
    )
        .prop_map(|(mut forward, rewrite, request_headers, timeout, retries)| {
            if let Some((replace, host)) = rewrite {
                let mut rewrite = json!({});
                if let Some((field, path)) = replace {
                    rewrite[field] = json!(path);
                }
                if let Some(host) = host {
                    rewrite["host"] = json!(format!("{host}.internal"));
                }
                forward["rewrite"] = rewrite;
            }
            if let Some(changes) = request_headers {
                forward["requestHeaders"] = changes;
            }
            if let Some(timeout) = timeout {
                forward["timeout"] = json!(timeout);
            }
            if let Some((attempts, per_try_timeout, on)) = retries {
                let mut retries = json!({"attempts": attempts, RETRY_ON: on});
                if let Some(timeout) = per_try_timeout {
                    retries["perTryTimeout"] = json!(timeout);
                }
                forward["retries"] = retries;
            }
            forward
        });
    (
        prop_oneof![4 => forward, 1 => redirect],
        prop::option::of(header_changes()),
    )
        .prop_map(|(mut actions, response_headers)| {
            if let Some(changes) = response_headers {
                actions["responseHeaders"] = changes;
            }
            actions
        })
}

/// The Kubernetes name of the retry conditions.
const RETRY_ON: &str = "retryOn";

fn route() -> impl Strategy<Value = Value> {
    (
        0..3u8,
        path(),
        prop::sample::select(regexes()),
        prop::sample::subsequence(vec!["GET", "POST", "PUT", "DELETE"], 0..=3),
        prop::collection::vec(header(), 0..3),
        prop::collection::vec(query_param(), 0..3),
    )
        .prop_flat_map(|(kind, path, regex, methods, headers, query_params)| {
            let mut route_match = match kind {
                0 => json!({"exact": path}),
                1 => json!({"prefix": path}),
                _ => json!({"regex": regex}),
            };
            route_match["methods"] = json!(methods);
            route_match["headers"] = json!(headers);
            route_match["queryParams"] = json!(query_params);
            actions(kind == 1).prop_map(move |mut route| {
                route["match"] = route_match.clone();
                route
            })
        })
}

fn object(index: usize) -> impl Strategy<Value = Value> {
    let routes = prop_oneof![
        8 => prop::collection::vec(route(), 1..5),
        1 => prop::collection::vec(route(), 128..=128),
    ];
    let hosts = prop_oneof![
        8 => prop::collection::btree_set(host(), 1..4),
        1 => prop::collection::btree_set(host(), 16..=16),
    ];
    let namespace = prop::sample::select(vec!["default", "shop", "platform"]);
    // Untimed objects, and timestamp ties.
    let created = prop::option::of(prop::sample::select(vec![
        "2026-01-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
    ]));
    let order = prop::sample::select(vec!["LISTED", "SPECIFICITY"]);
    (hosts, routes, namespace, created, order).prop_map(move |(hosts, routes, namespace, created, order)| {
        let mut metadata = json!({"name": format!("vh-{index}"), "namespace": namespace});
        if let Some(created) = created {
            metadata["creationTimestamp"] = json!(created);
        }
        json!({
            "apiVersion": "config.aether.io/v1",
            "kind": "VirtualHost",
            "metadata": metadata,
            "spec": {"hosts": hosts, "routes": routes, "routeOrder": order}
        })
    })
}

fn object_set() -> impl Strategy<Value = Vec<Value>> {
    (1..6usize).prop_flat_map(|count| (0..count).map(object).collect::<Vec<_>>())
}

/// Envoy's dump of a route configuration as the prost type.
fn from_dump(mut route_config: Value) -> RouteConfiguration {
    route_config.as_object_mut().expect("an object").remove("@type");
    let descriptor = descriptors::pool()
        .get_message_by_name("envoy.config.route.v3.RouteConfiguration")
        .expect("RouteConfiguration's descriptor");
    let message = prost_reflect::DynamicMessage::deserialize(descriptor, route_config).expect("Envoy's JSON decodes");
    RouteConfiguration::decode(message.encode_to_vec().as_slice()).expect("re-decodes")
}

fn check(mode: Mode, seed: u8) {
    let start = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: start, namespace: default}\nspec: {hosts: [start.test], routes: [{match: {prefix: /}, backend: {service: svc}}]}\n";
    let edge = edge(mode, &[("set.yaml", start)], &Default::default());
    let mut runner = TestRunner::new_with_rng(
        proptest::test_runner::Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[seed; 32]),
    );
    let strategy = object_set();
    let mut kinds = ActionKinds::default();
    for case in 0..CASES {
        let objects = strategy.new_tree(&mut runner).expect("a case").current();
        let text: String = objects
            .iter()
            .map(|object| format!("---\n{}\n", serde_json::to_string(object).unwrap()))
            .collect();
        let snapshot = projection(&[&text]);
        for left_out in &snapshot.report.left_out {
            assert!(
                !matches!(left_out.reason, LeftOutReason::Invalid { .. }),
                "case {case}: the generator made an invalid object: {left_out:?}"
            );
        }
        let expected = snapshot.route_configuration().expect("the projection decodes");
        for route in expected.virtual_hosts.iter().flat_map(|vh| &vh.routes) {
            kinds.count(route);
        }
        edge.write("set.yaml", &text);
        aether_e2e::wait_until(
            &format!("{mode:?} case {case}: Envoy running the projection"),
            PATIENCE,
            || format!("{}\nobjects: {text}", edge.logs()),
            || {
                assert_eq!(
                    edge.rejected(),
                    0,
                    "{mode:?} case {case}: Envoy rejected\n{}\n{text}",
                    edge.logs()
                );
                let running = edge.envoy.dynamic_route_config()?;
                (from_dump(running["route_config"].clone()) == expected).then_some(())
            },
        );
    }
    eprintln!("{mode:?}: Envoy ran routes with {kinds:?}");
    kinds.assert_every_kind();
}

/// How many of the routes Envoy ran used each action, so that a generator
/// that stopped making one fails rather than passes on less.
#[derive(Debug, Default)]
struct ActionKinds {
    weighted: usize,
    no_weight_500: usize,
    redirect: usize,
    prefix_rewrite: usize,
    path_rewrite: usize,
    host_rewrite: usize,
    percent_in_header_value: usize,
    header_removed: usize,
    timeout: usize,
    retry_override: usize,
    no_retries: usize,
}

impl ActionKinds {
    fn count(&mut self, route: &aether_projection::envoy_route::Route) {
        use aether_projection::envoy_route::route::Action;
        use aether_projection::envoy_route::route_action::ClusterSpecifier;
        let default_retry_on = aether_projection::RetryConfig::default().retry_on;
        match &route.action {
            Some(Action::Route(action)) => {
                self.weighted += usize::from(matches!(
                    action.cluster_specifier,
                    Some(ClusterSpecifier::WeightedClusters(_))
                ));
                self.prefix_rewrite += usize::from(!action.prefix_rewrite.is_empty());
                self.path_rewrite += usize::from(action.regex_rewrite.is_some());
                self.host_rewrite += usize::from(action.host_rewrite_specifier.is_some());
                self.timeout += usize::from(action.timeout.is_some());
                match &action.retry_policy {
                    None => self.no_retries += 1,
                    Some(policy) if policy.retry_on != default_retry_on => self.retry_override += 1,
                    Some(_) => {}
                }
            }
            Some(Action::Redirect(_)) => self.redirect += 1,
            Some(Action::DirectResponse(_)) => self.no_weight_500 += 1,
            _ => {}
        }
        self.percent_in_header_value += route
            .request_headers_to_add
            .iter()
            .chain(&route.response_headers_to_add)
            .filter(|option| option.header.as_ref().is_some_and(|h| h.value.contains('%')))
            .count();
        self.header_removed += route.request_headers_to_remove.len() + route.response_headers_to_remove.len();
    }

    fn assert_every_kind(&self) {
        let counts = [
            self.weighted,
            self.no_weight_500,
            self.redirect,
            self.prefix_rewrite,
            self.path_rewrite,
            self.host_rewrite,
            self.percent_in_header_value,
            self.header_removed,
            self.timeout,
            self.retry_override,
            self.no_retries,
        ];
        assert!(
            counts.iter().all(|count| *count > 0),
            "an action never generated: {self:?}"
        );
    }
}

#[test]
fn envoy_accepts_and_runs_every_random_valid_set_over_files() {
    check(Mode::Files, 1);
}

#[test]
fn envoy_accepts_and_runs_every_random_valid_set_over_xds() {
    check(Mode::Xds, 2);
}
