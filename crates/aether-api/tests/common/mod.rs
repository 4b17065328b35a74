//! Shared test data: the proposal's manifest and proptest strategies; the
//! judges are aether-judges'.
#![allow(dead_code)] // each test binary uses a different part

use aether_api::config::v1::{
    Condition, HeaderMatch, HeaderModifier, HeaderValue, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch,
    RouteRedirect, RouteRetry, RouteRewrite, SecretProvider, VirtualHostSpec, VirtualHostStatus, VirtualHostTls,
    WeightedBackend, header_match, query_param_match, route_match::Path, route_redirect, route_rewrite,
};
use proptest::prelude::*;

/// A route matching `path` to `service:port` (0: the service's default port).
pub fn route_to(path: Path, service: &str, port: u32) -> HttpRoute {
    HttpRoute {
        r#match: Some(RouteMatch {
            path: Some(path),
            ..Default::default()
        }),
        backend: Some(RouteBackend {
            service: service.into(),
            port,
        }),
        ..Default::default()
    }
}

/// The design proposal's VirtualHost, as the struct it must decode to.
pub fn proposal_spec() -> VirtualHostSpec {
    VirtualHostSpec {
        hosts: vec!["api.example.com".into()],
        routes: vec![
            route_to(Path::Prefix("/users".into()), "svc-users", 8080),
            route_to(Path::Exact("/healthz".into()), "svc-health", 0),
            route_to(Path::Prefix("/".into()), "svc-web", 0),
        ],
        tls: Some(VirtualHostTls {
            secret_name: "example-tls".into(),
            provider: SecretProvider::Kubernetes.into(),
        }),
        ..Default::default()
    }
}

/// `examples/proposal.yaml`, the manifest users apply.
pub fn proposal_manifest() -> serde_json::Value {
    let yaml = include_str!("../../../../examples/proposal.yaml");
    serde_saphyr::from_str(yaml).expect("examples/proposal.yaml is valid YAML")
}

/// Any string, biased toward the characters our rules care about.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z0-9./*%-]{0,12}", Just(String::new())]
}

/// Enum numbers the JSON forms can name (unknown numbers have no name).
fn provider() -> impl Strategy<Value = i32> {
    prop_oneof![Just(0), Just(1), Just(2)]
}

fn header() -> impl Strategy<Value = HeaderMatch> {
    use header_match::Value;
    let value = prop_oneof![
        text().prop_map(Value::Exact),
        text().prop_map(Value::Prefix),
        text().prop_map(Value::Regex),
        any::<bool>().prop_map(Value::Present),
    ];
    (text(), proptest::option::of(value), any::<bool>()).prop_map(|(name, value, invert)| HeaderMatch {
        name,
        value,
        invert,
    })
}

fn query_param() -> impl Strategy<Value = QueryParamMatch> {
    use query_param_match::Value;
    let value = prop_oneof![
        text().prop_map(Value::Exact),
        text().prop_map(Value::Regex),
        any::<bool>().prop_map(Value::Present),
    ];
    (text(), proptest::option::of(value)).prop_map(|(name, value)| QueryParamMatch { name, value })
}

fn route() -> impl Strategy<Value = HttpRoute> {
    let path = prop_oneof![
        text().prop_map(Path::Prefix),
        text().prop_map(Path::Exact),
        text().prop_map(Path::Regex)
    ];
    let route_match = (
        proptest::option::of(path),
        proptest::collection::vec(text(), 0..3),
        proptest::collection::vec(header(), 0..3),
        proptest::collection::vec(query_param(), 0..3),
    )
        .prop_map(|(path, methods, headers, query_params)| RouteMatch {
            path,
            methods,
            headers,
            query_params,
        });
    let backend = (text(), any::<u32>()).prop_map(|(service, port)| RouteBackend { service, port });
    (
        proptest::option::of(route_match),
        proptest::option::of(backend),
        actions(),
    )
        .prop_map(|(r#match, backend, actions)| HttpRoute {
            r#match,
            backend,
            ..actions
        })
}

