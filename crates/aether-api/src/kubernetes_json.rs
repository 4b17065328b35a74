//! Helpers for the generated serde impls' Kubernetes JSON form: what pbjson
//! lacks (see xtask/src/generators/serde.rs). Not a public API.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};

/// Writes an enum value without its type prefix: `KUBERNETES` for
/// `SECRET_PROVIDER_KUBERNETES`.
pub fn serialize_enum<S: Serializer>(
    full_name: &str,
    prefix: &str,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(full_name.strip_prefix(prefix).unwrap_or(full_name))
}

/// Reads an enum value by its short name or its full proto name. Numbers are
/// not accepted: the Kubernetes form is names only.
pub fn deserialize_enum<'de, D, E>(
    deserializer: D,
    prefix: &str,
    short_names: &'static [&'static str],
    from_full_name: fn(&str) -> Option<E>,
) -> Result<E, D::Error>
where
    D: Deserializer<'de>,
{
    let name = String::deserialize(deserializer)?;
    let full = if name.starts_with(prefix) {
        name.clone()
    } else {
        format!("{prefix}{name}")
    };
    from_full_name(&full).ok_or_else(|| D::Error::unknown_variant(&name, short_names))
}

/// Whether a field holds its default value, which the Kubernetes form omits.
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
