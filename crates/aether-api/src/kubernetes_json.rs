//! Helpers for the generated serde impls' Kubernetes JSON form: what pbjson
//! lacks (see xtask/src/generators/serde.rs). Not a public API.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{IntoDeserializer, Visitor};
use serde::{Deserialize, Deserializer, Serializer};

/// Writes an enum value without its type prefix: `KUBERNETES` for
/// `SECRET_PROVIDER_KUBERNETES`.
pub fn serialize_enum<S: Serializer>(full_name: &str, prefix: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(full_name.strip_prefix(prefix).unwrap_or(full_name))
}

/// Reads an enum value by its short name or its full proto name. Numbers are
/// not accepted: the Kubernetes form is names only. `numbers` pairs each
/// short name with its value's number (the generator writes both), so a
/// short name is found without building its full name.
pub fn deserialize_enum<'de, D, E>(
    deserializer: D,
    prefix: &'static str,
    short_names: &'static [&'static str],
    numbers: &'static [i32],
    from_full_name: fn(&str) -> Option<E>,
) -> Result<E, D::Error>
where
    D: Deserializer<'de>,
    E: TryFrom<i32>,
{
    deserializer.deserialize_str(EnumName {
        prefix,
        short_names,
        numbers,
        from_full_name,
    })
}

struct EnumName<E> {
    prefix: &'static str,
    short_names: &'static [&'static str],
    numbers: &'static [i32],
    from_full_name: fn(&str) -> Option<E>,
}

impl<E: TryFrom<i32>> Visitor<'_> for EnumName<E> {
    type Value = E;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<Error: serde::de::Error>(self, name: &str) -> Result<E, Error> {
        let value = if name.starts_with(self.prefix) {
            (self.from_full_name)(name)
        } else {
            self.short_names
                .iter()
                .zip(self.numbers)
                .find(|(short, _)| **short == name)
                .and_then(|(_, number)| E::try_from(*number).ok())
        };
        value.ok_or_else(|| Error::unknown_variant(name, self.short_names))
    }
}

/// Whether a field holds its default value, which the Kubernetes form omits.
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// A number as proto3 JSON reads one: a JSON number, or a string holding
/// one (`8080`, `"8080"`), taken where pbjson's `NumberDeserialize` would
/// take it. Ours because pbjson's buffers each value and tries it as a
/// string first, building (and formatting) an error for every plain
/// number: most of a spec's decoding time. One visitor reads either.
pub struct Number<T>(pub T);

impl<'de, T> Deserialize<'de> for Number<T>
where
    T: FromStr + Deserialize<'de>,
    T::Err: fmt::Display,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumberVisitor(PhantomData))
    }
}

struct NumberVisitor<T>(PhantomData<T>);

impl<'de, T> Visitor<'de> for NumberVisitor<T>
where
    T: FromStr + Deserialize<'de>,
    T::Err: fmt::Display,
{
    type Value = Number<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, or a string holding one")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        text.parse().map(Number).map_err(E::custom)
    }

    // Each number is handed to `T` as it is, which takes it or says why
    // not (out of range, a fraction where an integer belongs).
    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
        T::deserialize(value.into_deserializer()).map(Number)
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
        T::deserialize(value.into_deserializer()).map(Number)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
        T::deserialize(value.into_deserializer()).map(Number)
    }
}

#[cfg(test)]
mod tests {
    use super::Number;

    /// What pbjson's `NumberDeserialize` makes of `json`, and ours.
    fn both<T>(json: &str) -> (Option<T>, Option<T>)
    where
        T: std::str::FromStr + serde::de::DeserializeOwned,
        T::Err: std::error::Error + std::fmt::Display,
    {
        (
            serde_json::from_str::<pbjson::private::NumberDeserialize<T>>(json)
                .ok()
                .map(|n| n.0),
            serde_json::from_str::<Number<T>>(json).ok().map(|n| n.0),
        )
    }

    #[test]
    fn takes_what_pbjson_takes_and_nothing_else() {
        let inputs = [
            "8080",
            "\"8080\"",
            "\"+8\"",
            "0",
            "-1",
            "\"-1\"",
            "4294967295",
            "4294967296",
            "\"4294967296\"",
            "-2147483649",
            "9223372036854775808",
            "1.0",
            "1.5",
            "1e3",
            "\"1e3\"",
            "\"1.5\"",
            "\" 8\"",
            "\"\"",
            "true",
            "null",
            "[]",
            "{}",
            "\"x\"",
            "\"\\u0038\"",
        ];
        for json in inputs {
            let (theirs, ours) = both::<u32>(json);
            assert_eq!(theirs, ours, "u32 {json}");
            let (theirs, ours) = both::<i32>(json);
            assert_eq!(theirs, ours, "i32 {json}");
            let (theirs, ours) = both::<u64>(json);
            assert_eq!(theirs, ours, "u64 {json}");
            let (theirs, ours) = both::<f64>(json);
            assert_eq!(theirs, ours, "f64 {json}");
        }
        assert_eq!(both::<u32>("8080").1, Some(8080));
        assert_eq!(both::<u32>("\"8080\"").1, Some(8080));
    }

    #[test]
    fn an_enum_is_read_by_its_short_or_full_name_only() {
        use crate::config::v1::SecretProvider;
        let read = |json: &str| serde_json::from_str::<SecretProvider>(json).map_err(|e| e.to_string());
        for json in [
            r#""KUBERNETES""#,
            r#""SECRET_PROVIDER_KUBERNETES""#,
            r#""\u004bUBERNETES""#,
        ] {
            assert_eq!(read(json), Ok(SecretProvider::Kubernetes), "{json}");
        }
        assert_eq!(read(r#""AWS_SECRETS_MANAGER""#), Ok(SecretProvider::AwsSecretsManager));
        assert_eq!(read(r#""UNSPECIFIED""#), Ok(SecretProvider::Unspecified));
        for json in [r#""VAULT""#, r#""SECRET_PROVIDER_VAULT""#, r#""kubernetes""#, r#""""#] {
            let err = read(json).unwrap_err();
            assert!(
                err.contains("unknown variant")
                    && err.contains("expected one of `UNSPECIFIED`, `KUBERNETES`, `AWS_SECRETS_MANAGER`"),
                "{json}: {err}"
            );
        }
        for json in ["1", "null", "[]"] {
            let err = read(json).unwrap_err();
            assert!(err.contains("expected a string"), "{json}: {err}");
        }
    }

    #[test]
    fn says_why_a_number_is_refused() {
        let err = |json: &str| serde_json::from_str::<Number<u32>>(json).err().unwrap().to_string();
        assert!(
            err("4294967296").contains("invalid value: integer `4294967296`"),
            "{}",
            err("4294967296")
        );
        assert!(
            err("1.5").contains("invalid type: floating point `1.5`"),
            "{}",
            err("1.5")
        );
        assert!(
            err("true").contains("expected a number, or a string holding one"),
            "{}",
            err("true")
        );
        assert!(err("\"x\"").contains("invalid digit"), "{}", err("\"x\""));
    }
}
