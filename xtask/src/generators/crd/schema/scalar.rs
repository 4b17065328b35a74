//! The schema of one scalar value: its type, and each standard rule as
//! OpenAPI keywords where one fits, or as a CEL rule on the node.
//!
//! Each rule adds a group of keywords. A group merges into the node unless
//! one of its keywords is already there; then it goes into `allOf`. Keys are
//! written in one fixed order, whatever order the rules come in. With
//! `ignore: IGNORE_IF_ZERO_VALUE`, the groups the zero value breaks go into
//! `anyOf: [{enum: [zero]}, {...}]`, and CEL rules become `self == zero || ...`.

use anyhow::{Context, Result, bail};
use prost_reflect::{EnumDescriptor, Kind};

use super::super::cel::{bytes_literal, short_name, string_literal};
use super::super::node::{Node, Obj};
use super::{int, unmappable};
use crate::rules::formats::Check;
use crate::rules::{Format, Rule, RuleKind, Scalar};

/// The order keys are written in.
const ORDER: [&str; 15] = [
    "type",
    "format",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
    "not",
    "anyOf",
    "allOf",
    "x-kubernetes-validations",
    "description",
];

/// What a scalar value's schema is built from.
pub struct ScalarSchema<'a> {
    /// The field's full name, for errors.
    pub field: &'a str,
    pub kind: Kind,
    pub rules: &'a [Rule],
    /// `required` on an implicit-presence scalar: the zero value is refused.
    pub non_default: bool,
    /// `IGNORE_IF_ZERO_VALUE`: the zero value is accepted whatever the rules.
    pub if_zero: bool,
}

/// Keyword groups and CEL rules, as the rules are mapped.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) node: Obj,
    all_of: Vec<Node>,
    /// Groups the zero value breaks, under `if_zero`.
    guarded: Obj,
    guarded_all_of: Vec<Node>,
    validations: Vec<Node>,
}

impl Builder {
    pub(super) fn add<K: AsRef<str>>(&mut self, group: Vec<(K, Node)>, guarded: bool) {
        let (node, all_of) = if guarded {
            (&mut self.guarded, &mut self.guarded_all_of)
        } else {
            (&mut self.node, &mut self.all_of)
        };
        if group.iter().any(|(k, _)| node.get(k.as_ref()).is_some()) {
            let mut sub = Obj::new();
            for (k, v) in group {
                sub.set(k.as_ref(), v);
            }
            all_of.push(sub.into());
        } else {
            for (k, v) in group {
                node.set(k.as_ref(), v);
            }
        }
    }

    pub(super) fn cel(&mut self, rule: String, message: String) {
        let mut node = Obj::new();
        node.set("rule", rule);
        node.set("message", message);
        self.validations.push(node.into());
    }
}

