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

pub mod cel;
pub mod pattern;
mod read;

pub use cel::CelRule;
pub use pattern::Pattern;

use prost_reflect::{FieldDescriptor, MessageDescriptor};

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

/// One standard rule. Its protovalidate rule id is [`Rule::id`].
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `string.min_len`: at least this many characters (Unicode code points).
    MinLen(u64),
    /// `string.max_len`: at most this many characters.
    MaxLen(u64),
    /// `string.pattern`: an RE2 regular expression the value must match
    /// somewhere (anchor it with `^...$` to match all of it).
    Pattern(Pattern),
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
    pub fn message(&self, full_name: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.descriptor.full_name() == full_name)
    }
}

impl Field {
    pub fn name(&self) -> &str {
        self.descriptor.name()
    }

    pub fn json_name(&self) -> &str {
        self.descriptor.json_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        let root = crate::workspace_root();
        let plan = crate::plan::Plan::load(&root).unwrap();
        let pinned = crate::proto_deps::PinnedCrates::load(&root).unwrap();
        crate::generators::Context::load(&root, &plan.input_dirs, pinned)
            .unwrap()
            .api
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
        assert!(matches!(&items.rules[1], Rule::Pattern(p) if p.source.starts_with("^(\\*\\.)?")));
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
