//! [`VirtualHost`](crate::config::v1::VirtualHost), the kube custom resource,
//! and the schemas kube reads through [`schemars::JsonSchema`].
//!
//! kube-derive is told `schema = "manual"` (see the `kube(...)` attributes the
//! xtask puts on `VirtualHostSpec`), so the schema in `VirtualHost::crd()` is
//! the one `cargo xtask codegen` mapped from the buf.validate rules
//! (`generated/crds/virtualhost.schema.json`), returned by the impls below.
//! Why not schemars' derive on the structs: it would describe the Rust
//! fields (snake_case, `Option`, integer enums), not the Kubernetes JSON form
//! the serde impls read, and would carry none of the proto's rules. Why the
//! whole root rather than spec and status separately: kube then writes the
//! root schema exactly as generated, so `crd()` and the checked-in YAML are
//! the same document, which a test proves.

use std::borrow::Cow;
use std::sync::LazyLock;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::config::v1::{VirtualHost, VirtualHostSpec, VirtualHostStatus};

/// The `openAPIV3Schema` of the CRD, as generated.
static OPEN_API_SCHEMA: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../generated/crds/virtualhost.schema.json"))
        .expect("cargo xtask codegen writes valid JSON")
});

/// A generated (sub)schema as a schemars [`Schema`].
fn schema_at(pointer: &str) -> Schema {
    let value = OPEN_API_SCHEMA
        .pointer(pointer)
        .cloned()
        .expect("the generated schema has spec and status");
    Schema::try_from(value).expect("every generated schema node is an object")
}

impl JsonSchema for VirtualHost {
    fn schema_name() -> Cow<'static, str> {
        super::config::v1::KIND.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schema_at("")
    }
}

/// `.spec` of the generated schema, for embedding the spec elsewhere.
impl JsonSchema for VirtualHostSpec {
    fn inline_schema() -> bool {
        // A structural schema has no `$ref`: always inline.
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "VirtualHostSpec".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schema_at("/properties/spec")
    }
}

/// `.status` of the generated schema.
impl JsonSchema for VirtualHostStatus {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "VirtualHostStatus".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schema_at("/properties/status")
    }
}
