//! The invariants of the fuzz targets in `fuzz/`, one function per target.
//!
//! Each function takes the raw fuzz input, drives the code under test with it
//! and panics when an invariant breaks; not crashing is only the first of
//! them. The libFuzzer targets are one-line wrappers around these, and the
//! stable test `tests/replay.rs` runs every file of `fuzz/corpus/<target>/`
//! and `fuzz/regressions/<target>/` through the same functions, so CI checks
//! the corpus without nightly or cargo-fuzz.
//!
//! Each returns an [`Outcome`], so that the replay can tell that its inputs
//! reach past decoding (a corpus that only exercised error paths would check
//! almost nothing).

use aether_api::config::v1::VirtualHostSpec;
use aether_api::object::{Judged, Reading, VirtualHostObject};
use aether_api::validate::Validate;

mod actions;
mod admission;
mod consistency;
mod forms;
mod projection;
mod re2_guard;
mod seeds;
pub mod structured;

pub use admission::{OWNED_HOSTS, admission_review};
pub use consistency::{validate_is_consistent, validate_structured};
pub use forms::{binary_spec, has_unknown_enum, kubernetes_json, proto_json, spec_round_trips, status_round_trips};
pub use projection::projection;
pub use re2_guard::{re2_guard, re2_parity};
pub use seeds::{Seed, seeds};

/// How far an input got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Rejected by the decoder (cleanly: no panic).
    Rejected,
    /// Decoded, and every invariant on the decoded value held.
    Decoded,
}

/// A fuzz target: its name (the folder under `fuzz/corpus/`) and its check.
pub struct Target {
    /// As in `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
    pub name: &'static str,
    /// Runs one input through the target's invariants.
    pub check: fn(&[u8]) -> Outcome,
}

/// Every target, for the replay test and the seed writer.
pub const TARGETS: &[Target] = &[
    Target {
        name: "binary_spec",
        check: binary_spec,
    },
    Target {
        name: "kubernetes_json",
        check: kubernetes_json,
    },
    Target {
        name: "proto_json",
        check: proto_json,
    },
    Target {
        name: "manifest_yaml",
        check: manifest_yaml,
    },
    Target {
        name: "validate_structured",
        check: validate_structured,
    },
    Target {
        name: "projection",
        check: projection,
    },
    Target {
        name: "admission_review",
        check: admission_review,
    },
    Target {
        name: "re2_guard",
        check: re2_guard,
    },
    Target {
        name: "re2_parity",
        check: re2_parity,
    },
];

/// The manifest reader (aether-manifests, as aetherctl and the local modes
/// use it) on one YAML file of any number of documents, then its VirtualHost
/// decoding and validation, as `aetherctl validate` does.
pub fn manifest_yaml(data: &[u8]) -> Outcome {
    use aether_manifests::{Limits, parse};

    let limits = Limits::default();
    let file = std::path::Path::new("fuzz.yaml");
    let documents = match parse(file, data, &limits) {
        Ok(documents) => documents,
        Err(e) => {
            assert_eq!(e.file, file, "an error names its file");
            assert!(!e.message.is_empty(), "an error says what is wrong");
            return Outcome::Rejected;
        }
    };
    assert!(!documents.is_empty(), "a file read without error holds a document");
    assert!(documents.len() <= limits.max_documents, "the document limit holds");
    let mut decoded = false;
    for (index, document) in documents.iter().enumerate() {
        assert_eq!(document.index, index, "documents are numbered in order");
        assert!(!document.value.is_null(), "empty documents are skipped");
        let Ok(object) = VirtualHostObject::from_value(document.value.clone(), Reading::Strict) else {
            continue;
        };
        decoded = true;
        assert!(!object.name.is_empty() && !object.namespace.is_empty());
        spec_round_trips(&object.spec);
        validate_is_consistent(&object.spec);
        if let Some(status) = &object.status {
            status_round_trips(status);
            let _ = status.validate();
        }
        // The spec as the reader saw it is the spec its JSON reads back as,
        // when every value decoded; otherwise, the object is invalid.
        let spec_json = document.value["spec"].clone();
        if object.read_problems.is_empty() {
            let reread: VirtualHostSpec = serde_json::from_value(spec_json).expect("a decoded spec decodes again");
            assert_eq!(reread, *object.spec);
        } else {
            assert!(
                !object.problems(Judged::Whole).is_empty(),
                "an object with problems is invalid"
            );
        }
    }
    if decoded { Outcome::Decoded } else { Outcome::Rejected }
}
