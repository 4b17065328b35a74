//! Reading the rules model out of the lowered descriptors.

use std::collections::HashMap;

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::{DescriptorPool, DynamicMessage, ExtensionDescriptor, FieldDescriptor, MessageDescriptor, Value};

use super::cel::{CelRule, Type};
use super::standard::{self, NUMERIC_GROUPS};
use super::{Api, Enum, Field, Ignore, Message, MessageOneof, Oneof, ValueRules};

impl Api {
    /// Reads the API from a lowered descriptor set with source info, keeping
    /// the files named in `own_files`.
    pub fn load(proto3_with_docs: &[u8], own_files: &[String]) -> Result<Self> {
        let pool = DescriptorPool::decode(proto3_with_docs).context("loading the lowered descriptors")?;
        let extensions = Extensions::find(&pool)?;
        let mut api = Api {
            messages: Vec::new(),
            enums: Vec::new(),
        };
        for file in pool.files().filter(|f| own_files.iter().any(|own| own == f.name())) {
            let docs = Docs::of(file.file_descriptor_proto());
            for message in file.messages() {
                api.add_message(&message, &docs, &extensions)?;
            }
            for enumeration in file.enums() {
                api.enums.push(Enum::read(&enumeration, &docs, &extensions));
            }
        }
        Ok(api)
    }

    fn add_message(&mut self, descriptor: &MessageDescriptor, docs: &Docs, ext: &Extensions) -> Result<()> {
        if descriptor.is_map_entry() {
            // A map field's entry: its key and value are the field's.
            return Ok(());
        }
        let name = descriptor.full_name();
        let (cel, oneof_rules) = message_rules(descriptor, ext).with_context(|| format!("message {name}"))?;
        let mut fields = Vec::new();
        for field in descriptor.fields() {
            fields.push(Field::read(&field, docs, ext).with_context(|| field.full_name().to_owned())?);
        }
        let mut oneofs = Vec::new();
        for oneof in descriptor.oneofs().filter(|o| !o.is_synthetic()) {
            let options = oneof.options();
            let mut required = false;
            if options.has_extension(&ext.oneof) {
                for (rule, value) in options
                    .get_extension(&ext.oneof)
                    .as_message()
                    .into_iter()
                    .flat_map(|m| m.fields())
                {
                    match rule.name() {
                        "required" => required = value.as_bool() == Some(true),
                        other => bail!("{}: oneof rule `{other}` is not supported", oneof.full_name()),
                    }
                }
            }
            oneofs.push(Oneof {
                name: oneof.name().to_owned(),
                doc: docs.get(oneof.path()),
                required,
                fields: oneof.fields().map(|f| f.name().to_owned()).collect(),
            });
        }
        self.messages.push(Message {
            descriptor: descriptor.clone(),
            doc: docs.get(descriptor.path()),
            fields,
            oneofs,
            cel,
            oneof_rules,
        });
        for nested in descriptor.child_messages() {
            self.add_message(&nested, docs, ext)?;
        }
        for enumeration in descriptor.child_enums() {
            self.enums.push(Enum::read(&enumeration, docs, ext));
        }
        Ok(())
    }
}

/// `(buf.validate.message)`: CEL rules on the message and `oneof` rules.
fn message_rules(descriptor: &MessageDescriptor, ext: &Extensions) -> Result<(Vec<CelRule>, Vec<MessageOneof>)> {
    let mut cel = Vec::new();
    let mut oneofs = Vec::new();
    let options = descriptor.options();
    if !options.has_extension(&ext.message) {
        return Ok((cel, oneofs));
    }
    let value = options.get_extension(&ext.message);
    for (rule, value) in submessage(&value)?.fields() {
        match rule.name() {
            "cel" => cel = cel_rules(value, Type::Message(descriptor.clone()))?,
            "oneof" => {
                for oneof in value.as_list().context("oneof is a list")? {
                    let oneof = submessage(oneof)?;
                    let mut fields = Vec::new();
                    let mut required = false;
                    for (rule, value) in oneof.fields() {
                        match rule.name() {
                            "fields" => {
                                for name in value.as_list().context("fields is a list")? {
                                    let name = name.as_str().context("a field name")?;
                                    let field = descriptor.get_field_by_name(name).with_context(|| {
                                        format!("rule `oneof` names `{name}`, which is not a field of the message")
                                    })?;
                                    ensure!(!fields.contains(&field), "rule `oneof` names `{name}` twice");
                                    fields.push(field);
                                }
                            }
                            "required" => required = value.as_bool() == Some(true),
                            other => bail!("rule `oneof.{other}` is not supported by the generators"),
                        }
                    }
                    ensure!(!fields.is_empty(), "rule `oneof` names no fields");
                    oneofs.push(MessageOneof { fields, required });
                }
            }
            other => bail!("message rule `{other}` is not supported by the generators"),
        }
    }
    Ok((cel, oneofs))
}

