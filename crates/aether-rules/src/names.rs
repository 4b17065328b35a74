//! The names the Kubernetes JSON form writes for enum values: the proto's
//! name without the enum's own prefix (`KUBERNETES` for
//! `SECRET_PROVIDER_KUBERNETES` of `SecretProvider`). The serde code, the
//! CRD, its descriptions and the test generators all write these; and the
//! UpperCamelCase names of the values that name conditions.

use heck::{ToShoutySnakeCase as _, ToUpperCamelCase as _};

/// The prefix every value of enum `enum_name` carries (`SECRET_PROVIDER_`
/// of `SecretProvider`, buf lint's ENUM_VALUE_PREFIX), which the Kubernetes
/// form drops.
pub fn enum_value_prefix(enum_name: &str) -> String {
    format!("{}_", enum_name.to_shouty_snake_case())
}

/// The name a condition carries for value `value_name` of enum
/// `enum_name`: UpperCamelCase after the prefix (`HostConflict` for
/// `ACCEPTED_REASON_HOST_CONFLICT`); `None` without the prefix.
pub fn condition_name(enum_name: &str, value_name: &str) -> Option<String> {
    short_value_name(enum_name, value_name)
        .filter(|rest| !rest.is_empty())
        .map(|rest| rest.to_upper_camel_case())
}

/// The Kubernetes name of value `value_name` of enum `enum_name`; `None`
/// when the value lacks the enum's prefix.
pub fn short_value_name<'a>(enum_name: &str, value_name: &'a str) -> Option<&'a str> {
    value_name.strip_prefix(&enum_value_prefix(enum_name))
}
