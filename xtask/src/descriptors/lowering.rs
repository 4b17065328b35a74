//! Lowering edition-2024 descriptors to their proto3 equivalent.
//!
//! prost-build 0.14, pbjson-build 0.9, prost-reflect 0.16 and protox 0.10
//! reject `syntax = "editions"`. This module rewrites each editions file as
//! the proto3 file with the same meaning:
//!
//! 1. resolve each element's edition features and refuse, naming the
//!    element, any feature that proto3 cannot express (closed enums, delimited
//!    messages, legacy required, expanded repeated scalars, unverified UTF-8,
//!    legacy JSON), so no code is ever generated with silently wrong semantics;
//! 2. rewrite: `syntax = "proto3"`, no `edition`, and every singular scalar
//!    with explicit presence becomes a proto3 `optional` (a synthetic oneof
//!    named `_field`, after the real oneofs, as protoc writes them);
//! 3. verify the result independently (`prost_types`, prost-reflect).
//!
//! The rewrite works on prost-reflect dynamic messages typed by the
//! `google/protobuf/descriptor.proto` that protoc itself put in the set:
//! `prost_types` predates editions (no `features` fields) and drops unknown
//! fields, which would lose every buf.validate rule, while a dynamic message
//! keeps them byte for byte.
//!
//! Why not `prost_protovalidate::normalize_edition_descriptor_set`: it does
//! this rewrite at the wire level, but lowers closed enums, legacy required
//! and delimited fields to proto2-only constructs inside a proto3 file
//! instead of refusing them, and depending on it makes the xtask's own build
//! need a protoc (`prost-protovalidate-types` runs prost-build in its build
//! script).

use anyhow::{Context, Result, bail, ensure};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, ReflectMessage, Value};
use prost_types::FileDescriptorSet;

/// `google.protobuf.Edition` values we know the defaults of.
const EDITION_2023: i32 = 1000;
const EDITION_2024: i32 = 1001;

// `google.protobuf.FeatureSet` enum values (descriptor.proto).
const PRESENCE_EXPLICIT: i32 = 1;
const PRESENCE_IMPLICIT: i32 = 2;
const PRESENCE_LEGACY_REQUIRED: i32 = 3;
const ENUM_CLOSED: i32 = 2;
const REPEATED_EXPANDED: i32 = 2;
const UTF8_NONE: i32 = 3;
const MESSAGE_DELIMITED: i32 = 2;
const JSON_LEGACY_BEST_EFFORT: i32 = 2;

// `FieldDescriptorProto` label and type values.
const LABEL_REPEATED: i32 = 3;
const TYPE_GROUP: i32 = 10;
const TYPE_MESSAGE: i32 = 11;
const TYPE_STRING: i32 = 9;
const TYPE_BYTES: i32 = 12;

/// Lowers an encoded `FileDescriptorSet`; proto2/proto3 files pass unchanged.
pub fn lower(set: &[u8]) -> Result<Vec<u8>> {
    let schema = descriptor_schema(set)?;
    let mut set_message =
        DynamicMessage::decode(schema, set).context("decoding the descriptor set protoc wrote")?;

    let mut expected = Vec::new();
    for file in list_mut(&mut set_message, "file") {
        if string(file, "syntax") != "editions" {
            continue;
        }
        let name = string(file, "name");
        let edition = int(file, "edition");
        ensure!(
            edition == EDITION_2023 || edition == EDITION_2024,
            "{name}: edition {edition} is newer than the lowering knows; \
             check its feature defaults and extend xtask/src/descriptors/lowering.rs"
        );
        ensure!(
            list(file, "extension").is_empty(),
            "{name}: extensions in an editions file are not lowered; declare them in a proto2 file"
        );
        let features = Features::EDITION_DEFAULTS.merged(file);
        let package = string(file, "package");
        for enumeration in list(file, "enum_type") {
            check_enum(&enumeration, &package, features)?;
        }
        for message in list_mut(file, "message_type") {
            lower_message(message, &package, features, &mut expected)?;
        }
        file.set_field_by_name("syntax", Value::String("proto3".to_owned()));
        file.clear_field_by_name("edition");
    }

    let lowered = set_message.encode_to_vec();
    verify(&lowered, &expected)?;
    Ok(lowered)
}

/// The resolved value of each feature that decides whether proto3 can say it.
#[derive(Clone, Copy)]
struct Features {
    field_presence: i32,
    enum_type: i32,
    repeated_field_encoding: i32,
    utf8_validation: i32,
    message_encoding: i32,
    json_format: i32,
}