impl ScalarSchema<'_> {
    /// The schema node, without description.
    pub fn schema(&self) -> Result<Obj> {
        let mut b = Builder::default();
        match &self.kind {
            Kind::String => self.string(&mut b)?,
            Kind::Bytes => self.bytes(&mut b)?,
            Kind::Bool => self.boolean(&mut b)?,
            Kind::Enum(e) => self.enumeration(e, &mut b)?,
            Kind::Float | Kind::Double => self.number(&mut b)?,
            Kind::Message(_) => bail!("`{}`: a message is not a scalar", self.field),
            _ => self.integer(&mut b)?,
        }
        if !b.guarded.is_empty() || !b.guarded_all_of.is_empty() {
            let mut guarded = std::mem::take(&mut b.guarded);
            if !b.guarded_all_of.is_empty() {
                guarded.set("allOf", Node::List(std::mem::take(&mut b.guarded_all_of)));
            }
            let mut zero = Obj::new();
            zero.set("enum", Node::List(vec![self.zero()?]));
            b.add(vec![("anyOf", Node::List(vec![zero.into(), guarded.into()]))], false);
        }
        let mut node = b.node;
        if !b.all_of.is_empty() {
            node.set("allOf", Node::List(b.all_of));
        }
        if !b.validations.is_empty() {
            node.set("x-kubernetes-validations", Node::List(b.validations));
        }
        Ok(ordered(node))
    }

    /// Whether a group mapped from `rule` must be guarded by "or zero".
    pub(super) fn guarded(&self, rule: &Rule) -> bool {
        self.if_zero && rule.breaks_zero()
    }

    /// The zero value in the Kubernetes form.
    fn zero(&self) -> Result<Node> {
        Ok(match &self.kind {
            Kind::String | Kind::Bytes => Node::from(""),
            Kind::Bool => Node::Bool(false),
            Kind::Enum(e) => Node::from(short_name(e, 0)?),
            Kind::Float | Kind::Double => Node::Float(0.0),
            _ => Node::Int(0),
        })
    }

    /// A CEL rule on the node, or-ed with "is zero" when guarded.
    fn cel(&self, b: &mut Builder, rule: &Rule, expression: String, zero: &str) {
        let expression = if self.guarded(rule) {
            format!("self == {zero} || {expression}")
        } else {
            expression
        };
        b.cel(expression, format!("{} [{}]", rule.message, rule.id));
    }

    fn string(&self, b: &mut Builder) -> Result<()> {
        b.node.set("type", "string");
        let mut min_len = if self.non_default { Some(1) } else { None };
        for rule in self.rules {
            let g = self.guarded(rule);
            let text = |v: &Scalar| match v {
                Scalar::String(s) => Ok(s.clone()),
                other => bail!("a string rule holding {other:?}"),
            };
            match &rule.kind {
                RuleKind::MinLen(n) if !g => min_len = Some(min_len.unwrap_or(0).max(*n)),
                RuleKind::MinLen(n) => b.add(vec![("minLength", int(*n)?)], g),
                RuleKind::MaxLen(n) => b.add(vec![("maxLength", int(*n)?)], g),
                RuleKind::Len(n) => b.add(vec![("minLength", int(*n)?), ("maxLength", int(*n)?)], g),
                RuleKind::Pattern(p) => b.add(vec![("pattern", p.source.as_str().into())], g),
                RuleKind::In(values) => {
                    let mut values = values.iter().map(text).collect::<Result<Vec<_>>>()?;
                    if self.non_default {
                        values.retain(|v| !v.is_empty());
                    }
                    b.add(
                        vec![("enum", Node::List(values.into_iter().map(Node::from).collect()))],
                        g,
                    );
                }
                RuleKind::Const(v) => b.add(vec![("enum", Node::List(vec![text(v)?.into()]))], g),
                RuleKind::NotIn(values) => {
                    let values = values
                        .iter()
                        .map(|v| Ok(Node::from(text(v)?)))
                        .collect::<Result<Vec<_>>>()?;
                    b.add(vec![("not", enum_of(values))], g);
                }
                RuleKind::Prefix(v) => b.add(vec![("pattern", format!("^{}", regex::escape(&text(v)?)).into())], g),
                RuleKind::Suffix(v) => b.add(vec![("pattern", format!("{}$", regex::escape(&text(v)?)).into())], g),
                RuleKind::Contains(v) => b.add(vec![("pattern", regex::escape(&text(v)?).into())], g),
                RuleKind::NotContains(v) => {
                    let mut not = Obj::new();
                    not.set("pattern", regex::escape(&text(v)?));
                    b.add(vec![("not", not.into())], g);
                }
                RuleKind::LenBytes(n) | RuleKind::MaxBytes(n) | RuleKind::MinBytes(n) => {
                    let op = match rule.kind {
                        RuleKind::LenBytes(_) => "==",
                        RuleKind::MaxBytes(_) => "<=",
                        _ => ">=",
                    };
                    if !matches!(rule.kind, RuleKind::MinBytes(_)) {
                        // A string of n bytes has at most n characters: a
                        // bound the API server's cost estimate can use.
                        b.add(vec![("maxLength", int(*n)?)], false);
                    }
                    self.cel(b, rule, format!("bytes(self).size() {op} {n}"), "''");
                }
                RuleKind::Format(format) => self.format(b, rule, *format)?,
                _ => bail!(unmappable(rule, self.field, "it does not apply to a string")),
            }
        }
        if let Some(n) = min_len {
            b.add(vec![("minLength", int(n)?)], false);
        }
        Ok(())
    }

    /// A well-known format: its patterns, combined with `allOf`/`anyOf`
    /// (see [`crate::rules::formats`]). The patterns refuse the empty string
    /// (but `uri_ref`'s), as protovalidate's `_empty` rules do.
    fn format(&self, b: &mut Builder, rule: &Rule, format: Format) -> Result<()> {
        let group = match format_node(&format.check()) {
            Node::Map(entries) => entries,
            _ => unreachable!("a check is a map"),
        };
        b.add(group, self.guarded(rule));
        Ok(())
    }

    fn bytes(&self, b: &mut Builder) -> Result<()> {
        b.node.set("type", "string");
        // Base64 in the Kubernetes form; CEL reads the decoded bytes.
        b.node.set("format", "byte");
        if self.non_default {
            b.add(vec![("minLength", Node::Int(1))], false);
        }
        let literal = |v: &Scalar| match v {
            Scalar::Bytes(bytes) => Ok(bytes_literal(bytes)),
            other => bail!("a bytes rule holding {other:?}"),
        };
        for rule in self.rules {
            let (expression, max) = match &rule.kind {
                RuleKind::Len(n) => (format!("self.size() == {n}"), Some(*n)),
                RuleKind::MinLen(n) => (format!("self.size() >= {n}"), None),
                RuleKind::MaxLen(n) => (format!("self.size() <= {n}"), Some(*n)),
                // Equal to one of these: no longer than the longest.
                RuleKind::Const(v) => (format!("self == {}", literal(v)?), Some(byte_len(v))),
                RuleKind::In(values) if values.is_empty() => continue,
                RuleKind::In(values) | RuleKind::NotIn(values) => {
                    let items = values.iter().map(literal).collect::<Result<Vec<_>>>()?;
                    let list = format!("self in [{}]", items.join(", "));
                    if matches!(rule.kind, RuleKind::In(_)) {
                        (list, values.iter().map(byte_len).max())
                    } else {
                        (format!("!({list})"), None)
                    }
                }
                _ => bail!(unmappable(
                    rule,
                    self.field,
                    "the API server's CEL has no such function on bytes"
                )),
            };
            if let Some(n) = max {
                // The base64 text of n bytes is at most 4⌈n/3⌉ characters.
                b.add(vec![("maxLength", int(n.div_ceil(3) * 4)?)], false);
            }
            self.cel(b, rule, expression, "b''");
        }
        Ok(())
    }

    fn boolean(&self, b: &mut Builder) -> Result<()> {
        b.node.set("type", "boolean");
        if self.non_default {
            b.add(vec![("enum", Node::List(vec![Node::Bool(true)]))], false);
        }
        for rule in self.rules {
            match &rule.kind {
                RuleKind::Const(Scalar::Bool(v)) => {
                    b.add(vec![("enum", Node::List(vec![Node::Bool(*v)]))], self.guarded(rule))
                }
                _ => bail!(unmappable(rule, self.field, "it does not apply to a bool")),
            }
        }
        Ok(())
    }

    /// An enum: the short names of the values the rules allow. The
    /// Kubernetes form writes names only, so only defined values can be
    /// written at all (`defined_only` adds nothing).
    fn enumeration(&self, e: &EnumDescriptor, b: &mut Builder) -> Result<()> {
        b.node.set("type", "string");
        let mut allowed: Vec<i32> = e.values().map(|v| v.number()).collect();
        let number = |v: &Scalar| match v {
            Scalar::Int(n) => i32::try_from(*n).context("an enum number"),
            other => bail!("an enum rule holding {other:?}"),
        };
        for rule in self.rules {
            match &rule.kind {
                RuleKind::DefinedOnly => {}
                RuleKind::Const(v) => {
                    let n = number(v)?;
                    allowed.retain(|a| *a == n || (self.guarded(rule) && *a == 0));
                }
                RuleKind::In(values) => {
                    let values = values.iter().map(number).collect::<Result<Vec<_>>>()?;
                    allowed.retain(|a| values.contains(a) || (self.guarded(rule) && *a == 0));
                }
                RuleKind::NotIn(values) => {
                    let values = values.iter().map(number).collect::<Result<Vec<_>>>()?;
                    allowed.retain(|a| !values.contains(a) || (self.guarded(rule) && *a == 0));
                }
                _ => bail!(unmappable(rule, self.field, "it does not apply to an enum")),
            }
        }
        if self.non_default {
            allowed.retain(|a| *a != 0);
        }
        allowed.dedup();
        let names = allowed
            .into_iter()
            .map(|n| Ok(Node::from(short_name(e, n)?)))
            .collect::<Result<Vec<_>>>()?;
        b.add(vec![("enum", Node::List(names))], false);
        Ok(())
    }
}