/// A route's actions, every field set or not, of any text.
fn actions() -> impl Strategy<Value = HttpRoute> {
    let weighted = (text(), any::<u32>(), any::<u32>()).prop_map(|(service, port, weight)| WeightedBackend {
        service,
        port,
        weight,
    });
    let redirect = (
        text(),
        text(),
        any::<u32>(),
        any::<u32>(),
        proptest::option::of(text()),
        any::<bool>(),
    )
        .prop_map(|(scheme, host, port, status_code, replace, whole)| RouteRedirect {
            scheme,
            host,
            port,
            status_code,
            replace: replace.map(|r| {
                if whole {
                    route_redirect::Replace::Path(r)
                } else {
                    route_redirect::Replace::Prefix(r)
                }
            }),
        });
    let rewrite =
        (text(), proptest::option::of(text()), any::<bool>()).prop_map(|(host, replace, whole)| RouteRewrite {
            host,
            replace: replace.map(|r| {
                if whole {
                    route_rewrite::Replace::Path(r)
                } else {
                    route_rewrite::Replace::Prefix(r)
                }
            }),
        });
    let value = (text(), text())
        .prop_map(|(name, value)| HeaderValue { name, value })
        .boxed();
    let modifier = (
        proptest::collection::vec(value.clone(), 0..3),
        proptest::collection::vec(value, 0..3),
        proptest::collection::vec(text(), 0..3),
    )
        .prop_map(|(set, add, remove)| HeaderModifier { set, add, remove })
        .boxed();
    let retries = (any::<u32>(), text(), proptest::collection::vec(text(), 0..3)).prop_map(
        |(attempts, per_try_timeout, retry_on)| RouteRetry {
            attempts,
            per_try_timeout,
            retry_on,
        },
    );
    (
        proptest::collection::vec(weighted, 0..3),
        proptest::option::of(redirect),
        proptest::option::of(rewrite),
        proptest::option::of(modifier.clone()),
        proptest::option::of(modifier),
        text(),
        proptest::option::of(retries),
    )
        .prop_map(
            |(backends, redirect, rewrite, request_headers, response_headers, timeout, retries)| HttpRoute {
                backends,
                redirect,
                rewrite,
                request_headers,
                response_headers,
                timeout,
                retries,
                ..Default::default()
            },
        )
}

/// Any spec whose enum values are named (what both JSON forms can carry).
pub fn spec() -> impl Strategy<Value = VirtualHostSpec> {
    spec_with(provider().boxed(), prop_oneof![Just(0), Just(1), Just(2)].boxed())
}

/// Any spec at all, unknown enum numbers included (what binary can carry).
pub fn any_spec() -> impl Strategy<Value = VirtualHostSpec> {
    spec_with(any::<i32>().boxed(), any::<i32>().boxed())
}

fn spec_with(provider: BoxedStrategy<i32>, route_order: BoxedStrategy<i32>) -> impl Strategy<Value = VirtualHostSpec> {
    let tls = (text(), provider).prop_map(|(secret_name, provider)| VirtualHostTls { secret_name, provider });
    (
        proptest::collection::vec(text(), 0..20),
        proptest::collection::vec(route(), 0..8),
        proptest::option::of(tls),
        route_order,
    )
        .prop_map(|(hosts, routes, tls, route_order)| VirtualHostSpec {
            hosts,
            routes,
            tls,
            route_order,
        })
}

pub fn status() -> impl Strategy<Value = VirtualHostStatus> {
    let condition = (text(), text(), any::<i64>(), text(), text(), text()).prop_map(
        |(r#type, status, observed_generation, last_transition_time, reason, message)| Condition {
            r#type,
            status,
            observed_generation,
            last_transition_time,
            reason,
            message,
        },
    );
    (proptest::collection::vec(condition, 0..4), any::<u32>()).prop_map(|(conditions, route_count)| VirtualHostStatus {
        conditions,
        route_count,
    })
}

/// The offline CRD judge of one top-level property (`spec`, `status`) of
/// this API's checked-in CRD.
pub fn crd_judge(property: &str) -> aether_judges::crd::CrdJudge {
    aether_judges::crd::CrdJudge::from_crd(aether_api::CRD_YAML, property)
}

/// Draws `count` values from `strategy`, the same ones on every run.
pub fn sample<S: Strategy>(strategy: S, count: usize) -> Vec<S::Value> {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).expect("strategy draws").current())
        .collect()
}

/// The specs written by hand: every fixture's and every example manifest's
/// (the seeds of the parity sample's generator).
pub fn written_specs() -> Vec<serde_json::Value> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        root.join("tests/fixtures/valid"),
        root.join("tests/fixtures/invalid"),
        root.join("../../examples"),
    ];
    let mut specs = Vec::new();
    for dir in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
            let text = std::fs::read_to_string(&path).unwrap();
            // A file may hold several documents; each VirtualHost's spec counts.
            for document in text.split("\n---") {
                let Ok(object) = serde_saphyr::from_str::<serde_json::Value>(document) else {
                    continue;
                };
                if object["kind"] == "VirtualHost" {
                    specs.push(object["spec"].clone());
                }
            }
        }
    }
    specs
}
