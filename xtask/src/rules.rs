//! The API as the generators see it: messages, fields, their documentation and
//! their buf.validate rules, read from the lowered descriptors.
//!
//! prost drops extension options when it decodes descriptors, so the rules are
//! read through prost-reflect's dynamic options (`buf.validate.field` and
//! friends are known to the pool, which holds validate.proto).
//!
//! Every rule set on the API is turned into a [`Rule`]; a rule this model does
//! not know fails here, naming the rule and the field, so no generator can
//! skip it silently.

// The CRD and validator generators (issue 3) are the readers of this model.
#![allow(dead_code)]

use std::collections::HashMap;

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::{
    DescriptorPool, DynamicMessage, ExtensionDescriptor, FieldDescriptor, Kind, MessageDescriptor, Value,
};

/// The API's messages and enums (not imports), in proto declaration order.
pub struct Api {
    pub messages: Vec<Message>,
    pub enums: Vec<Enum>,
}

pub struct Message {
    pub descriptor: MessageDescriptor,
    /// The leading comment, as written in the proto.
    pub doc: String,
    pub fields: Vec<Field>,
    pub oneofs: Vec<Oneof>,
}

pub struct Field {
    pub descriptor: FieldDescriptor,
    pub doc: String,
    /// `(buf.validate.field).required`: present (messages, oneof members) or
    /// non-default (implicit-presence scalars).
    pub required: bool,
    /// Rules on the field's value (for repeated fields: on the list).
    pub rules: Vec<Rule>,
    /// `repeated.items`: rules on each element of a repeated field.
    pub items: Option<ItemRules>,
    pub cel: Vec<CelRule>,
}

pub struct ItemRules {
    pub rules: Vec<Rule>,
    pub cel: Vec<CelRule>,
}

pub struct Oneof {
    pub name: String,
    pub doc: String,
    /// `(buf.validate.oneof).required`: exactly one member must be set.
    pub required: bool,
    /// Names of the member fields.
    pub fields: Vec<String>,
}

pub struct Enum {
    pub full_name: String,
    pub doc: String,
    /// (name, number, doc)
    pub values: Vec<(String, i32, String)>,
}

/// A CEL rule: `this` is the field's value.
#[derive(Debug, Clone, PartialEq)]
pub struct CelRule {
    pub id: String,
    pub message: String,
    pub expression: String,
}

/// One standard rule. Its protovalidate rule id is [`Rule::id`].
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `string.min_len`: at least this many characters (Unicode code points).
    MinLen(u64),
    /// `string.max_len`: at most this many characters.
    MaxLen(u64),
    /// `string.pattern`: an RE2 regular expression the whole value must match
    /// somewhere (anchor it with `^...$` to match all of it).
    Pattern(String),
    /// `string.in`: one of these values.
    In(Vec<String>),
    /// `<int type>.gte`, `.gt`, `.lte`, `.lt` on an integer field.
    Bound {
        scalar: &'static str,
        op: BoundOp,
        value: i128,
    },
    /// `enum.defined_only`: a value the enum declares.
    DefinedOnly,
    /// `repeated.min_items`.
    MinItems(u64),
    /// `repeated.max_items`.
    MaxItems(u64),
    /// `repeated.unique`: no two equal elements.
    Unique,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundOp {
    Gte,
    Gt,
    Lte,
    Lt,
}

impl BoundOp {
    pub fn name(self) -> &'static str {
        match self {
            BoundOp::Gte => "gte",
            BoundOp::Gt => "gt",
            BoundOp::Lte => "lte",
            BoundOp::Lt => "lt",
        }
    }
}

