//! The API's buf.validate rules as one model: messages, fields, their
//! documentation and every rule, read from the lowered descriptors.
//!
//! Codegen (`cargo xtask codegen`) generates the validator, the CRD and the
//! reference from it; test generators draw specs from it; so a rule is
//! written once, in the proto.
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
pub mod names;
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
    /// Marked [`RE2_OPTION`]: its value is a regular expression Envoy
    /// compiles with RE2 (a string, or each string of a list).
    pub re2: bool,
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
    /// Marked [`CONDITION_NAMES_OPTION`]: the values name a condition's
    /// `type` or `reason` ([`Enum::condition_name`]); no field holds it.
    pub condition_names: bool,
}

impl Enum {
    /// The name a condition carries for the value `name` of an enum marked
    /// [`CONDITION_NAMES_OPTION`]: UpperCamelCase after the enum's prefix
    /// (`ACCEPTED_REASON_HOST_CONFLICT` of `AcceptedReason` is
    /// `HostConflict`). `None` for the zero value and a value without the
    /// prefix.
    pub fn condition_name(&self, name: &str, number: i32) -> Option<String> {
        let short_name = self.full_name.rsplit('.').next().unwrap_or(&self.full_name);
        names::condition_name(short_name, name).filter(|_| number != 0)
    }
}

/// The enum option marking an enum whose values name conditions' types or
/// reasons (`api/aether/config/v1/field_options.proto`).
pub const CONDITION_NAMES_OPTION: &str = "aether.config.v1.condition_names";

/// The field option marking a string field as a regular expression Envoy
/// compiles with RE2 (`api/aether/config/v1/field_options.proto`).
pub const RE2_OPTION: &str = "aether.config.v1.re2";

impl Api {
    pub fn message(&self, full_name: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.descriptor.full_name() == full_name)
    }

    /// Every place under message `root` holding a field marked
    /// [`RE2_OPTION`], as JSON names with `[]` for a list's elements
    /// (`routes[].match.regex`), in declaration order. Maps are not entered:
    /// codegen refuses a marked field under one.
    pub fn re2_places(&self, root: &str) -> Vec<String> {
        let mut places = Vec::new();
        self.collect_re2_places(root, "", &mut vec![root.to_owned()], &mut places);
        places
    }

    fn collect_re2_places(&self, message: &str, at: &str, open: &mut Vec<String>, places: &mut Vec<String>) {
        let Some(message) = self.message(message) else {
            return;
        };
        for field in &message.fields {
            let list = if field.descriptor.is_list() { "[]" } else { "" };
            let place = match at {
                "" => format!("{}{list}", field.json_name()),
                at => format!("{at}.{}{list}", field.json_name()),
            };
            if field.re2 {
                places.push(place);
            } else if let prost_reflect::Kind::Message(child) = field.descriptor.kind() {
                // A message that holds itself is walked once.
                if !field.descriptor.is_map() && !open.iter().any(|o| o == child.full_name()) {
                    open.push(child.full_name().to_owned());
                    self.collect_re2_places(child.full_name(), &place, open, places);
                    open.pop();
                }
            }
        }
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
