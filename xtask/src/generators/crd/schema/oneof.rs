//! Oneofs as CEL rules on the object: a proto `oneof` and
//! `(buf.validate.message).oneof`.

use anyhow::{Context, Result, bail};

use super::super::cel::{escape, has_text};
use super::super::node::{Node, Obj};
use crate::rules::{Message, MessageOneof};

/// `(buf.validate.message).oneof` as CEL rules on the object: at most one of
/// the fields set (as protovalidate's `has()` counts), and with `required`
/// at least one.
pub(super) fn message_oneof_rule(rule: &MessageOneof) -> Result<Vec<Node>> {
    let has = rule
        .fields
        .iter()
        .map(|f| has_text(f, "self"))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<_> = rule.fields.iter().map(|f| f.name()).collect();
    let names = names.join(", ");
    let mut out = Vec::new();
    let mut push = |rule: String, message: String| {
        let mut node = Obj::new();
        node.set("rule", rule);
        node.set("message", format!("{message} [message.oneof]"));
        out.push(Node::from(node));
    };
    let count = format!("[{}].filter(x, x).size()", has.join(", "));
    if has.len() > 1 {
        push(format!("{count} <= 1"), format!("only one of {names} can be set"));
    }
    if rule.required {
        let any = if has.len() == 1 {
            has[0].clone()
        } else {
            format!("{count} >= 1")
        };
        push(any, format!("one of {names} must be set"));
    }
    Ok(out)
}

/// The oneof as a CEL rule on the object: exactly one member (required) or
/// at most one. Members are optional properties, so `has()` tells presence.
pub(super) fn oneof_rule(message: &Message, oneof: &str, members: &[String], required: bool) -> Result<Option<Node>> {
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
