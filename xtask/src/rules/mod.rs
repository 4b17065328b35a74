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
pub mod formats;
pub mod pattern;
mod read;
pub mod standard;
mod zero;

pub use cel::CelRule;
pub use pattern::Pattern;
pub use standard::{Bound, Format, Rule, RuleKind, Scalar};

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
    /// `(buf.validate.message).cel`: `this` is the message.
    pub cel: Vec<CelRule>,
    /// `(buf.validate.message).oneof`: at most (or, required, exactly) one
    /// of these fields set.
    pub oneof_rules: Vec<MessageOneof>,
}

pub struct Field {
    pub descriptor: FieldDescriptor,
    pub doc: String,
    /// `(buf.validate.field).required`: present (messages, oneof members),
    /// non-default (implicit-presence scalars), non-empty (lists, maps).
    pub required: bool,
    /// `(buf.validate.field).ignore`.
    pub ignore: Ignore,
    /// Rules on the field's value (for a list or map: on the whole of it).
    pub rules: Vec<Rule>,
    /// CEL rules on the field's value (for a list or map: `this` is it all).
    pub cel: Vec<CelRule>,
    /// `repeated.items`: rules on each element of a list.
    pub items: Option<ValueRules>,
    /// `map.keys` and `map.values`: rules on each key and each value.
    pub keys: Option<ValueRules>,
    pub values: Option<ValueRules>,
}

/// The rules on each element, key or value of a list or map.
#[derive(Default)]
pub struct ValueRules {
    pub rules: Vec<Rule>,
    pub cel: Vec<CelRule>,
}

/// `(buf.validate.field).ignore`: when a field's rules are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignore {
    /// Skipped when a field with presence is unset (the default).
    Unspecified,
    /// Also skipped when the value is its type's zero value.
    IfZeroValue,
    /// Always skipped, `required` and a message's own rules included.
    Always,
}

/// `(buf.validate.message).oneof`.
pub struct MessageOneof {
    pub fields: Vec<FieldDescriptor>,
    pub required: bool,
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
        let kinds: Vec<_> = hosts.rules.iter().map(|r| (r.id.as_str(), &r.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("repeated.min_items", &RuleKind::MinItems(1)),
                ("repeated.max_items", &RuleKind::MaxItems(16)),
                ("repeated.unique", &RuleKind::Unique)
            ]
        );
        assert_eq!(hosts.rules[0].message, "must contain at least 1 item(s)");
        let items = hosts.items.as_ref().unwrap();
        assert_eq!(items.rules[0].kind, RuleKind::MaxLen(253));
        assert_eq!(items.rules[0].message, "must be at most 253 characters");
        assert!(matches!(&items.rules[1].kind, RuleKind::Pattern(p) if p.source.starts_with("^(\\*\\.)?")));
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
        let port = &backend.fields[1].rules[0];
        assert_eq!(
            (port.id.as_str(), port.message.as_str()),
            ("uint32.lte", "must be less than or equal to 65535")
        );
        assert_eq!(
            port.kind,
            RuleKind::Range {
                lower: None,
                upper: Some(Bound {
                    value: Scalar::UInt(65535),
                    inclusive: true
                }),
                exclusive: false
            }
        );
        let tls = api.message("aether.config.v1.VirtualHostTLS").unwrap();
        assert!(tls.fields[1].required);
        assert_eq!(tls.fields[1].rules[0].kind, RuleKind::DefinedOnly);
        let provider = api
            .enums
            .iter()
            .find(|e| e.full_name == "aether.config.v1.SecretProvider")
            .unwrap();
        assert_eq!(provider.values[1].0, "SECRET_PROVIDER_KUBERNETES");
    }
}
