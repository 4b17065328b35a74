//! The schema mapper: from the rules model to `openAPIV3Schema` nodes.
//!
//! Each buf.validate rule becomes its structural-schema form ([`scalar`]
//! for one value); a rule the mapping cannot express fails codegen, naming
//! the rule and the field, so the CRD never enforces less than the proto
//! says without anyone noticing.
//!
//! The Kubernetes form omits zero values, and protovalidate still judges an
//! absent implicit-presence scalar, list or map as its zero value. So a
//! property whose zero value breaks a rule is `required`, and a CEL rule on
//! such a field sits on the parent object, reading the property through a
//! default (`(has(self.port) ? self.port : 0)`), where the API server
//! evaluates it whether the property is written or not.

mod keys;
mod list_map;
mod numbers;
mod oneof;
pub mod scalar;

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::Kind;

use super::cel::{self, escape};
use super::describe;
use super::node::{Node, Obj};
use crate::rules::{Api, CelRule, Field, Ignore, Message, Rule, RuleKind};
use oneof::{message_oneof_rule, oneof_rule};

/// From the rules model to schema nodes.
pub struct Mapper<'a> {
    pub api: &'a Api,
}

/// A property's schema, what its parent must know of it.
struct Property {
    schema: Obj,
    /// Belongs in the parent's `required` list.
    required: bool,
    /// CEL rules of the field that sit on the parent object.
    lifted: Vec<Node>,
}

