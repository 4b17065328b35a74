//! Objects from manifest text held in memory (a test's, a tool's):
//! [`parse_manifests`].

use std::path::Path;

#[cfg(doc)]
use aether_api::object::DEFAULT_NAMESPACE;
use aether_api::object::VirtualHostObject;

use crate::{Error, Input, Limits};

/// Parses `VirtualHost` manifests (`apiVersion: config.aether.io/v1`) from
/// YAML or JSON text, with the reader (and the limits) `aetherctl` uses:
/// documents separated by `---`, `kind: List` items one by one, a missing
/// `metadata.namespace` read as [`DEFAULT_NAMESPACE`], unknown fields in
/// `spec` errors naming their path, a second copy of an object an error.
/// The first error found is returned (its file named `manifest`).
///
/// Only the form is checked here: a value that does not decode is a
/// problem of its object ([`VirtualHostObject::read_problems`]), and the API's
/// rules are checked by whoever judges the objects (the projection reports
/// rule-breaking objects rather than failing).
///
/// ```
/// let objects = aether_manifests::parse_manifests(
///     "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api}\n\
///      spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: svc-web}}]}\n",
/// ).unwrap();
/// assert_eq!(objects[0].key().to_string(), "default/api");
/// ```
pub fn parse_manifests(text: &str) -> Result<Vec<VirtualHostObject>, Error> {
    let input = Input::Bytes {
        name: Path::new("manifest"),
        bytes: text.as_bytes(),
    };
    let load = crate::read(input, &Limits::default()).first_copies();
    match load.errors.into_iter().next() {
        Some(err) => Err(err),
        None => Ok(load.objects.into_iter().map(|loaded| loaded.object).collect()),
    }
}
