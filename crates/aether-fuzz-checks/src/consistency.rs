//! `validate()` on decoded specs and on structured ones: invariants that
//! restate no rule (which rules hold is the three judges' business:
//! `aether-api`'s parity and reference tests).

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;
use prost::Message;

use crate::{Outcome, structured};

/// `validate()` on specs drawn from the rules model with the input's bytes
/// ([`structured::spec`]), so that every input becomes a spec (and many a
/// valid one).
pub fn validate_structured(data: &[u8]) -> Outcome {
    let spec = structured::spec(&mut arbitrary::Unstructured::new(data));
    validate_is_consistent(&spec);
    Outcome::Decoded
}

/// `validate()` never panics, reports well-formed violations (a rule id, a
/// message, a path under `spec`), and judges a spec as it judges the same
/// spec after a trip through its binary and its Kubernetes JSON forms.
pub fn validate_is_consistent(spec: &VirtualHostSpec) {
    let verdict = spec.validate();
    if let Err(violations) = &verdict {
        assert!(!violations.is_empty(), "an error holds a violation");
        for violation in violations {
            assert!(!violation.rule_id.is_empty() && !violation.message.is_empty());
            assert!(
                violation.field_path.starts_with("spec."),
                "a spec's violation names a field under spec: {violation}"
            );
        }
    }
    let binary = VirtualHostSpec::decode(spec.encode_to_vec().as_slice()).expect("an encoded spec decodes");
    assert_eq!(
        binary.validate(),
        verdict,
        "the binary form is judged otherwise: {spec:?}"
    );
    // An enum number the API does not define has no JSON form.
    let json = serde_json::to_value(spec).ok();
    if let Some(read) = json.and_then(|json| serde_json::from_value::<VirtualHostSpec>(json).ok()) {
        assert_eq!(read.validate(), verdict, "the JSON form is judged otherwise: {spec:?}");
    }
}
