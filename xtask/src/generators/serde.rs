//! `aether-serde`: serde impls in the Kubernetes JSON form.
//!
//! pbjson writes the messages: lowerCamelCase names, oneof members flattened,
//! absent fields omitted, unknown fields rejected by name. What it lacks for
//! Kubernetes objects, this module adds:
//!
//! - enum values without their type prefix (`KUBERNETES`, not
//!   `SECRET_PROVIDER_KUBERNETES`), the full name still accepted on input:
//!   each enum gets a small impl calling `crate::kubernetes_json`;
//! - 64-bit integers as JSON numbers (`observedGeneration: 3`), where proto3
//!   JSON writes strings: messages with such fields get `serde` derives
//!   (through prost-build attributes, see [`kubernetes_derived_messages`])
//!   instead of pbjson impls.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use heck::ToShoutySnakeCase;
use prost_types::field_descriptor_proto::{Label, Type};

use super::{ApiFiles, RUST_HEADER};

/// A message whose serde impls are derived, and the attributes that say how.
pub struct DerivedMessage {
    /// Fully qualified proto name, `.pkg.Message`.
    pub name: String,
    pub message_attributes: Vec<String>,
    /// (field name, attribute)
    pub field_attributes: Vec<(String, String)>,
}

/// Messages holding 64-bit integers, which Kubernetes writes as JSON numbers.
pub fn kubernetes_derived_messages(api: &ApiFiles) -> Result<Vec<DerivedMessage>> {
    let mut derived = Vec::new();
    for (name, message) in api.messages() {
        let has_64_bit = message.field.iter().any(|f| {
            matches!(
                f.r#type(),
                Type::Int64 | Type::Uint64 | Type::Sint64 | Type::Fixed64 | Type::Sfixed64
            )
        });
        if !has_64_bit {
            continue;
        }
        let mut field_attributes = Vec::new();
        for field in &message.field {
            let plain_scalar = !matches!(
                field.r#type(),
                Type::Message | Type::Group | Type::Enum | Type::Bytes
            ) && field.label() != Label::Repeated
                && field.oneof_index.is_none();
            if !plain_scalar {
                bail!(
                    "{name}.{}: a message with 64-bit integers may hold only singular scalars and \
                     strings, because its serde impls are derived rather than written by pbjson; \
                     extend xtask/src/generators/serde.rs to map this field",
                    field.name()
                );
            }
            let mut attribute = String::from(
                "#[cfg_attr(feature = \"serde\", serde(skip_serializing_if = \"crate::kubernetes_json::is_default\"",
            );
            if field.json_name() != field.name() {
                // Accept the proto field name too, as pbjson does.
                write!(attribute, ", alias = \"{}\"", field.name())?;
            }
            attribute.push_str("))]");
            field_attributes.push((field.name().to_owned(), attribute));
        }
        derived.push(DerivedMessage {
            name,
            message_attributes: vec![
                "#[cfg_attr(feature = \"serde\", derive(::serde::Serialize, ::serde::Deserialize))]".to_owned(),
                "#[cfg_attr(feature = \"serde\", serde(rename_all = \"camelCase\", deny_unknown_fields, default))]"
                    .to_owned(),
            ],
            field_attributes,
        });
    }
    Ok(derived)
}

pub fn generate(api: &ApiFiles, proto3_set: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let derived = kubernetes_derived_messages(api)?;
    let enums = api.enums();

    let mut builder = pbjson_build::Builder::new();
    builder
        .register_descriptors(proto3_set)
        .context("pbjson-build: registering descriptors")?;
    builder.exclude(derived.iter().map(|d| d.name.clone()));
    builder.exclude(enums.iter().map(|(name, _, _)| name.clone()));

    let packages: Vec<_> = api
        .set
        .file
        .iter()
        .map(|f| format!(".{}", f.package()))
        .collect();
    let written = builder
        .generate(&packages, |_| Ok(Vec::<u8>::new()))
        .context("pbjson-build")?;

    let mut files = Vec::new();
    for (package, code) in written {
        let package = package.to_string();
        let mut code = String::from_utf8(code).context("pbjson wrote invalid UTF-8")?;
        for (name, rust_path, enumeration) in &enums {
            if name.starts_with(&format!(".{package}.")) {
                code.push_str(&enum_impls(name, rust_path, enumeration)?);
            }
        }
        let parsed = syn::parse_file(&code).context("parsing pbjson's output")?;
        let formatted = prettyplease::unparse(&parsed);
        files.push((
            format!("{package}.serde.rs"),
            format!("{RUST_HEADER}{formatted}").into_bytes(),
        ));
    }
    files.sort();
    Ok(files)
}

/// Serialize and Deserialize for one enum, in the Kubernetes form.
fn enum_impls(
    name: &str,
    rust_path: &str,
    enumeration: &prost_types::EnumDescriptorProto,
) -> Result<String> {
    let prefix = format!("{}_", enumeration.name().to_shouty_snake_case());
    let mut short_names = Vec::new();
    for value in &enumeration.value {
        let Some(short) = value.name().strip_prefix(&prefix) else {
            bail!(
                "{name}: value {} lacks the prefix {prefix}; the Kubernetes form writes values \
                 without it, so every value must carry it (buf lint ENUM_VALUE_PREFIX)",
                value.name()
            );
        };
        short_names.push(format!("{short:?}"));
    }
    Ok(format!(
        r#"
impl serde::Serialize for {rust_path} {{
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {{
        crate::kubernetes_json::serialize_enum(self.as_str_name(), {prefix:?}, serializer)
    }}
}}
impl<'de> serde::Deserialize<'de> for {rust_path} {{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {{
        crate::kubernetes_json::deserialize_enum(deserializer, {prefix:?}, &[{names}], Self::from_str_name)
    }}
}}
"#,
        names = short_names.join(", ")
    ))
}
