//! Binary, struct and both JSON forms round-trip losslessly.

use aether_api::config::v1::{VirtualHostSpec, VirtualHostStatus};
use aether_api::reflect::{from_proto_json, to_proto_json};
use proptest::prelude::*;
use prost::Message;

use crate::common;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn binary_round_trips_any_spec(spec in common::any_spec()) {
        let bytes = spec.encode_to_vec();
        prop_assert_eq!(VirtualHostSpec::decode(bytes.as_slice()).unwrap(), spec);
    }

    #[test]
    fn kubernetes_json_round_trips(spec in common::spec(), status in common::status()) {
        let json = serde_json::to_string(&spec).unwrap();
        prop_assert_eq!(serde_json::from_str::<VirtualHostSpec>(&json).unwrap(), spec);
        let json = serde_json::to_string(&status).unwrap();
        prop_assert_eq!(serde_json::from_str::<VirtualHostStatus>(&json).unwrap(), status);
    }

    #[test]
    fn proto_json_round_trips_and_reads_as_the_same_struct(spec in common::spec(), status in common::status()) {
        let json = to_proto_json(&spec);
        prop_assert_eq!(from_proto_json::<VirtualHostSpec>(&json).unwrap(), spec.clone());
        // For a spec the two forms differ only in enum names, and the
        // Kubernetes reader accepts full names too: it reads proto3 JSON.
        prop_assert_eq!(serde_json::from_str::<VirtualHostSpec>(&json).unwrap(), spec);
        let json = to_proto_json(&status);
        prop_assert_eq!(from_proto_json::<VirtualHostStatus>(&json).unwrap(), status);
    }
}

#[test]
fn proto_json_uses_full_enum_names_and_string_int64() {
    let json: serde_json::Value = serde_json::from_str(&to_proto_json(&common::proposal_spec())).unwrap();
    assert_eq!(json["tls"]["provider"], "SECRET_PROVIDER_KUBERNETES");
    let status = VirtualHostStatus {
        conditions: vec![aether_api::config::v1::Condition {
            observed_generation: 7,
            ..Default::default()
        }],
        ..Default::default()
    };
    let json: serde_json::Value = serde_json::from_str(&to_proto_json(&status)).unwrap();
    assert_eq!(json["conditions"][0]["observedGeneration"], "7");
}

#[test]
fn the_embedded_descriptor_set_decodes_and_names_every_message() {
    let pool = &*aether_api::reflect::DESCRIPTOR_POOL;
    for name in [
        "VirtualHostSpec",
        "HTTPRoute",
        "RouteMatch",
        "HeaderMatch",
        "QueryParamMatch",
        "RouteBackend",
        "VirtualHostTLS",
        "VirtualHostStatus",
        "Condition",
    ] {
        assert!(
            pool.get_message_by_name(&format!("aether.config.v1.{name}")).is_some(),
            "{name}"
        );
    }
}