impl Mapper<'_> {
    /// An object: properties in declaration order, `required` sorted (kube
    /// sorts it when it round-trips the schema), oneofs and message rules as
    /// CEL rules. `bare` maps types only (`IGNORE_ALWAYS` above).
    pub fn message_schema(&self, message: &Message, description: &str, stack: &mut Vec<String>) -> Result<Obj> {
        self.object(message, description, stack, false)
    }

    fn object(&self, message: &Message, description: &str, stack: &mut Vec<String>, bare: bool) -> Result<Obj> {
        let name = message.descriptor.full_name().to_owned();
        ensure!(
            !stack.contains(&name),
            "{name} contains itself; a structural schema is inlined and cannot be recursive"
        );
        stack.push(name.clone());
        let mut properties = Obj::new();
        let mut required = Vec::new();
        let mut lifted = Vec::new();
        for field in &message.fields {
            let property = self
                .field_schema(field, stack, bare)
                .with_context(|| format!("field `{}`", field.descriptor.full_name()))?;
            if property.required {
                required.push(field.json_name().to_owned());
            }
            lifted.extend(property.lifted);
            properties.set(field.json_name(), property.schema);
        }
        stack.pop();
        let mut validations = Vec::new();
        if !bare {
            for oneof in &message.oneofs {
                if let Some(rule) = oneof_rule(message, &oneof.name, &oneof.fields, oneof.required)? {
                    validations.push(rule);
                }
            }
            for rule in &message.oneof_rules {
                validations.extend(message_oneof_rule(rule)?);
            }
            for rule in &message.cel {
                cel::check_reads(&rule.expr, self.api, None).with_context(|| rule_context(rule, &name))?;
                validations.push(cel::rule_node(rule, "self", None, None).with_context(|| rule_context(rule, &name))?);
            }
            validations.extend(lifted);
        }
        let mut object = Obj::new();
        object.set("type", "object");
        if !description.is_empty() {
            object.set("description", description);
        }
        object.set("properties", properties);
        if !required.is_empty() {
            required.sort();
            object.set("required", Node::List(required.into_iter().map(Node::from).collect()));
        }
        if !validations.is_empty() {
            object.set("x-kubernetes-validations", Node::List(validations));
        }
        Ok(object)
    }

    fn field_schema(&self, field: &Field, stack: &mut Vec<String>, bare: bool) -> Result<Property> {
        let d = &field.descriptor;
        let name = d.full_name();
        let bare = bare || field.ignore == Ignore::Always;
        let in_oneof = d.containing_oneof().is_some();
        // Where the field's own CEL rules go: on the property when it is
        // judged only if written, on the parent otherwise.
        let zero_judged = !in_oneof && !field.required && field.ignore == Ignore::Unspecified;
        let (mut schema, cel_here) = if d.is_map() {
            (self.map_schema(field, stack, bare)?, !zero_judged)
        } else if d.is_list() {
            (self.list_schema(field, stack, bare)?, !zero_judged)
        } else if let Kind::Message(m) = d.kind() {
            ensure!(
                field.rules.is_empty(),
                "only `required` and `cel` rules apply to a message field"
            );
            let message = self.message(m.full_name(), name)?;
            let mut schema = self.object(message, "", stack, bare)?;
            schema.remove("description");
            (schema, true)
        } else {
            ensure!(
                !d.supports_presence() || in_oneof,
                "a scalar with explicit presence (`optional`) is not supported by the CRD generator"
            );
            let rules: &[Rule] = if bare { &[] } else { &field.rules };
            let scalar = scalar::ScalarSchema {
                field: name,
                kind: d.kind(),
                rules,
                non_default: field.required && !bare && !in_oneof,
                if_zero: field.ignore == Ignore::IfZeroValue,
            };
            (scalar.schema()?, !zero_judged)
        };
        let mut lifted = Vec::new();
        if !bare && !field.cel.is_empty() {
            let zero = match d.kind() {
                Kind::Message(_) if !d.is_map() && !d.is_list() => String::new(),
                _ => cel::default_text(d)?,
            };
            for rule in &field.cel {
                cel::check_reads(&rule.expr, self.api, Some(field)).with_context(|| rule_context(rule, name))?;
                if cel_here {
                    // IGNORE_IF_ZERO_VALUE: a written zero value is skipped too.
                    let guard = (field.ignore == Ignore::IfZeroValue).then(|| zero_test(field, &zero));
                    let node = cel::rule_node(rule, "self", guard.as_deref(), None)
                        .with_context(|| rule_context(rule, name))?;
                    schema.push_validation(node);
                } else {
                    let property = format!("self.{}", escape(d.json_name()));
                    let this = format!("(has({property}) ? {property} : {zero})");
                    let path = format!(".{}", d.json_name());
                    lifted.push(
                        cel::rule_node(rule, &this, None, Some(&path)).with_context(|| rule_context(rule, name))?,
                    );
                }
            }
        }
        let mut description = self.description(field)?;
        if let (Kind::Enum(e), false) = (d.kind(), d.is_map()) {
            // The values' documentation: the proto's comments on each value.
            let e = self
                .api
                .enums
                .iter()
                .find(|x| x.full_name == e.full_name())
                .with_context(|| format!("enum {} is not part of the API", e.full_name()))?;
            let mut allowed = Vec::new();
            describe::allowed_values(&Node::from(schema.clone()), &mut allowed);
            let values = describe::enum_values(e, &allowed);
            if !values.is_empty() {
                if !description.is_empty() {
                    description.push_str("\n\n");
                }
                description.push_str(&values);
            }
        }
        if !description.is_empty() {
            schema.insert_after("type", "description", description);
        }
        Ok(Property {
            schema,
            required: !bare && required_in_parent(field),
            lifted,
        })
    }

    fn list_schema(&self, field: &Field, stack: &mut Vec<String>, bare: bool) -> Result<Obj> {
        let d = &field.descriptor;
        let name = d.full_name();
        let element = field.items.as_ref().filter(|_| !bare);
        let mut items = self.element_schema(
            &d.kind(),
            element.map_or(&[][..], |i| &i.rules),
            element.map_or(&[][..], |i| &i.cel),
            name,
            stack,
            bare,
        )?;
        if let Kind::Message(m) = d.kind() {
            // The items are objects: their description is the message's.
            let doc = &self.message(m.full_name(), name)?.doc;
            if !doc.is_empty() {
                items.insert_after("type", "description", doc.as_str());
            }
        }
        let mut list = Obj::new();
        list.set("type", "array");
        let (mut min_items, mut max_items, mut unique) = (None, None, false);
        for rule in field.rules.iter().filter(|_| !bare) {
            match rule.kind {
                RuleKind::MinItems(n) => min_items = Some(n),
                RuleKind::MaxItems(n) => max_items = Some(n),
                RuleKind::Unique => unique = true,
                _ => bail!(unmappable(rule, name, "it does not apply to a list")),
            }
        }
        if field.required && !bare {
            min_items = Some(min_items.unwrap_or(0).max(1));
        }
        if let Some(n) = min_items {
            if field.ignore == Ignore::IfZeroValue {
                // An empty list skips the rules.
                let (mut empty, mut enough) = (Obj::new(), Obj::new());
                empty.set("maxItems", Node::Int(0));
                enough.set("minItems", int(n)?);
                list.set("anyOf", Node::List(vec![empty.into(), enough.into()]));
            } else {
                list.set("minItems", int(n)?);
            }
        }
        if let Some(n) = max_items {
            list.set("maxItems", int(n)?);
        }
        if unique {
            ensure!(
                !matches!(d.kind(), Kind::Message(_)),
                "cannot map rule `repeated.unique` on field `{name}`: `x-kubernetes-list-type: set` \
                 needs scalar items"
            );
        }
        match list_map::condition_key(field, self.api)? {
            Some(key) => {
                ensure!(!unique, "field `{name}`: a list map cannot also be `repeated.unique`");
                list.set("x-kubernetes-list-type", "map");
                list.set("x-kubernetes-list-map-keys", Node::List(vec![key.into()]));
            }
            None => list.set("x-kubernetes-list-type", if unique { "set" } else { "atomic" }),
        }
        list.set("items", items);
        Ok(list)
    }

    /// A map: an object whose `additionalProperties` is the values' schema.
    /// Keys are strings in the Kubernetes form; their rules are CEL on the map.
    fn map_schema(&self, field: &Field, stack: &mut Vec<String>, bare: bool) -> Result<Obj> {
        let d = &field.descriptor;
        let name = d.full_name();
        let Kind::Message(entry) = d.kind() else {
            bail!("a map field's kind is its entry")
        };
        let (key, value) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        ensure!(
            key.kind() == Kind::String,
            "field `{name}`: a map with {:?} keys cannot be mapped; keys in the Kubernetes form are strings",
            key.kind()
        );
        let values = field.values.as_ref().filter(|_| !bare);
        let mut values_schema = self.element_schema(
            &value.kind(),
            values.map_or(&[][..], |v| &v.rules),
            values.map_or(&[][..], |v| &v.cel),
            name,
            stack,
            bare,
        )?;
        if let Kind::Message(m) = value.kind() {
            let doc = &self.message(m.full_name(), name)?.doc;
            if !doc.is_empty() {
                values_schema.insert_after("type", "description", doc.as_str());
            }
        }
        let mut map = Obj::new();
        map.set("type", "object");
        let (mut min, mut max) = (None, None);
        for rule in field.rules.iter().filter(|_| !bare) {
            match rule.kind {
                RuleKind::MinPairs(n) => min = Some(n),
                RuleKind::MaxPairs(n) => max = Some(n),
                _ => bail!(unmappable(rule, name, "it does not apply to a map")),
            }
        }
        if field.required && !bare {
            min = Some(min.unwrap_or(0).max(1));
        }
        if let Some(n) = min {
            if field.ignore == Ignore::IfZeroValue {
                let (mut empty, mut enough) = (Obj::new(), Obj::new());
                empty.set("maxProperties", Node::Int(0));
                enough.set("minProperties", int(n)?);
                map.set("anyOf", Node::List(vec![empty.into(), enough.into()]));
            } else {
                map.set("minProperties", int(n)?);
            }
        }
        if let Some(n) = max {
            map.set("maxProperties", int(n)?);
        }
        map.set("additionalProperties", values_schema);
        if let Some(keys) = field.keys.as_ref().filter(|_| !bare) {
            for rule in keys::rules(keys, name)? {
                map.push_validation(rule);
            }
        }
        Ok(map)
    }

    /// The schema of a list's element or a map's value, with its rules.
    fn element_schema(
        &self,
        kind: &Kind,
        rules: &[Rule],
        cel_rules: &[CelRule],
        name: &str,
        stack: &mut Vec<String>,
        bare: bool,
    ) -> Result<Obj> {
        let mut schema = match kind {
            Kind::Message(m) => {
                ensure!(rules.is_empty(), "only `cel` rules apply to messages in a list or map");
                let message = self.message(m.full_name(), name)?;
                let mut schema = self.object(message, "", stack, bare)?;
                schema.remove("description");
                schema
            }
            kind => scalar::ScalarSchema {
                field: name,
                kind: kind.clone(),
                rules,
                non_default: false,
                if_zero: false,
            }
            .schema()?,
        };
        for rule in cel_rules {
            cel::check_reads(&rule.expr, self.api, None).with_context(|| rule_context(rule, name))?;
            schema.push_validation(cel::rule_node(rule, "self", None, None).with_context(|| rule_context(rule, name))?);
        }
        Ok(schema)
    }

    /// Field docs on properties; for an object, the message's docs follow.
    fn description(&self, field: &Field) -> Result<String> {
        let mut text = field.doc.clone();
        let d = &field.descriptor;
        if let (Kind::Message(m), false, false) = (d.kind(), d.is_list(), d.is_map()) {
            let doc = &self.message(m.full_name(), d.full_name())?.doc;
            if !doc.is_empty() {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(doc);
            }
        }
        Ok(text)
    }

    fn message(&self, full_name: &str, field: &str) -> Result<&Message> {
        self.api.message(full_name).with_context(|| {
            format!("field `{field}`: message {full_name} is not part of the API, so the CRD generator cannot map it")
        })
    }
}