impl Features {
    /// Editions 2023 and 2024 share these defaults (descriptor.proto's
    /// `edition_defaults`); 2024 only adds naming and visibility features.
    const EDITION_DEFAULTS: Self = Self {
        field_presence: PRESENCE_EXPLICIT,
        enum_type: 1,
        repeated_field_encoding: 1,
        utf8_validation: 2,
        message_encoding: 1,
        json_format: 1,
    };

    /// These features overridden by `element.options.features`, where set.
    fn merged(mut self, element: &DynamicMessage) -> Self {
        let options = message(element, "options");
        let Some(set) = options.as_ref().and_then(|o| message(o, "features")) else {
            return self;
        };
        let take = |field: &str, slot: &mut i32| {
            if set.has_field_by_name(field) {
                *slot = int(&set, field);
            }
        };
        take("field_presence", &mut self.field_presence);
        take("enum_type", &mut self.enum_type);
        take("repeated_field_encoding", &mut self.repeated_field_encoding);
        take("utf8_validation", &mut self.utf8_validation);
        take("message_encoding", &mut self.message_encoding);
        take("json_format", &mut self.json_format);
        self
    }

    fn refuse_legacy_json(&self, what: &str) -> Result<()> {
        if self.json_format == JSON_LEGACY_BEST_EFFORT {
            bail!("{what}: features.json_format = LEGACY_BEST_EFFORT has no proto3 equivalent");
        }
        Ok(())
    }
}

/// What the lowered descriptor must say about one field.
struct ExpectedField {
    /// `package.Message.field`, for messages.
    path: String,
    /// Whether the field must be a proto3 `optional`.
    proto3_optional: bool,
}

fn lower_message(
    message_desc: &mut DynamicMessage,
    scope: &str,
    parent: Features,
    expected: &mut Vec<ExpectedField>,
) -> Result<()> {
    let path = format!("{scope}.{}", string(message_desc, "name"));
    let features = parent.merged(message_desc);
    features.refuse_legacy_json(&path)?;
    ensure!(
        list(message_desc, "extension").is_empty(),
        "{path}: extensions in an editions file are not lowered"
    );
    let real_oneofs = list(message_desc, "oneof_decl").len();
    let mut synthetic_oneofs = Vec::new();
    for field in list_mut(message_desc, "field") {
        let field_path = format!("{path}.{}", string(field, "name"));
        let f = features.merged(field);
        let label = int(field, "label");
        let kind = int(field, "type");
        let in_oneof = field.has_field_by_name("oneof_index");
        if f.field_presence == PRESENCE_LEGACY_REQUIRED {
            bail!(
                "{field_path}: features.field_presence = LEGACY_REQUIRED has no proto3 equivalent"
            );
        }
        if kind == TYPE_GROUP || (kind == TYPE_MESSAGE && f.message_encoding == MESSAGE_DELIMITED) {
            bail!(
                "{field_path}: features.message_encoding = DELIMITED (group encoding) has no proto3 equivalent"
            );
        }
        let packable = !matches!(kind, TYPE_STRING | TYPE_BYTES | TYPE_MESSAGE | TYPE_GROUP);
        if label == LABEL_REPEATED && packable && f.repeated_field_encoding == REPEATED_EXPANDED {
            bail!(
                "{field_path}: features.repeated_field_encoding = EXPANDED is not lowered; use the packed default"
            );
        }
        if kind == TYPE_STRING && f.utf8_validation == UTF8_NONE {
            bail!(
                "{field_path}: features.utf8_validation = NONE has no proto3 equivalent (proto3 strings are UTF-8); use bytes"
            );
        }
        f.refuse_legacy_json(&field_path)?;
        ensure!(
            matches!(f.field_presence, PRESENCE_EXPLICIT | PRESENCE_IMPLICIT),
            "{field_path}: unknown field_presence {}",
            f.field_presence
        );
        let proto3_optional = f.field_presence == PRESENCE_EXPLICIT
            && label != LABEL_REPEATED
            && kind != TYPE_MESSAGE
            && !in_oneof;
        if proto3_optional {
            let index = i32::try_from(real_oneofs + synthetic_oneofs.len())?;
            field.set_field_by_name("proto3_optional", Value::Bool(true));
            field.set_field_by_name("oneof_index", Value::I32(index));
            synthetic_oneofs.push(format!("_{}", string(field, "name")));
        }
        expected.push(ExpectedField {
            path: field_path,
            proto3_optional,
        });
    }
    if !synthetic_oneofs.is_empty() {
        let oneof_type = message_desc
            .descriptor()
            .get_field_by_name("oneof_decl")
            .and_then(|f| f.kind().as_message().cloned())
            .context("descriptor.proto has no DescriptorProto.oneof_decl")?;
        let taken: Vec<_> = list(message_desc, "oneof_decl")
            .iter()
            .map(|o| string(o, "name"))
            .collect();
        let oneofs = message_desc
            .get_field_by_name_mut("oneof_decl")
            .and_then(Value::as_list_mut)
            .context("DescriptorProto.oneof_decl is a list")?;
        for name in synthetic_oneofs {
            // protoc avoids clashes by prefixing `X`; we refuse, to stay simple and visible.
            ensure!(
                !taken.contains(&name),
                "{path}: a oneof is already named {name}"
            );
            let mut oneof = DynamicMessage::new(oneof_type.clone());
            oneof.set_field_by_name("name", Value::String(name));
            oneofs.push(Value::Message(oneof));
        }
    }
    for nested in list_mut(message_desc, "nested_type") {
        lower_message(nested, &path, features, expected)?;
    }
    for enumeration in list(message_desc, "enum_type") {
        check_enum(&enumeration, &path, features)?;
    }
    Ok(())
}

