//! Reading the rules model out of the lowered descriptors.

use std::collections::HashMap;

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::{
    DescriptorPool, DynamicMessage, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor, Value,
};

use super::cel::{CelRule, Type};
use super::pattern::Pattern;
use super::{Api, BoundOp, Enum, Field, ItemRules, Message, Oneof, Rule};

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
                api.enums.push(Enum::read(&enumeration, &docs));
            }
        }
        Ok(api)
    }

    fn add_message(&mut self, descriptor: &MessageDescriptor, docs: &Docs, ext: &Extensions) -> Result<()> {
        let path = descriptor.path().to_vec();
        let message_rules = descriptor.options();
        if message_rules.has_extension(&ext.message) {
            let rules = message_rules.get_extension(&ext.message);
            if let Some((rule, _)) = rules.as_message().and_then(|m| m.fields().next()) {
                bail!(
                    "{}: message rule `{}` is not supported by the generators",
                    descriptor.full_name(),
                    rule.name()
                );
            }
        }
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
            let oneof_path = oneof.path();
            oneofs.push(Oneof {
                name: oneof.name().to_owned(),
                doc: docs.get(oneof_path),
                required,
                fields: oneof.fields().map(|f| f.name().to_owned()).collect(),
            });
        }
        self.messages.push(Message {
            descriptor: descriptor.clone(),
            doc: docs.get(&path),
            fields,
            oneofs,
        });
        for nested in descriptor.child_messages() {
            self.add_message(&nested, docs, ext)?;
        }
        for enumeration in descriptor.child_enums() {
            self.enums.push(Enum::read(&enumeration, docs));
        }
        Ok(())
    }
}

impl Enum {
    fn read(descriptor: &prost_reflect::EnumDescriptor, docs: &Docs) -> Self {
        let values = descriptor
            .values()
            .map(|v| (v.name().to_owned(), v.number(), docs.get(v.path())))
            .collect();
        Enum {
            full_name: descriptor.full_name().to_owned(),
            doc: docs.get(descriptor.path()),
            values,
        }
    }
}

impl Field {
    fn read(descriptor: &FieldDescriptor, docs: &Docs, ext: &Extensions) -> Result<Self> {
        let mut field = Field {
            descriptor: descriptor.clone(),
            doc: docs.get(descriptor.path()),
            required: false,
            rules: Vec::new(),
            items: None,
            cel: Vec::new(),
        };
        let options = descriptor.options();
        if !options.has_extension(&ext.field) {
            return Ok(field);
        }
        let value = options.get_extension(&ext.field);
        let rules = value.as_message().context("buf.validate.field is a message")?;
        for (rule, value) in rules.fields() {
            match rule.name() {
                "required" => field.required = value.as_bool() == Some(true),
                "cel" => field.cel = cel_rules(value, Type::of_field(descriptor))?,
                "repeated" if descriptor.is_list() => {
                    for (rule, value) in submessage(value)?.fields() {
                        match rule.name() {
                            "min_items" => field.rules.push(Rule::MinItems(as_u64(value)?)),
                            "max_items" => field.rules.push(Rule::MaxItems(as_u64(value)?)),
                            "unique" => {
                                if value.as_bool() == Some(true) {
                                    field.rules.push(Rule::Unique);
                                }
                            }
                            "items" => {
                                let item = submessage(value)?;
                                let mut items = ItemRules {
                                    rules: Vec::new(),
                                    cel: Vec::new(),
                                };
                                for (rule, value) in item.fields() {
                                    match rule.name() {
                                        "cel" => items.cel = cel_rules(value, Type::of_kind(&descriptor.kind()))?,
                                        _ => items.rules.extend(typed_rules(
                                            descriptor,
                                            &rule,
                                            value,
                                            "repeated.items.",
                                        )?),
                                    }
                                }
                                field.items = Some(items);
                            }
                            other => bail!("rule `repeated.{other}` is not supported by the generators"),
                        }
                    }
                }
                _ if descriptor.is_list() => {
                    bail!("rule `{}` on a repeated field: use `repeated.items`", rule.name())
                }
                _ => field.rules.extend(typed_rules(descriptor, &rule, value, "")?),
            }
        }
        Ok(field)
    }
}

/// The rules in one `FieldRules.type` member (`string`, `uint32`, `enum`, ...).
fn typed_rules(field: &FieldDescriptor, group: &FieldDescriptor, value: &Value, context: &str) -> Result<Vec<Rule>> {
    let group_name = group.name();
    let expected = match field.kind() {
        Kind::String => "string",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Uint32 => "uint32",
        Kind::Uint64 => "uint64",
        Kind::Enum(_) => "enum",
        _ => "",
    };
    ensure!(
        group_name == expected,
        "rule group `{context}{group_name}` does not fit the field's type (or is not supported by the generators)"
    );
    let mut rules = Vec::new();
    for (rule, value) in submessage(value)?.fields() {
        let name = rule.name();
        let scalar: &'static str = expected;
        let parsed = match (group_name, name) {
            ("string", "min_len") => Rule::MinLen(as_u64(value)?),
            ("string", "max_len") => Rule::MaxLen(as_u64(value)?),
            ("string", "pattern") => Rule::Pattern(Pattern::new(value.as_str().context("pattern is a string")?)?),
            ("string", "in") => Rule::In(
                value
                    .as_list()
                    .context("`in` is a list")?
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned).context("`in` holds strings"))
                    .collect::<Result<_>>()?,
            ),
            ("enum", "defined_only") if value.as_bool() == Some(true) => Rule::DefinedOnly,
            (_, "gte" | "gt" | "lte" | "lt") if scalar != "string" && scalar != "enum" => Rule::Bound {
                scalar,
                op: match name {
                    "gte" => BoundOp::Gte,
                    "gt" => BoundOp::Gt,
                    "lte" => BoundOp::Lte,
                    _ => BoundOp::Lt,
                },
                value: as_i128(value)?,
            },
            _ => bail!("rule `{context}{group_name}.{name}` is not supported by the generators"),
        };
        rules.push(parsed);
    }
    Ok(rules)
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

fn as_u64(value: &Value) -> Result<u64> {
    value.as_u64().context("expected an unsigned integer")
}

fn as_i128(value: &Value) -> Result<i128> {
    match value {
        Value::I32(v) => Ok((*v).into()),
        Value::I64(v) => Ok((*v).into()),
        Value::U32(v) => Ok((*v).into()),
        Value::U64(v) => Ok((*v).into()),
        other => bail!("expected an integer bound, found {other:?}"),
    }
}

struct Extensions {
    field: ExtensionDescriptor,
    oneof: ExtensionDescriptor,
    message: ExtensionDescriptor,
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