impl Enum {
    fn read(descriptor: &prost_reflect::EnumDescriptor, docs: &Docs, ext: &Extensions) -> Self {
        let values = descriptor
            .values()
            .map(|v| (v.name().to_owned(), v.number(), docs.get(v.path())))
            .collect();
        let options = descriptor.options();
        let condition_names = ext.condition_names.as_ref().is_some_and(|option| {
            options.has_extension(option) && options.get_extension(option).as_bool() == Some(true)
        });
        Enum {
            full_name: descriptor.full_name().to_owned(),
            doc: docs.get(descriptor.path()),
            values,
            condition_names,
        }
    }
}

impl Field {
    fn read(descriptor: &FieldDescriptor, docs: &Docs, ext: &Extensions) -> Result<Self> {
        let mut field = Field {
            descriptor: descriptor.clone(),
            doc: docs.get(descriptor.path()),
            required: false,
            ignore: Ignore::Unspecified,
            rules: Vec::new(),
            cel: Vec::new(),
            items: None,
            keys: None,
            values: None,
            re2: false,
        };
        let options = descriptor.options();
        if let Some(re2) = ext.re2.as_ref().filter(|re2| options.has_extension(re2)) {
            field.re2 = options.get_extension(re2).as_bool() == Some(true);
            ensure!(
                !field.re2 || (descriptor.kind() == prost_reflect::Kind::String && !descriptor.is_map()),
                "({}) marks a field that is not a string or a list of strings",
                crate::RE2_OPTION
            );
        }
        if !options.has_extension(&ext.field) {
            return Ok(field);
        }
        let value = options.get_extension(&ext.field);
        let rules = value.as_message().context("buf.validate.field is a message")?;
        for (rule, value) in rules.fields() {
            match rule.name() {
                "required" => field.required = value.as_bool() == Some(true),
                "ignore" => {
                    field.ignore = match value.as_enum_number() {
                        Some(0) => Ignore::Unspecified,
                        Some(1) => Ignore::IfZeroValue,
                        Some(3) => Ignore::Always,
                        other => bail!("rule `ignore = {other:?}` is not supported by the generators"),
                    }
                }
                "cel" => field.cel = cel_rules(value, Type::of_field(descriptor))?,
                "repeated" if descriptor.is_list() => {
                    for (rule, value) in submessage(value)?.fields() {
                        match rule.name() {
                            "items" => {
                                let element = Type::of_kind(&descriptor.kind());
                                field.items = Some(value_rules(&element, submessage(value)?, "repeated.items.")?);
                            }
                            name => field.rules.extend(standard::repeated_rule(name, value)?),
                        }
                    }
                }
                "map" if descriptor.is_map() => {
                    let Type::Map(key, element) = Type::of_field(descriptor) else {
                        unreachable!("a map field has a map type")
                    };
                    for (rule, value) in submessage(value)?.fields() {
                        match rule.name() {
                            "keys" => field.keys = Some(value_rules(&key, submessage(value)?, "map.keys.")?),
                            "values" => field.values = Some(value_rules(&element, submessage(value)?, "map.values.")?),
                            name => field.rules.push(standard::map_rule(name, value)?),
                        }
                    }
                }
                "cel_expression" => bail!(
                    "rule `cel_expression` is not supported by the generators: write a `cel` rule with an id \
                     and a message"
                ),
                group if descriptor.is_list() || descriptor.is_map() => {
                    bail!("rule `{group}` on a repeated or map field: use `repeated.items` or `map.keys`/`map.values`")
                }
                group => {
                    check_group(&Type::of_kind(&descriptor.kind()), group, "")?;
                    field.rules = standard::read_group(group, submessage(value)?, "")?;
                }
            }
        }
        Ok(field)
    }
}

