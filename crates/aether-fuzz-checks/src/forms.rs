//! The decoding targets: a spec or a status read in one form survives
//! every form (binary, Kubernetes JSON, proto3 JSON).

use aether_api::config::v1::{RouteOrder, SecretProvider, VirtualHostSpec, VirtualHostStatus};
use aether_api::reflect::{from_proto_json, to_proto_json};
use prost::Message;

use crate::{Outcome, validate_is_consistent};

/// Binary protobuf: whatever decodes as a spec (or a status) re-encodes to
/// what decodes to an equal value, in every form.
pub fn binary_spec(data: &[u8]) -> Outcome {
    // The status is small and shares the code paths; check it on the same
    // bytes rather than in a target of its own.
    if let Ok(status) = VirtualHostStatus::decode(data) {
        status_round_trips(&status);
    }
    match VirtualHostSpec::decode(data) {
        Ok(spec) => {
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// The Kubernetes JSON form (the serde impls, as manifests are read).
pub fn kubernetes_json(data: &[u8]) -> Outcome {
    match serde_json::from_slice::<VirtualHostSpec>(data) {
        Ok(spec) => {
            // The form has names only: nothing read from it holds an enum
            // number without one.
            assert!(
                !has_unknown_enum(&spec),
                "the Kubernetes form produced an unknown enum number: {spec:?}"
            );
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// The canonical proto3 JSON form (through prost-reflect).
pub fn proto_json(data: &[u8]) -> Outcome {
    let Ok(text) = std::str::from_utf8(data) else {
        return Outcome::Rejected;
    };
    if let Ok(status) = from_proto_json::<VirtualHostStatus>(text) {
        status_round_trips(&status);
    }
    match from_proto_json::<VirtualHostSpec>(text) {
        Ok(spec) => {
            spec_round_trips(&spec);
            validate_is_consistent(&spec);
            Outcome::Decoded
        }
        Err(_) => Outcome::Rejected,
    }
}

/// Whether `spec` holds an enum number that has no name.
pub fn has_unknown_enum(spec: &VirtualHostSpec) -> bool {
    RouteOrder::try_from(spec.route_order).is_err()
        || spec
            .tls
            .as_ref()
            .is_some_and(|tls| SecretProvider::try_from(tls.provider).is_err())
}

/// A spec survives every form: binary and proto3 JSON exactly (both carry
/// unknown enum numbers), the Kubernetes form for everything but an unknown
/// enum number, which it refuses to write rather than writing something else.
pub fn spec_round_trips(spec: &VirtualHostSpec) {
    let bytes = spec.encode_to_vec();
    assert_eq!(bytes.len(), spec.encoded_len(), "encoded_len is the encoded length");
    let back = VirtualHostSpec::decode(bytes.as_slice()).expect("a re-encoded spec decodes");
    assert_eq!(&back, spec, "binary round trip");

    let json = to_proto_json(spec);
    let back: VirtualHostSpec =
        from_proto_json(&json).unwrap_or_else(|e| panic!("proto3 JSON written for {spec:?} does not read back: {e}"));
    assert_eq!(&back, spec, "proto3 JSON round trip of {json}");

    // The Kubernetes form cannot carry an unknown enum number: compare what
    // it can, the spec with the unknown numbers cleared.
    let carried = if has_unknown_enum(spec) {
        assert!(
            serde_json::to_string(spec).is_err(),
            "the Kubernetes form wrote an unknown enum number: {spec:?}"
        );
        let mut carried = spec.clone();
        if let Some(tls) = carried.tls.as_mut()
            && SecretProvider::try_from(tls.provider).is_err()
        {
            tls.provider = SecretProvider::Unspecified.into();
        }
        if RouteOrder::try_from(carried.route_order).is_err() {
            carried.route_order = RouteOrder::Unspecified.into();
        }
        carried
    } else {
        // Its reader takes proto3 JSON too (full enum names).
        let from_proto: VirtualHostSpec = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("the Kubernetes reader refuses proto3 JSON {json}: {e}"));
        assert_eq!(&from_proto, spec, "the Kubernetes reader on proto3 JSON {json}");
        spec.clone()
    };
    let json = serde_json::to_string(&carried).expect("a spec with named enums writes in the Kubernetes form");
    let back: VirtualHostSpec =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("Kubernetes JSON {json} does not read back: {e}"));
    assert_eq!(back, carried, "Kubernetes JSON round trip of {json}");
}

/// A status survives binary and proto3 JSON exactly, and the Kubernetes form
/// (it has no enum).
pub fn status_round_trips(status: &VirtualHostStatus) {
    let bytes = status.encode_to_vec();
    let back = VirtualHostStatus::decode(bytes.as_slice()).expect("a re-encoded status decodes");
    assert_eq!(&back, status, "binary round trip");
    let json = to_proto_json(status);
    let back: VirtualHostStatus =
        from_proto_json(&json).unwrap_or_else(|e| panic!("proto3 JSON {json} does not read back: {e}"));
    assert_eq!(&back, status, "proto3 JSON round trip");
    let json = serde_json::to_string(status).expect("a status writes in the Kubernetes form");
    let back: VirtualHostStatus = serde_json::from_str(&json).expect("Kubernetes JSON of a status reads back");
    assert_eq!(&back, status, "Kubernetes JSON round trip of {json}");
}
