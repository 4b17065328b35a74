//! The names the Kubernetes JSON form writes for enum values: the proto's
//! name without the enum's own prefix (`KUBERNETES` for
//! `SECRET_PROVIDER_KUBERNETES` of `SecretProvider`). The serde code, the
//! CRD, its descriptions and the test generators all write these.

use heck::ToShoutySnakeCase as _;

/// The prefix every value of enum `enum_name` carries (`SECRET_PROVIDER_`
/// of `SecretProvider`, buf lint's ENUM_VALUE_PREFIX), which the Kubernetes
/// form drops.
pub fn enum_value_prefix(enum_name: &str) -> String {
    format!("{}_", enum_name.to_shouty_snake_case())
}

/// The Kubernetes name of value `value_name` of enum `enum_name`; `None`
/// when the value lacks the enum's prefix.
pub fn short_value_name<'a>(enum_name: &str, value_name: &'a str) -> Option<&'a str> {
    value_name.strip_prefix(&enum_value_prefix(enum_name))
}
