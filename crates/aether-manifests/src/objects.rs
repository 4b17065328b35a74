//! From documents to VirtualHost objects: each document decoded by
//! [`VirtualHostObject::from_value`], the one decoder of objects (see
//! `aether_api::object` for what is an object and what a problem of one).

use aether_api::object::DecodeError;
pub use aether_api::object::{
    DEFAULT_NAMESPACE, RULE_DECODE, RULE_ENUM, RULE_REQUIRED, RULE_TYPE, RULE_UNKNOWN_FIELD, RULE_UNSUPPORTED,
    SET_ASIDE_MORE, VirtualHostObject,
};
use serde_json::Value;

use crate::{Document, Reading};

pub use aether_api::config::v1::{API_VERSION, KIND};

/// The `apiVersion` and `kind` of a document that is a Kubernetes object of
/// another kind (see [`crate::OtherKinds`]): a mapping with both as
/// strings, whose kind is not `VirtualHost` and whose group (the part of
/// `apiVersion` before `/`; none for the core group's `v1`) is not this
/// API's. `None` for anything this reader must judge itself.
pub fn other_kind(document: &Value) -> Option<(&str, &str)> {
    let api_version = document.get("apiVersion")?.as_str()?;
    let kind = document.get("kind")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let ours = API_VERSION.rsplit_once('/').map_or("", |(group, _)| group);
    (kind != KIND && group != ours).then_some((api_version, kind))
}

/// Reads a VirtualHost from a document, strictly (see
/// [`VirtualHostObject::from_value`]).
pub fn decode(document: &Document) -> Result<VirtualHostObject, DecodeError> {
    decode_reading(document, Reading::Strict)
}

/// [`decode`], reading what a newer API version added as `reading` says
/// (see [`Reading`]).
pub fn decode_reading(document: &Document, reading: Reading) -> Result<VirtualHostObject, DecodeError> {
    VirtualHostObject::from_value(document.value.clone(), reading)
}
