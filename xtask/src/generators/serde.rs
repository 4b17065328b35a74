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
//!   instead of pbjson impls;
//! - a plain error for a second member of a oneof: pbjson calls it a
//!   "duplicate field" named after that member, which reads as if the key
//!   were written twice ([`reword_oneof_duplicates`]);
//! - numbers read with one visitor (`crate::kubernetes_json::Number`),
//!   taking what pbjson's `NumberDeserialize` takes without building an
//!   error for every plain number ([`NUMBER`]).

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
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
            let plain_scalar = !matches!(field.r#type(), Type::Message | Type::Group | Type::Enum | Type::Bytes)
                && field.label() != Label::Repeated
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
    // Maps are BTreeMaps, as prost-build is told (see prost.rs).
    builder.btree_map(["."]);
    builder.exclude(derived.iter().map(|d| d.name.clone()));
    builder.exclude(enums.iter().map(|(name, _, _)| name.clone()));

    let packages: Vec<_> = api.set.file.iter().map(|f| format!(".{}", f.package())).collect();
    let written = builder
        .generate(&packages, |_| Ok(Vec::<u8>::new()))
        .context("pbjson-build")?;

    let mut files = Vec::new();
    for (package, code) in written {
        let package = package.to_string();
        let mut code = String::from_utf8(code)
            .context("pbjson wrote invalid UTF-8")?
            .replace(NUMBER.0, NUMBER.1);
        for (name, rust_path, enumeration) in &enums {
            if name.starts_with(&format!(".{package}.")) {
                code.push_str(&enum_impls(name, rust_path, enumeration)?);
            }
        }
        let mut parsed = syn::parse_file(&code).context("parsing pbjson's output")?;
        reword_oneof_duplicates(&mut parsed, api, &package)?;
        let formatted = prettyplease::unparse(&parsed);
        files.push((
            format!("{package}.serde.rs"),
            format!("{RUST_HEADER}{formatted}").into_bytes(),
        ));
    }
    files.sort();
    Ok(files)
}

/// pbjson's reader of numbers, and ours in its place (see the module's note).
const NUMBER: (&str, &str) = ("::pbjson::private::NumberDeserialize", "crate::kubernetes_json::Number");

/// Rewords pbjson's error for a second member of a oneof, in the
/// Deserialize impls of `package`'s messages: `duplicate field `exact``
/// becomes "only one of `prefix`, `exact`, `regex` may be set (oneof `path`)".
/// The rewrite works on pbjson's syntax tree, so it fails codegen, naming
/// the member, if pbjson ever stops writing the call it replaces.
fn reword_oneof_duplicates(code: &mut syn::File, api: &ApiFiles, package: &str) -> Result<()> {
    use heck::ToSnakeCase;
    use syn::visit_mut::VisitMut;

    /// Replaces `serde::de::Error::duplicate_field("<member>")` calls.
    struct Reword<'a> {
        /// JSON name of a member → its error message, and whether it was used.
        members: &'a mut Vec<(String, String, bool)>,
    }
    impl VisitMut for Reword<'_> {
        fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
            syn::visit_mut::visit_expr_mut(self, expr);
            let syn::Expr::Call(call) = expr else { return };
            let syn::Expr::Path(function) = call.func.as_ref() else {
                return;
            };
            let is_duplicate_field = function
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "duplicate_field");
            let [
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(member),
                    ..
                }),
            ] = call.args.iter().collect::<Vec<_>>()[..]
            else {
                return;
            };
            if !is_duplicate_field {
                return;
            }
            if let Some((_, message, used)) = self.members.iter_mut().find(|(json, ..)| *json == member.value()) {
                *used = true;
                *expr = syn::parse_quote!(serde::de::Error::custom(#message));
            }
        }
    }

    let scope = format!(".{package}.");
    for (name, message) in api.messages() {
        let Some(relative) = name.strip_prefix(&scope) else {
            continue;
        };
        // `.pkg.Outer.Inner` is written `outer::Inner` in the package's module.
        let mut parts: Vec<String> = relative.split('.').map(str::to_owned).collect();
        let last = parts.len() - 1;
        for part in &mut parts[..last] {
            *part = part.to_snake_case();
        }
        let rust_path = parts.join("::");

        let mut members = Vec::new();
        for (index, oneof) in message.oneof_decl.iter().enumerate() {
            let fields: Vec<_> = message
                .field
                .iter()
                .filter(|f| f.oneof_index == Some(index as i32) && !f.proto3_optional())
                .collect();
            if fields.is_empty() {
                continue; // the synthetic oneof of a proto3 `optional` field
            }
            let listed = fields
                .iter()
                .map(|f| format!("`{}`", f.json_name()))
                .collect::<Vec<_>>()
                .join(", ");
            for field in &fields {
                let text = format!("only one of {listed} may be set (oneof `{}`)", oneof.name());
                members.push((field.json_name().to_owned(), text, false));
            }
        }
        if members.is_empty() {
            continue;
        }
        for item in &mut code.items {
            let syn::Item::Impl(item) = item else { continue };
            let implements_deserialize = item
                .trait_
                .as_ref()
                .and_then(|(_, path, _)| path.segments.last())
                .is_some_and(|s| s.ident == "Deserialize");
            let syn::Type::Path(self_type) = item.self_ty.as_ref() else {
                continue;
            };
            let self_path = self_type
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect::<Vec<_>>()
                .join("::");
            if implements_deserialize && self_path == rust_path {
                Reword { members: &mut members }.visit_item_impl_mut(item);
            }
        }
        if let Some((json, ..)) = members.iter().find(|(.., used)| !used) {
            bail!(
                "{name}: pbjson no longer writes `duplicate_field(\"{json}\")` for this oneof member; \
                 update reword_oneof_duplicates in xtask/src/generators/serde.rs"
            );
        }
    }
    Ok(())
}

/// Serialize and Deserialize for one enum, in the Kubernetes form.
fn enum_impls(name: &str, rust_path: &str, enumeration: &prost_types::EnumDescriptorProto) -> Result<String> {
    let prefix = crate::rules::names::enum_value_prefix(enumeration.name());
    let mut short_names = Vec::new();
    let mut numbers = Vec::new();
    for value in &enumeration.value {
        let Some(short) = crate::rules::names::short_value_name(enumeration.name(), value.name()) else {
            bail!(
                "{name}: value {} lacks the prefix {prefix}; the Kubernetes form writes values \
                 without it, so every value must carry it (buf lint ENUM_VALUE_PREFIX)",
                value.name()
            );
        };
        short_names.push(format!("{short:?}"));
        numbers.push(value.number().to_string());
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
        crate::kubernetes_json::deserialize_enum(deserializer, {prefix:?}, &[{names}], &[{numbers}], Self::from_str_name)
    }}
}}
"#,
        names = short_names.join(", "),
        numbers = numbers.join(", ")
    ))
}
