//! A map's key rules. The Kubernetes form's keys are an object's property
//! names, which OpenAPI's structural schemas cannot constrain, so each key
//! rule is a CEL rule on the map: `self.all(mapKey, <rule on mapKey>)`.

use anyhow::{Result, bail};

use super::super::cel::{self, string_literal};
use super::super::node::{Node, Obj};
use super::scalar::string_text;
use super::unmappable;
use crate::rules::{Rule, RuleKind, Scalar, ValueRules};

/// The key variable's name: not one a rule's own macros would use.
const KEY: &str = "mapKey";

/// The CEL rules on the map for its keys' rules.
pub fn rules(keys: &ValueRules, field: &str) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for rule in &keys.rules {
        let condition = condition(rule, field)?;
        let mut node = Obj::new();
        node.set("rule", format!("self.all({KEY}, {condition})"));
        node.set("message", format!("{} [{}]", rule.message, rule.id));
        out.push(node.into());
    }
    for rule in &keys.cel {
        let Node::Map(entries) = cel::rule_node(rule, KEY, None, None)? else {
            unreachable!("a rule node is a map")
        };
        let mut node = Obj::new();
        for (key, value) in entries {
            match (key.as_str(), value) {
                ("rule", Node::Str(text)) => node.set("rule", format!("self.all({KEY}, {text})")),
                (key, value) => node.set(key, value),
            }
        }
        out.push(node.into());
    }
    Ok(out)
}

/// A string rule as a CEL condition on the key.
fn condition(rule: &Rule, field: &str) -> Result<String> {
    let list = |values: &[Scalar]| -> Result<String> {
        let items = values.iter().map(string_text).collect::<Result<Vec<_>>>()?;
        Ok(format!("[{}]", items.join(", ")))
    };
    Ok(match &rule.kind {
        RuleKind::Len(n) => format!("{KEY}.size() == {n}"),
        RuleKind::MinLen(n) => format!("{KEY}.size() >= {n}"),
        RuleKind::MaxLen(n) => format!("{KEY}.size() <= {n}"),
        RuleKind::LenBytes(n) => format!("bytes({KEY}).size() == {n}"),
        RuleKind::MinBytes(n) => format!("bytes({KEY}).size() >= {n}"),
        RuleKind::MaxBytes(n) => format!("bytes({KEY}).size() <= {n}"),
        RuleKind::Pattern(p) => format!("{KEY}.matches({})", string_literal(&p.source)),
        RuleKind::Prefix(v) => format!("{KEY}.startsWith({})", string_text(v)?),
        RuleKind::Suffix(v) => format!("{KEY}.endsWith({})", string_text(v)?),
        RuleKind::Contains(v) => format!("{KEY}.contains({})", string_text(v)?),
        RuleKind::NotContains(v) => format!("!{KEY}.contains({})", string_text(v)?),
        RuleKind::Const(v) => format!("{KEY} == {}", string_text(v)?),
        RuleKind::In(values) => format!("{KEY} in {}", list(values)?),
        RuleKind::NotIn(values) => format!("!({KEY} in {})", list(values)?),
        _ => bail!(unmappable(
            rule,
            field,
            "the CRD generator has no CEL form of it for a map key"
        )),
    })
}