fn check_enum(enum_desc: &DynamicMessage, scope: &str, parent: Features) -> Result<()> {
    let path = format!("{scope}.{}", string(enum_desc, "name"));
    let features = parent.merged(enum_desc);
    features.refuse_legacy_json(&path)?;
    if features.enum_type == ENUM_CLOSED {
        bail!("{path}: features.enum_type = CLOSED (a closed enum) has no proto3 equivalent");
    }
    Ok(())
}

/// Checks the rewrite: proto3 everywhere, and each field's presence as expected.
fn verify(lowered: &[u8], expected: &[ExpectedField]) -> Result<()> {
    let set = FileDescriptorSet::decode(lowered).context("decoding the lowered descriptor set")?;
    let mut actual = Vec::new();
    for file in &set.file {
        ensure!(
            matches!(file.syntax(), "" | "proto2" | "proto3"),
            "{}: still syntax {:?} after lowering",
            file.name(),
            file.syntax()
        );
        if file.syntax() == "proto3" {
            for message in &file.message_type {
                collect_optional(message, file.package(), &mut actual);
            }
        }
    }
    for want in expected {
        let got = actual
            .iter()
            .find(|(path, _)| *path == want.path)
            .map(|(_, o)| *o);
        ensure!(
            got == Some(want.proto3_optional),
            "lowering is not faithful: {} should {}be proto3 optional, the rewrite says {got:?}",
            want.path,
            if want.proto3_optional { "" } else { "not " }
        );
    }
    DescriptorPool::decode(lowered).context("prost-reflect rejects the lowered descriptor set")?;
    Ok(())
}

fn collect_optional(
    message: &prost_types::DescriptorProto,
    scope: &str,
    out: &mut Vec<(String, bool)>,
) {
    let path = format!("{scope}.{}", message.name());
    for field in &message.field {
        out.push((format!("{path}.{}", field.name()), field.proto3_optional()));
    }
    for nested in &message.nested_type {
        collect_optional(nested, &path, out);
    }
}

/// The `google.protobuf.FileDescriptorSet` type, from the descriptor.proto in
/// `set` (protoc includes it whenever buf.validate is imported).
fn descriptor_schema(set: &[u8]) -> Result<MessageDescriptor> {
    let decoded = FileDescriptorSet::decode(set).context("decoding the descriptor set")?;
    let Some(descriptor_proto) = decoded
        .file
        .into_iter()
        .find(|f| f.name() == "google/protobuf/descriptor.proto")
    else {
        bail!(
            "the descriptor set lacks google/protobuf/descriptor.proto; compile with --include_imports"
        );
    };
    let pool = DescriptorPool::from_file_descriptor_set(FileDescriptorSet {
        file: vec![descriptor_proto],
    })
    .context("loading descriptor.proto")?;
    pool.get_message_by_name("google.protobuf.FileDescriptorSet")
        .context("descriptor.proto has no FileDescriptorSet")
}

fn list_mut<'a>(
    message: &'a mut DynamicMessage,
    field: &str,
) -> impl Iterator<Item = &'a mut DynamicMessage> {
    message
        .get_field_by_name_mut(field)
        .and_then(Value::as_list_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_message_mut)
}

fn list(message: &DynamicMessage, field: &str) -> Vec<DynamicMessage> {
    match message.get_field_by_name(field).as_deref() {
        Some(Value::List(items)) => items
            .iter()
            .filter_map(|v| v.as_message().cloned())
            .collect(),
        _ => Vec::new(),
    }
}