/// The `FieldRules` of each element, key or value of a list or map: its
/// type's rule group and CEL rules; `required` and `ignore` mean nothing there.
fn value_rules(ty: &Type, rules: &DynamicMessage, context: &str) -> Result<ValueRules> {
    let mut out = ValueRules::default();
    for (rule, value) in rules.fields() {
        match rule.name() {
            "cel" => out.cel = cel_rules(value, ty.clone())?,
            "required" | "ignore" | "cel_expression" => {
                bail!("rule `{context}{}` is not supported by the generators", rule.name())
            }
            group => {
                check_group(ty, group, context)?;
                out.rules = standard::read_group(group, submessage(value)?, context)?;
            }
        }
    }
    Ok(out)
}

/// Fails unless `group` is the rule group of values of type `ty`.
fn check_group(ty: &Type, group: &str, context: &str) -> Result<()> {
    let fits = match ty {
        Type::Enum(_) => group == "enum",
        Type::Bool => group == "bool",
        Type::String => group == "string",
        Type::Bytes => group == "bytes",
        Type::Int | Type::UInt | Type::Double => NUMERIC_GROUPS.contains(&group),
        _ => false,
    };
    ensure!(
        fits,
        "rule group `{context}{group}` does not fit a value of type {ty:?} (or is not supported by the generators)"
    );
    Ok(())
}

/// The CEL rules of one `cel` list, each parsed and typed with `this: this`.
fn cel_rules(value: &Value, this: Type) -> Result<Vec<CelRule>> {
    let list = value.as_list().context("cel is a list")?;
    list.iter()
        .map(|rule| {
            let rule = rule.as_message().context("a cel rule is a message")?;
            let text = |name: &str| {
                rule.get_field_by_name(name)
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            };
            let (id, message, expression) = (text("id"), text("message"), text("expression"));
            ensure!(!id.is_empty(), "a CEL rule needs an id: {expression:?}");
            ensure!(
                !message.is_empty(),
                "CEL rule {id} needs a message a person understands"
            );
            CelRule::new(id.clone(), message, expression, this.clone()).with_context(|| format!("CEL rule `{id}`"))
        })
        .collect()
}

fn submessage(value: &Value) -> Result<&DynamicMessage> {
    value.as_message().context("expected a rules message")
}

struct Extensions {
    field: ExtensionDescriptor,
    oneof: ExtensionDescriptor,
    message: ExtensionDescriptor,
    /// [`RE2_OPTION`](crate::RE2_OPTION), where the API declares it.
    re2: Option<ExtensionDescriptor>,
    /// [`CONDITION_NAMES_OPTION`](crate::CONDITION_NAMES_OPTION), likewise.
    condition_names: Option<ExtensionDescriptor>,
}

impl Extensions {
    fn find(pool: &DescriptorPool) -> Result<Self> {
        let get = |name: &str| {
            pool.get_extension_by_name(name).with_context(|| {
                format!("{name} is not in the descriptor set; is buf/validate/validate.proto imported?")
            })
        };
        Ok(Self {
            field: get("buf.validate.field")?,
            oneof: get("buf.validate.oneof")?,
            message: get("buf.validate.message")?,
            re2: pool.get_extension_by_name(crate::RE2_OPTION),
            condition_names: pool.get_extension_by_name(crate::CONDITION_NAMES_OPTION),
        })
    }
}

/// Leading comments by source path, trimmed of the comment markers' spacing.
struct Docs(HashMap<Vec<i32>, String>);

impl Docs {
    fn of(file: &prost_types::FileDescriptorProto) -> Self {
        let mut docs = HashMap::new();
        for location in file.source_code_info.iter().flat_map(|info| &info.location) {
            if let Some(comment) = &location.leading_comments {
                let text: Vec<_> = comment
                    .lines()
                    .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
                    .collect();
                docs.insert(location.path.clone(), text.join("\n").trim().to_owned());
            }
        }
        Self(docs)
    }

    fn get(&self, path: &[i32]) -> String {
        self.0.get(path).cloned().unwrap_or_default()
    }
}