/// Whether an absent property breaks the proto's rules: `required`, or an
/// implicit-presence field whose zero value (empty, zero) breaks a rule.
/// The Kubernetes form omits zero values, so such a field must be written.
fn required_in_parent(field: &Field) -> bool {
    let d = &field.descriptor;
    if field.ignore == Ignore::Always {
        return false;
    }
    if field.required {
        return true;
    }
    if field.ignore == Ignore::IfZeroValue || d.containing_oneof().is_some() {
        return false;
    }
    if !d.is_list() && !d.is_map() && d.supports_presence() {
        // Messages, `optional`: rules apply only when set.
        return false;
    }
    field.rules.iter().any(Rule::breaks_zero)
}

/// The CEL test "the value is its zero value", for `IGNORE_IF_ZERO_VALUE`.
fn zero_test(field: &Field, zero: &str) -> String {
    if field.descriptor.is_list() || field.descriptor.is_map() {
        "self.size() == 0".to_owned()
    } else {
        format!("self == {zero}")
    }
}

fn rule_context(rule: &CelRule, place: &str) -> String {
    format!("cannot map CEL rule `{}` on `{place}`", rule.id)
}

pub fn unmappable(rule: &Rule, field: &str, why: &str) -> String {
    format!(
        "cannot map rule `{}` on field `{field}` to the CRD schema: {why}",
        rule.id
    )
}

pub fn int(value: impl TryInto<i64> + Copy + std::fmt::Display) -> Result<Node> {
    let n = value
        .try_into()
        .map_err(|_| anyhow::anyhow!("{value} does not fit a Kubernetes integer (int64)"))?;
    Ok(Node::Int(n))
}
