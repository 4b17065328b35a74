//! The schema mapper: from the rules model to `openAPIV3Schema` nodes.
//!
//! Each buf.validate rule becomes its structural-schema form; a rule the
//! mapping cannot express fails codegen, naming the rule and the field, so
//! the CRD never enforces less than the proto says without anyone noticing.

use anyhow::{Context, Result, bail, ensure};
use heck::ToShoutySnakeCase;
use prost_reflect::Kind;

use super::cel::{add_cel, escape};
use super::node::{Node, Obj};
use crate::rules::{Api, BoundOp, CelRule, Field, Message, Rule};

/// From the rules model to schema nodes.
pub struct Mapper<'a> {
    pub api: &'a Api,
}

/// Numeric bounds gathered from the rules, before they are written.
#[derive(Default)]
struct Bounds {
    min: Option<(i128, bool)>,
    max: Option<(i128, bool)>,
}

impl Mapper<'_> {
    /// An object: properties in declaration order, `required` sorted (kube
    /// sorts it when it round-trips the schema), oneofs as CEL rules.
    pub fn message_schema(&self, message: &Message, description: &str, stack: &mut Vec<String>) -> Result<Obj> {
        let name = message.descriptor.full_name().to_owned();
        ensure!(
            !stack.contains(&name),
            "{name} contains itself; a structural schema is inlined and cannot be recursive"
        );
        stack.push(name);
        let mut properties = Obj::new();
        let mut required = Vec::new();
        for field in &message.fields {
            let (schema, is_required) = self.field_schema(field, stack)?;
            if is_required {
                required.push(field.json_name().to_owned());
            }
            properties.set(field.json_name(), schema);
        }
        stack.pop();
        let mut validations = Vec::new();
        for oneof in &message.oneofs {
            if let Some(rule) = oneof_rule(message, &oneof.name, &oneof.fields, oneof.required)? {
                validations.push(rule);
            }
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

    /// A property, and whether it belongs in the parent's `required` list.
    fn field_schema(&self, field: &Field, stack: &mut Vec<String>) -> Result<(Obj, bool)> {
        let name = field.descriptor.full_name();
        ensure!(
            !field.descriptor.is_map(),
            "field `{name}`: map fields are not supported by the CRD generator"
        );
        let mut schema = if field.descriptor.is_list() {
            let element = field.items.as_ref();
            let mut items = self.value_schema(
                field,
                element.map_or(&[][..], |i| &i.rules),
                element.map_or(&[][..], |i| &i.cel),
                false,
                stack,
            )?;
            if let Kind::Message(m) = field.descriptor.kind() {
                // The items are objects: their description is the message's.
                let doc = &self.message(m.full_name(), name)?.doc;
                if !doc.is_empty() {
                    items.insert_after("type", "description", doc.as_str());
                }
            }
            let mut list = Obj::new();
            list.set("type", "array");
            let (mut min_items, mut max_items, mut unique) = (None, None, false);
            for rule in &field.rules {
                match rule {
                    Rule::MinItems(n) => min_items = Some(*n),
                    Rule::MaxItems(n) => max_items = Some(*n),
                    Rule::Unique => unique = true,
                    other => bail!(unmappable(other, name, "it does not apply to a list")),
                }
            }
            if field.required {
                min_items = Some(min_items.unwrap_or(0).max(1));
            }
            if let Some(n) = min_items {
                list.set("minItems", int(n)?);
            }
            if let Some(n) = max_items {
                list.set("maxItems", int(n)?);
            }
            if unique {
                ensure!(
                    is_scalar(&field.descriptor.kind()),
                    "cannot map rule `repeated.unique` on field `{name}`: `x-kubernetes-list-type: set` \
                     needs scalar items"
                );
            }
            list.set("x-kubernetes-list-type", if unique { "set" } else { "atomic" });
            list.set("items", items);
            add_cel(&mut list, &field.cel, name)?;
            list
        } else {
            self.value_schema(field, &field.rules, &field.cel, field.required, stack)?
        };
        let description = self.description(field)?;
        if !description.is_empty() {
            schema.insert_after("type", "description", description);
        }
        Ok((schema, self.required_in_parent(field)?))
    }

    /// Field docs on properties; for an object, the message's docs follow.
    fn description(&self, field: &Field) -> Result<String> {
        let mut text = field.doc.clone();
        if let (Kind::Message(m), false) = (field.descriptor.kind(), field.descriptor.is_list()) {
            let doc = &self.message(m.full_name(), field.descriptor.full_name())?.doc;
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

    /// The schema of one value: a singular field's, or a list's element.
    /// `required` is `(buf.validate.field).required` on a singular field.
    fn value_schema(
        &self,
        field: &Field,
        rules: &[Rule],
        cel: &[CelRule],
        required: bool,
        stack: &mut Vec<String>,
    ) -> Result<Obj> {
        let name = field.descriptor.full_name();
        let kind = field.descriptor.kind();
        // Required on an implicit-presence scalar means "not the default".
        let non_default = required && !field.descriptor.supports_presence();
        let mut schema = Obj::new();
        match &kind {
            Kind::Message(m) => {
                if let Some(rule) = rules.first() {
                    bail!(unmappable(rule, name, "it does not apply to a message"));
                }
                let message = self.message(m.full_name(), name)?;
                schema = self.message_schema(message, "", stack)?;
                schema.remove("description");
            }
            Kind::String => {
                schema.set("type", "string");
                let (mut min_len, mut max_len, mut pattern, mut one_of) = (None, None, None, None);
                for rule in rules {
                    match rule {
                        Rule::MinLen(n) => min_len = Some(*n),
                        Rule::MaxLen(n) => max_len = Some(*n),
                        Rule::Pattern(p) => pattern = Some(p.source.clone()),
                        Rule::In(values) => one_of = Some(values.clone()),
                        other => bail!(unmappable(other, name, "it does not apply to a string")),
                    }
                }
                if non_default {
                    min_len = Some(min_len.unwrap_or(0).max(1));
                    if let Some(values) = &mut one_of {
                        values.retain(|v| !v.is_empty());
                    }
                }
                if let Some(n) = min_len {
                    schema.set("minLength", int(n)?);
                }
                if let Some(n) = max_len {
                    schema.set("maxLength", int(n)?);
                }
                if let Some(p) = pattern {
                    schema.set("pattern", p);
                }
                if let Some(values) = one_of {
                    schema.set("enum", Node::List(values.into_iter().map(Node::from).collect()));
                }
            }
            Kind::Bool => {
                schema.set("type", "boolean");
                if let Some(rule) = rules.first() {
                    bail!(unmappable(rule, name, "the CRD generator maps no bool rules"));
                }
                if non_default {
                    schema.set("enum", Node::List(vec![Node::Bool(true)]));
                }
            }
            Kind::Enum(e) => {
                schema.set("type", "string");
                let mut defined_only = false;
                for rule in rules {
                    match rule {
                        Rule::DefinedOnly => defined_only = true,
                        other => bail!(unmappable(other, name, "it does not apply to an enum")),
                    }
                }
                // The Kubernetes form writes names only, so the CRD can only
                // ever accept defined values; `defined_only` changes nothing
                // more. Required excludes the zero value.
                let _ = defined_only;
                let prefix = format!("{}_", e.name().to_shouty_snake_case());
                let mut names = Vec::new();
                for value in e.values() {
                    let short = value.name().strip_prefix(&prefix).with_context(|| {
                        format!(
                            "enum {}: value {} lacks the prefix {prefix}",
                            e.full_name(),
                            value.name()
                        )
                    })?;
                    if !(non_default && value.number() == 0) {
                        names.push(Node::from(short));
                    }
                }
                schema.set("enum", Node::List(names));
            }
            Kind::Int32 | Kind::Int64 | Kind::Uint32 => {
                let (format, natural) = match kind {
                    Kind::Int32 => ("int32", None),
                    Kind::Int64 => ("int64", None),
                    _ => ("", Some((0, i128::from(u32::MAX)))),
                };
                schema.set("type", "integer");
                if !format.is_empty() {
                    schema.set("format", format);
                }
                let mut bounds = Bounds::default();
                if let Some((low, high)) = natural {
                    bounds.min = Some((low, false));
                    bounds.max = Some((high, false));
                }
                for rule in rules {
                    match rule {
                        Rule::Bound { op, value, .. } => match op {
                            BoundOp::Gte => bounds.min = Some((*value, false)),
                            BoundOp::Gt => bounds.min = Some((*value, true)),
                            BoundOp::Lte => bounds.max = Some((*value, false)),
                            BoundOp::Lt => bounds.max = Some((*value, true)),
                        },
                        other => bail!(unmappable(other, name, "it does not apply to an integer")),
                    }
                }
                let mut cel_non_zero = false;
                if non_default {
                    // The smallest value allowed, as an inclusive bound.
                    match bounds.min.map(|(v, exclusive)| if exclusive { v + 1 } else { v }) {
                        Some(low) if low >= 1 => {}
                        Some(0) => bounds.min = Some((1, false)),
                        _ => cel_non_zero = true,
                    }
                }
                if let Some((value, exclusive)) = bounds.min {
                    schema.set("minimum", int(value)?);
                    if exclusive {
                        schema.set("exclusiveMinimum", Node::Bool(true));
                    }
                }
                if let Some((value, exclusive)) = bounds.max {
                    schema.set("maximum", int(value)?);
                    if exclusive {
                        schema.set("exclusiveMaximum", Node::Bool(true));
                    }
                }
                if cel_non_zero {
                    let mut rule = Obj::new();
                    rule.set("rule", "self != 0");
                    rule.set("message", "value is required (must not be 0) [required]");
                    schema.push_validation(rule.into());
                }
            }
            other => {
                bail!("field `{name}`: the CRD generator does not map fields of type {other:?}")
            }
        }
        add_cel(&mut schema, cel, name)?;
        Ok(schema)
    }

    /// Whether an absent property breaks the proto's rules: `required`, or an
    /// implicit-presence field whose default value (empty, zero) fails a rule.
    /// The JSON form omits default values, so such a field must be present.
    fn required_in_parent(&self, field: &Field) -> Result<bool> {
        if field.required {
            return Ok(true);
        }
        if field.descriptor.is_list() {
            return Ok(field.rules.iter().any(|r| matches!(r, Rule::MinItems(n) if *n >= 1)));
        }
        if field.descriptor.supports_presence() {
            // Messages, oneof members, `optional`: rules apply only when set.
            return Ok(false);
        }
        let mut default_fails = false;
        for rule in &field.rules {
            default_fails |= match rule {
                Rule::MinLen(n) => *n >= 1,
                Rule::Pattern(p) => !p.matches_empty,
                Rule::In(values) => !values.iter().any(String::is_empty),
                Rule::Bound { op, value, .. } => match op {
                    BoundOp::Gte => *value > 0,
                    BoundOp::Gt => *value >= 0,
                    BoundOp::Lte => *value < 0,
                    BoundOp::Lt => *value <= 0,
                },
                _ => false,
            };
        }
        if let Some(cel) = field.cel.first() {
            bail!(
                "cannot map CEL rule `{}` on field `{}`: on an implicit-presence field it also judges the \
                 absent (default) value, which the CRD never evaluates; make the field `required` or \
                 give it explicit presence",
                cel.id,
                field.descriptor.full_name()
            );
        }
        Ok(default_fails)
    }
}

fn is_scalar(kind: &Kind) -> bool {
    !matches!(kind, Kind::Message(_))
}

fn unmappable(rule: &Rule, field: &str, why: &str) -> String {
    format!(
        "cannot map rule `{}` on field `{field}` to the CRD schema: {why}",
        rule.id()
    )
}

fn int(value: impl TryInto<i64> + Copy + std::fmt::Display) -> Result<Node> {
    let n = value
        .try_into()
        .map_err(|_| anyhow::anyhow!("{value} does not fit a Kubernetes integer (int64)"))?;
    Ok(Node::Int(n))
}

/// The oneof as a CEL rule on the object: exactly one member (required) or
/// at most one. Members are optional properties, so `has()` tells presence.
fn oneof_rule(message: &Message, oneof: &str, members: &[String], required: bool) -> Result<Option<Node>> {
    let mut names = Vec::new();
    for member in members {
        let field = message
            .fields
            .iter()
            .find(|f| f.name() == member)
            .with_context(|| format!("oneof {oneof}: no field {member}"))?;
        names.push(field.json_name().to_owned());
    }
    let has: Vec<_> = names.iter().map(|n| format!("has(self.{})", escape(n))).collect();
    let listed = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let (rule, message) = match (required, has.as_slice()) {
        (false, [] | [_]) => return Ok(None),
        (true, []) => bail!(
            "{}: oneof {oneof} is required but has no members",
            message.descriptor.full_name()
        ),
        (true, [one]) => (one.clone(), format!("{listed} must be set (oneof {oneof}) [required]")),
        (true, [a, b]) => (
            format!("{a} != {b}"),
            format!("exactly one of {listed} must be set (oneof {oneof}) [required]"),
        ),
        (true, all) => (
            format!("[{}].filter(x, x).size() == 1", all.join(", ")),
            format!("exactly one of {listed} must be set (oneof {oneof}) [required]"),
        ),
        (false, [a, b]) => (
            format!("!({a} && {b})"),
            format!("at most one of {listed} may be set (oneof {oneof})"),
        ),
        (false, all) => (
            format!("[{}].filter(x, x).size() <= 1", all.join(", ")),
            format!("at most one of {listed} may be set (oneof {oneof})"),
        ),
    };
    let mut node = Obj::new();
    node.set("rule", rule);
    node.set("message", message);
    Ok(Some(node.into()))
}