impl Rule {
    /// The protovalidate rule id a violation of this rule carries.
    pub fn id(&self) -> String {
        match self {
            Rule::MinLen(_) => "string.min_len".into(),
            Rule::MaxLen(_) => "string.max_len".into(),
            Rule::Pattern(_) => "string.pattern".into(),
            Rule::In(_) => "string.in".into(),
            Rule::Bound { scalar, op, .. } => format!("{scalar}.{}", op.name()),
            Rule::DefinedOnly => "enum.defined_only".into(),
            Rule::MinItems(_) => "repeated.min_items".into(),
            Rule::MaxItems(_) => "repeated.max_items".into(),
            Rule::Unique => "repeated.unique".into(),
        }
    }
}

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

    pub fn message(&self, full_name: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.descriptor.full_name() == full_name)
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
                "cel" => field.cel = cel_rules(value)?,
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
                                        "cel" => items.cel = cel_rules(value)?,
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

    pub fn name(&self) -> &str {
        self.descriptor.name()
    }

    pub fn json_name(&self) -> &str {
        self.descriptor.json_name()
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
            ("string", "pattern") => Rule::Pattern(value.as_str().context("pattern is a string")?.to_owned()),
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

fn cel_rules(value: &Value) -> Result<Vec<CelRule>> {
    let list = value.as_list().context("cel is a list")?;
    list.iter()
        .map(|rule| {
            let rule = rule.as_message().context("a cel rule is a message")?;
            let text = |name: &str| {
                rule.get_field_by_name(name)
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            };
            let cel = CelRule {
                id: text("id"),
                message: text("message"),
                expression: text("expression"),
            };
            ensure!(!cel.id.is_empty(), "a CEL rule needs an id: {:?}", cel.expression);
            ensure!(
                !cel.message.is_empty(),
                "CEL rule {} needs a message a person understands",
                cel.id
            );
            Ok(cel)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        let root = crate::workspace_root();
        let plan = crate::plan::Plan::load(&root).unwrap();
        let deps =
            crate::proto_deps::materialize(&root, &crate::proto_deps::PinnedCrates::load(&root).unwrap()).unwrap();
        let compiled = crate::descriptors::compile(&root, &plan.input_dirs, &[deps]).unwrap();
        Api::load(&compiled.proto3_with_docs, &compiled.own_files).unwrap()
    }

    #[test]
    fn reads_the_hosts_rules_and_docs() {
        let api = api();
        let spec = api.message("aether.config.v1.VirtualHostSpec").unwrap();
        assert!(
            spec.doc.starts_with("The desired state of a VirtualHost"),
            "{}",
            spec.doc
        );
        let hosts = &spec.fields[0];
        assert_eq!(hosts.name(), "hosts");
        assert_eq!(hosts.rules, [Rule::MinItems(1), Rule::MaxItems(16), Rule::Unique]);
        let items = hosts.items.as_ref().unwrap();
        assert_eq!(items.rules[0], Rule::MaxLen(253));
        assert!(matches!(&items.rules[1], Rule::Pattern(p) if p.starts_with("^(\\*\\.)?")));
    }

    #[test]
    fn reads_oneof_required_and_cel_rules() {
        let api = api();
        let route_match = api.message("aether.config.v1.RouteMatch").unwrap();
        assert_eq!(route_match.oneofs[0].name, "path");
        assert!(route_match.oneofs[0].required);
        let prefix = &route_match.fields[0];
        let ids: Vec<_> = prefix.cel.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            ["path.no_empty_segment", "path.no_dot_segment", "path.no_encoded_slash"]
        );
    }

    #[test]
    fn reads_numeric_and_enum_rules() {
        let api = api();
        let backend = api.message("aether.config.v1.RouteBackend").unwrap();
        assert_eq!(
            backend.fields[1].rules,
            [Rule::Bound {
                scalar: "uint32",
                op: BoundOp::Lte,
                value: 65535
            }]
        );
        let tls = api.message("aether.config.v1.VirtualHostTLS").unwrap();
        assert!(tls.fields[1].required);
        assert_eq!(tls.fields[1].rules, [Rule::DefinedOnly]);
        assert_eq!(api.enums[0].values[1].0, "SECRET_PROVIDER_KUBERNETES");
    }
}
