//! Typed `VirtualHost` (`config.aether.io/v1`) API: L7 path routing at the
//! edge of the mesh.
//!
//! The types are generated from `api/aether/config/v1/virtual_host.proto`
//! (edition 2024) by `cargo xtask codegen` and checked in, so depending on
//! this crate needs neither protoc nor buf.
//!
//! ```
//! use aether_api::config::v1::{VirtualHostSpec, route_match::Path};
//!
//! # #[cfg(feature = "serde")] {
//! let spec: VirtualHostSpec = serde_json::from_str(r#"{
//!     "hosts": ["api.example.com"],
//!     "routes": [{"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}}],
//!     "tls": {"secretName": "example-tls", "provider": "KUBERNETES"}
//! }"#).unwrap();
//! assert_eq!(spec.routes[0].r#match.as_ref().unwrap().path, Some(Path::Prefix("/users".into())));
//! # }
//! ```
//!
//! # Features
//! - `serde` (default): serde impls in the Kubernetes JSON form, the form
//!   manifests are written in: lowerCamelCase names, oneof members flattened
//!   (`match: {prefix: /users}`), enum values without their type prefix
//!   (`provider: KUBERNETES`; the full proto name is accepted on input),
//!   absent fields omitted, unknown fields rejected by name.
//! - `reflect`: [`prost_reflect::ReflectMessage`] on every message, the
//!   descriptor pool, and the canonical proto3 JSON form ([`reflect`]).
//! - `kube` (implies `serde`): `config::v1::VirtualHost`, the kube
//!   `CustomResource` whose spec is `VirtualHostSpec` and status
//!   `VirtualHostStatus`, and `VirtualHost::crd()`, equal to the generated
//!   `generated/crds/virtualhosts.config.aether.io.yaml`. Its schema is the
//!   generated one (see `src/custom_resource.rs`). Like every library using
//!   k8s-openapi, this crate picks no Kubernetes version: enable one
//!   `k8s-openapi/v1_*` feature in your application.
//!
//! ```
//! # #[cfg(feature = "kube")] {
//! use aether_api::config::v1::{VirtualHost, VirtualHostSpec};
//! use kube::{CustomResourceExt, Resource};
//!
//! let spec: VirtualHostSpec = serde_json::from_value(serde_json::json!({
//!     "hosts": ["api.example.com"],
//!     "routes": [{"match": {"exact": "/healthz"}, "backend": {"service": "svc-health"}}]
//! })).unwrap();
//! let host = VirtualHost::new("api", spec);
//! assert_eq!(VirtualHost::api_version(&()), "config.aether.io/v1");
//! assert_eq!(serde_json::to_value(&host).unwrap()["kind"], "VirtualHost");
//!
//! let crd = VirtualHost::crd();
//! assert_eq!(crd.spec.names.short_names, Some(vec!["vh".to_owned()]));
//! # }
//! ```
//! - `tolerant` (implies `serde`): reading objects a newer writer made
//!   ([`tolerant`]): fields and enum values this build does not know are set
//!   aside and named instead of failing the whole object.
//! - `validate`: `validate()` on every message ([`validate::Validate`]),
//!   reporting every broken buf.validate rule of the proto with its
//!   protovalidate rule id and a Kubernetes-form field path
//!   (`spec.routes[2].match.prefix`).
//! - `object` (implies `serde` and `validate`): [`object::VirtualHostObject`],
//!   one object as its readers and consumers hold it.
//!
//! The API reference, every field with its rules in words:
//! `generated/docs/virtualhost.md` in the repository.
//!
// The items of a feature exist only with it: without it, its links lead to
// the list above rather than nowhere (rustdoc refuses a link to nothing).
#![cfg_attr(feature = "reflect", doc = "[`reflect`]: crate::reflect")]
#![cfg_attr(not(feature = "reflect"), doc = "[`reflect`]: #features")]
#![cfg_attr(
    feature = "reflect",
    doc = "[`prost_reflect::ReflectMessage`]: prost_reflect::ReflectMessage"
)]
#![cfg_attr(not(feature = "reflect"), doc = "[`prost_reflect::ReflectMessage`]: #features")]
#![cfg_attr(feature = "tolerant", doc = "[`tolerant`]: crate::tolerant")]
#![cfg_attr(not(feature = "tolerant"), doc = "[`tolerant`]: #features")]
#![cfg_attr(feature = "validate", doc = "[`validate::Validate`]: crate::validate::Validate")]
#![cfg_attr(not(feature = "validate"), doc = "[`validate::Validate`]: #features")]
#![cfg_attr(
    feature = "object",
    doc = "[`object::VirtualHostObject`]: crate::object::VirtualHostObject"
)]
#![cfg_attr(not(feature = "object"), doc = "[`object::VirtualHostObject`]: #features")]
// docs.rs builds with every feature and `--cfg docsrs` (Cargo.toml): each
// item of a feature is marked with it there.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

/// The `aether.config` proto package.
pub mod config {
    /// `aether.config.v1`: the VirtualHost API, version 1.
    pub mod v1 {
        include!("../generated/rust/aether.config.v1.rs");
        include!("../generated/rust/aether.config.v1.conditions.rs");
        #[cfg(feature = "serde")]
        include!("../generated/rust/aether.config.v1.serde.rs");
        #[cfg(feature = "validate")]
        include!("../generated/rust/aether.config.v1.validate.rs");
        #[cfg(feature = "validate")]
        include!("../generated/rust/aether.config.v1.regexes.rs");
    }
}

#[cfg(feature = "serde")]
#[doc(hidden)]
pub mod kubernetes_json;

#[cfg(feature = "reflect")]
#[cfg_attr(docsrs, doc(cfg(feature = "reflect")))]
pub mod reflect;

#[cfg(feature = "tolerant")]
#[cfg_attr(docsrs, doc(cfg(feature = "tolerant")))]
pub mod tolerant;

#[cfg(feature = "kube")]
mod custom_resource;
#[cfg(feature = "validate")]
#[cfg_attr(docsrs, doc(cfg(feature = "validate")))]
pub mod validate;

#[cfg(feature = "validate")]
#[cfg_attr(docsrs, doc(cfg(feature = "validate")))]
pub mod regexes;

#[cfg(feature = "object")]
#[cfg_attr(docsrs, doc(cfg(feature = "object")))]
pub mod object;

mod object_key;
pub use object_key::ObjectKey;

pub mod precedence;

/// The VirtualHost CustomResourceDefinition (YAML), generated from the proto:
/// what `kubectl apply -f` installs. Needs no feature.
pub const CRD_YAML: &str = include_str!("../generated/crds/virtualhosts.config.aether.io.yaml");
