//! Test only: the rule-kinds test API (`xtask/tests/proto`), as `cargo xtask
//! codegen` generates it into `generated/` here. The tests in `tests/` judge
//! it with the three judges: this crate's validator, the CRD offline, and
//! protovalidate.

/// The runtimes the generated code calls as `crate::validate` and
/// `crate::kubernetes_json`: aether-api's own.
pub use aether_api::{kubernetes_json, validate};

/// The CRD generated for the test API.
pub const CRD_YAML: &str = include_str!("../generated/crds/rulekinds.rulekinds.test.aether.io.yaml");

/// The test API's descriptors as written (edition 2024), for protovalidate.
pub const DESCRIPTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/generated/descriptors/aether.binpb");

/// The same, lowered to proto3, for prost-reflect.
pub const PROTO3_DESCRIPTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/generated/descriptors/aether.proto3.binpb");

/// The `aether.rulekinds` proto package.
pub mod rulekinds {
    /// `aether.rulekinds.v1`.
    pub mod v1 {
        include!("../generated/rust/aether.rulekinds.v1.rs");
        include!("../generated/rust/aether.rulekinds.v1.serde.rs");
        include!("../generated/rust/aether.rulekinds.v1.validate.rs");
    }
}
