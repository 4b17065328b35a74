//! Shared test data: the proposal's manifest and proptest strategies; the
//! judges are aether-judges'.

use aether_api::config::v1::{
    HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostStatus, VirtualHostTls,
    route_match::Path,
};
use aether_specgen::any::Enums;
use proptest::prelude::*;
use prost::Message as _;
use prost_reflect::ReflectMessage;

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
    let yaml = include_str!("../../../../../examples/proposal.yaml");
    serde_saphyr::from_str(yaml).expect("examples/proposal.yaml is valid YAML")
}

/// Any value of message `M`, every field of its descriptor set or not,
/// rules ignored (`aether_specgen::any`): a field added to the proto is
/// drawn here without a line of this file changing.
fn any_message<M: ReflectMessage + Default + std::fmt::Debug>(enums: Enums) -> impl Strategy<Value = M> {
    let descriptor = M::default().descriptor();
    any::<u64>().prop_map(move |seed| {
        let dynamic = aether_specgen::any::message(&descriptor, &mut aether_specgen::Rng::new(seed), enums);
        M::decode(dynamic.encode_to_vec().as_slice()).expect("a message of M's own descriptor decodes as M")
    })
}

/// Any spec whose enum values are named (what both JSON forms can carry).
pub fn spec() -> impl Strategy<Value = VirtualHostSpec> {
    any_message(Enums::Declared)
}

/// Any spec at all, unknown enum numbers included (what binary can carry).
pub fn any_spec() -> impl Strategy<Value = VirtualHostSpec> {
    any_message(Enums::Any)
}

pub fn status() -> impl Strategy<Value = VirtualHostStatus> {
    any_message(Enums::Declared)
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
