//! Which lists are list maps (`x-kubernetes-list-type: map`) rather than
//! atomic lists.

use anyhow::{Result, ensure};
use prost_reflect::Kind;

use crate::rules::{Api, Field, Ignore};

/// The convention for Kubernetes conditions (as `metav1.Condition` lists
/// are declared): a repeated message field named `conditions` whose message
/// has a string field `type` is a list map keyed by `type`
/// (`x-kubernetes-list-type: map`), so the API server keeps one condition
/// per type and server-side apply merges conditions by type, not by
/// replacing the list. A structural schema needs each map key required (or
/// defaulted), so `type` must carry `(buf.validate.field).required`; without
/// it codegen fails rather than write a CRD the API server refuses.
pub(super) fn condition_key(field: &Field, api: &Api) -> Result<Option<&'static str>> {
    const KEY: &str = "type";
    let d = &field.descriptor;
    let Kind::Message(m) = d.kind() else { return Ok(None) };
    if !d.is_list() || d.name() != "conditions" {
        return Ok(None);
    }
    let Some(key) = api
        .message(m.full_name())
        .and_then(|m| m.fields.iter().find(|f| f.name() == KEY))
    else {
        return Ok(None);
    };
    if key.descriptor.kind() != Kind::String || key.descriptor.is_list() {
        return Ok(None);
    }
    ensure!(
        key.required && key.ignore != Ignore::Always,
        "field `{}`: a `conditions` list is a list map keyed by `{KEY}`, so `{}` must be \
         `(buf.validate.field).required` (a structural schema requires its map keys)",
        d.full_name(),
        key.descriptor.full_name()
    );
    Ok(Some(KEY))
}