fn message(message: &DynamicMessage, field: &str) -> Option<DynamicMessage> {
    if !message.has_field_by_name(field) {
        return None;
    }
    message
        .get_field_by_name(field)
        .and_then(|v| v.as_message().cloned())
}

fn string(message: &DynamicMessage, field: &str) -> String {
    message
        .get_field_by_name(field)
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn int(message: &DynamicMessage, field: &str) -> i32 {
    match message.get_field_by_name(field).as_deref() {
        Some(Value::EnumNumber(n) | Value::I32(n)) => *n,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// Compiles one proto source with the vendored protoc and lowers it.
    fn lower_source(source: &str) -> Result<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("t")).unwrap();
        std::fs::write(dir.path().join("t/t.proto"), source).unwrap();
        // An import of descriptor.proto puts it in the set, as buf.validate does.
        let compiled = super::super::compile(dir.path(), &[PathBuf::from("t")], &[])?;
        Ok(compiled.proto3)
    }

    const HEADER: &str =
        "edition = \"2024\";\npackage t;\nimport \"google/protobuf/descriptor.proto\";\n";

    fn refusal(body: &str) -> String {
        match lower_source(&format!("{HEADER}{body}")) {
            Ok(_) => panic!("lowering accepted {body}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn explicit_presence_becomes_proto3_optional_and_implicit_does_not() {
        let lowered = lower_source(&format!(
            "{HEADER}message M {{\n  string a = 1;\n  string b = 2 [features.field_presence = IMPLICIT];\n  \
             M m = 3;\n  repeated int32 r = 4;\n  oneof o {{ string c = 5; }}\n}}\n"
        ))
        .unwrap();
        let set = FileDescriptorSet::decode(lowered.as_slice()).unwrap();
        let file = set.file.iter().find(|f| f.name() == "t.proto").unwrap();
        assert_eq!(file.syntax(), "proto3");
        let fields: Vec<_> = file.message_type[0]
            .field
            .iter()
            .map(|f| (f.name(), f.proto3_optional()))
            .collect();
        assert_eq!(
            fields,
            [
                ("a", true),
                ("b", false),
                ("m", false),
                ("r", false),
                ("c", false)
            ]
        );
        // The synthetic oneof for `a` follows the real one, as protoc orders them.
        let oneofs: Vec<_> = file.message_type[0]
            .oneof_decl
            .iter()
            .map(|o| o.name())
            .collect();
        assert_eq!(oneofs, ["o", "_a"]);
    }

    #[test]
    fn refuses_closed_enums_naming_them() {
        let err = refusal("enum E { option features.enum_type = CLOSED; E_UNSPECIFIED = 0; }\n");
        assert!(err.contains("t.E") && err.contains("CLOSED"), "{err}");
    }

    #[test]
    fn refuses_legacy_required_naming_the_field() {
        let err =
            refusal("message M { string s = 1 [features.field_presence = LEGACY_REQUIRED]; }\n");
        assert!(
            err.contains("t.M.s") && err.contains("LEGACY_REQUIRED"),
            "{err}"
        );
    }

    #[test]
    fn refuses_delimited_encoding() {
        let err = refusal("message M { M child = 1 [features.message_encoding = DELIMITED]; }\n");
        assert!(
            err.contains("t.M.child") && err.contains("DELIMITED"),
            "{err}"
        );
    }

    #[test]
    fn refuses_expanded_repeated_scalars() {
        let err = refusal(
            "message M { repeated int32 r = 1 [features.repeated_field_encoding = EXPANDED]; }\n",
        );
        assert!(err.contains("t.M.r") && err.contains("EXPANDED"), "{err}");
    }

    #[test]
    fn refuses_unverified_utf8_and_legacy_json() {
        let err = refusal("message M { string s = 1 [features.utf8_validation = NONE]; }\n");
        assert!(
            err.contains("t.M.s") && err.contains("utf8_validation"),
            "{err}"
        );
        let err = refusal(
            "message M { option features.json_format = LEGACY_BEST_EFFORT; string s = 1; }\n",
        );
        assert!(
            err.contains("t.M") && err.contains("LEGACY_BEST_EFFORT"),
            "{err}"
        );
    }

    #[test]
    fn a_file_level_closed_enum_default_is_inherited() {
        let err = refusal(
            "option features.enum_type = CLOSED;\nmessage M { enum Inner { INNER_UNSPECIFIED = 0; } }\n",
        );
        assert!(err.contains("t.M.Inner"), "{err}");
    }

    #[test]
    fn a_syntax_error_shows_protocs_file_line_col() {
        let err = refusal("message M { string s = ; }\n");
        assert!(err.contains("t/t.proto:4:"), "{err}");
    }
}
