//! Shared test data: the proposal's manifest and proptest strategies; the
//! judges are aether-judges'.
#![allow(dead_code)] // each test binary uses a different part

use aether_api::config::v1::{
    Condition, HeaderMatch, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec,
    VirtualHostStatus, VirtualHostTls, header_match, query_param_match, route_match::Path,
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
    // The actions as the parity sample draws them (every field, set and
    // not), with a backend of any text.
    (
        actions::route(proptest::option::of(route_match)),
        proptest::option::of(backend),
    )
        .prop_map(|(route, backend)| HttpRoute {
            backend: backend.filter(|_| route.backend.is_some()),
            ..route
        })
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

pub mod actions;
pub mod boundary;