/// A format's check as a schema node holding only value validations.
fn format_node(check: &Check) -> Node {
    let mut node = Obj::new();
    match check {
        Check::Pattern(p) => node.set("pattern", p.source.as_str()),
        Check::All(all) if all.len() == 1 => return format_node(&all[0]),
        Check::Any(any) if any.len() == 1 => return format_node(&any[0]),
        Check::All(all) => node.set("allOf", Node::List(all.iter().map(format_node).collect())),
        Check::Any(any) => node.set("anyOf", Node::List(any.iter().map(format_node).collect())),
    }
    node.into()
}

fn byte_len(value: &Scalar) -> u64 {
    match value {
        Scalar::Bytes(b) => b.len() as u64,
        _ => 0,
    }
}

pub(super) fn enum_of(values: Vec<Node>) -> Node {
    let mut not = Obj::new();
    not.set("enum", Node::List(values));
    not.into()
}

/// `node`'s keys in [`ORDER`], any others after them.
fn ordered(mut node: Obj) -> Obj {
    let mut out = Obj::new();
    for key in ORDER {
        if let Some(value) = node.get(key).cloned() {
            out.set(key, value);
            node.remove(key);
        }
    }
    for (key, value) in node.into_entries() {
        out.set(&key, value);
    }
    out
}

/// The CEL text of a string value, for rules printed as CEL.
pub fn string_text(value: &Scalar) -> Result<String> {
    match value {
        Scalar::String(s) => Ok(string_literal(s)),
        other => bail!("a string rule holding {other:?}"),
    }
}
