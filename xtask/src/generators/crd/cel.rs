//! CEL and its bounds: CEL rules as the Kubernetes API server reads them,
//! printed from the tree the rules model parsed and typed once
//! ([`crate::rules::cel`]), and the check that the API server can bound
//! their cost.
//!
//! The API server's CEL sees the Kubernetes JSON form, not the proto:
//!
//! - `this` is `self`; fields go by their JSON names (`self.secretName`),
//!   CEL keywords escaped as `__name__`;
//! - an absent property is an error to read, where protobuf reads the
//!   default: every field read is guarded, `(has(self.port) ? self.port : 0)`;
//!   `has()` is protovalidate's (an explicitly written `""` or `0` is unset);
//! - an enum is its value's short name, so the ints it is compared with are
//!   printed as names; every integer is an `int` (uint literals lose their
//!   `u`).

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::{EnumDescriptor, FieldDescriptor, Kind};

use super::node::{Node, Obj};
use crate::rules::cel::{Expr, ExprKind, Literal, Macro, Type};
use crate::rules::{Api, CelRule, Field, RuleKind};

/// Precedence levels, loosest first: an operand looser than its place is
/// parenthesized.
const CONDITIONAL: u8 = 0;
const OR: u8 = 1;
const AND: u8 = 2;
const RELATION: u8 = 3;
const UNARY: u8 = 5;
const PRIMARY: u8 = 6;

/// Prints `expr` with `this` standing for `this_text` (a primary expression:
/// `self`, or a guarded read of a property when the rule is lifted onto the
/// parent object).
pub fn print(expr: &Expr, this_text: &str) -> Result<String> {
    Ok(Printer { this: this_text }.expr(expr)?.0)
}

struct Printer<'a> {
    this: &'a str,
}

impl Printer<'_> {
    /// The text of `expr` and its precedence level.
    fn expr(&self, expr: &Expr) -> Result<(String, u8)> {
        Ok(match &expr.kind {
            ExprKind::This => (self.this.to_owned(), PRIMARY),
            ExprKind::Var(name) => (name.clone(), PRIMARY),
            ExprKind::Literal(literal) => (literal_text(literal), PRIMARY),
            ExprKind::List(items) => {
                let items = items
                    .iter()
                    .map(|i| self.at(i, CONDITIONAL))
                    .collect::<Result<Vec<_>>>()?;
                (format!("[{}]", items.join(", ")), PRIMARY)
            }
            ExprKind::Not(a) => (format!("!{}", self.at(a, UNARY)?), UNARY),
            ExprKind::And(a, b) => (format!("{} && {}", self.at(a, AND)?, self.at(b, AND)?), AND),
            ExprKind::Or(a, b) => (format!("{} || {}", self.at(a, OR)?, self.at(b, OR)?), OR),
            ExprKind::Compare(cmp, a, b) => {
                let (left, right) = (self.operand(a, b)?, self.operand(b, a)?);
                (format!("{left} {} {right}", cmp.symbol()), RELATION)
            }
            ExprKind::In(element, range) => {
                let range_text = match (&range.kind, &element.ty) {
                    (ExprKind::List(items), Type::Enum(e)) => {
                        let names = items.iter().map(|i| enum_name_of(e, i)).collect::<Result<Vec<_>>>()?;
                        format!("[{}]", names.join(", "))
                    }
                    _ => self.at(range, RELATION + 1)?,
                };
                (format!("{} in {range_text}", self.at(element, RELATION + 1)?), RELATION)
            }
            ExprKind::Conditional(c, a, b) => (
                format!(
                    "{} ? {} : {}",
                    self.at(c, OR)?,
                    self.at(a, OR)?,
                    self.at(b, CONDITIONAL)?
                ),
                CONDITIONAL,
            ),
            ExprKind::Field(operand, field) => {
                let (guards, place) = self.place(operand)?;
                let read = format!("{place}.{}", property(field));
                let mut guards = guards;
                guards.push(format!("has({read})"));
                (
                    format!("({} ? {read} : {})", guards.join(" && "), default_text(field)?),
                    PRIMARY,
                )
            }
            ExprKind::Has(operand, field) => {
                let (mut guards, place) = self.place(operand)?;
                let read = format!("{place}.{}", property(field));
                guards.push(format!("has({read})"));
                if let Some(non_default) = non_default(field, &read)? {
                    guards.push(non_default);
                }
                if guards.len() == 1 {
                    (guards.remove(0), PRIMARY)
                } else {
                    (format!("({})", guards.join(" && ")), PRIMARY)
                }
            }
            ExprKind::Size(a) => (format!("{}.size()", self.at(a, PRIMARY)?), PRIMARY),
            ExprKind::Text(function, receiver, argument) => (
                format!(
                    "{}.{}({})",
                    self.at(receiver, PRIMARY)?,
                    function.cel_name(),
                    self.at(argument, CONDITIONAL)?
                ),
                PRIMARY,
            ),
            ExprKind::Matches(receiver, pattern) => (
                format!(
                    "{}.matches({})",
                    self.at(receiver, PRIMARY)?,
                    string_literal(&pattern.source)
                ),
                PRIMARY,
            ),
            ExprKind::Macro(kind, range, var, body) => {
                let name = match kind {
                    Macro::All => "all",
                    Macro::Exists => "exists",
                    Macro::ExistsOne => "exists_one",
                    Macro::Filter => "filter",
                };
                (
                    format!(
                        "{}.{name}({var}, {})",
                        self.at(range, PRIMARY)?,
                        self.at(body, CONDITIONAL)?
                    ),
                    PRIMARY,
                )
            }
        })
    }

    /// `expr`'s text, parenthesized if it binds looser than `level`.
    fn at(&self, expr: &Expr, level: u8) -> Result<String> {
        let (text, own) = self.expr(expr)?;
        Ok(if own < level { format!("({text})") } else { text })
    }

    /// A comparison operand: an int literal next to an enum is its name.
    fn operand(&self, expr: &Expr, other: &Expr) -> Result<String> {
        if let (ExprKind::Literal(Literal::Int(_)), Type::Enum(e)) = (&expr.kind, &other.ty) {
            return enum_name_of(e, expr);
        }
        self.at(expr, RELATION + 1)
    }

    /// A message-valued expression as a place properties are read from: the
    /// `has()` guards it needs (outermost first) and its text.
    fn place(&self, expr: &Expr) -> Result<(Vec<String>, String)> {
        match &expr.kind {
            ExprKind::This => Ok((Vec::new(), self.this.to_owned())),
            ExprKind::Var(name) => Ok((Vec::new(), name.clone())),
            ExprKind::Field(operand, field) => {
                let (mut guards, place) = self.place(operand)?;
                let read = format!("{place}.{}", property(field));
                guards.push(format!("has({read})"));
                Ok((guards, read))
            }
            _ => bail!("a field is read only from `this`, a macro variable or another field"),
        }
    }
}

/// protovalidate's `has(place.field)` as the API server's CEL says it.
pub fn has_text(field: &FieldDescriptor, place: &str) -> Result<String> {
    let read = format!("{place}.{}", property(field));
    Ok(match non_default(field, &read)? {
        Some(non_default) => format!("(has({read}) && {non_default})"),
        None => format!("has({read})"),
    })
}

/// The condition, beyond presence, under which protovalidate's `has()` holds
/// for a property present in the JSON form.
fn non_default(field: &FieldDescriptor, read: &str) -> Result<Option<String>> {
    if field.containing_oneof().is_some()
        || matches!(field.kind(), Kind::Message(_)) && !field.is_map() && !field.is_list()
    {
        // Written means set, for a message and for a oneof member.
        return Ok(None);
    }
    Ok(Some(if field.is_list() || field.is_map() {
        format!("{read}.size() > 0")
    } else {
        format!("{read} != {}", default_text(field)?)
    }))
}

/// A field's default, as the API server's CEL sees it.
pub fn default_text(field: &FieldDescriptor) -> Result<String> {
    if field.is_map() {
        return Ok("{}".to_owned());
    }
    if field.is_list() {
        return Ok("[]".to_owned());
    }
    Ok(match field.kind() {
        Kind::Bool => "false".to_owned(),
        Kind::String => "''".to_owned(),
        Kind::Bytes => "b''".to_owned(),
        Kind::Float | Kind::Double => "0.0".to_owned(),
        Kind::Enum(e) => string_literal(&short_name(&e, 0)?),
        Kind::Message(m) => bail!("the default of message {} has no CEL literal", m.full_name()),
        _ => "0".to_owned(),
    })
}

/// The name the Kubernetes form writes for enum value `number`.
pub fn short_name(e: &EnumDescriptor, number: i32) -> Result<String> {
    let value = e
        .get_value(number)
        .with_context(|| format!("{} has no value {number}", e.full_name()))?;
    crate::rules::names::short_value_name(e.name(), value.name())
        .map(str::to_owned)
        .with_context(|| {
            format!(
                "enum {}: value {} lacks the prefix {}",
                e.full_name(),
                value.name(),
                crate::rules::names::enum_value_prefix(e.name())
            )
        })
}

fn enum_name_of(e: &EnumDescriptor, literal: &Expr) -> Result<String> {
    let ExprKind::Literal(Literal::Int(n)) = literal.kind else {
        bail!("an enum compares only with int literals")
    };
    let number = i32::try_from(n).context("an enum number is an int32")?;
    Ok(string_literal(&short_name(e, number)?))
}

fn literal_text(literal: &Literal) -> String {
    match literal {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(i) => i.to_string(),
        // The API server's integers are all `int`.
        Literal::UInt(u) => u.to_string(),
        Literal::Double(d) => format!("{d:?}"),
        Literal::String(s) => string_literal(s),
    }
}

/// A single-quoted CEL string literal.
pub fn string_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A CEL bytes literal, every byte escaped.
pub fn bytes_literal(value: &[u8]) -> String {
    let mut out = String::from("b'");
    for b in value {
        out.push_str(&format!("\\x{b:02x}"));
    }
    out.push('\'');
    out
}

/// A property name as the API server's CEL spells it: CEL keywords are
/// escaped as `__name__`.
pub fn property(field: &FieldDescriptor) -> String {
    escape(field.json_name())
}

/// See [`property`].
pub fn escape(name: &str) -> String {
    if crate::rules::cel::RESERVED_WORDS.contains(&name) {
        format!("__{name}__")
    } else {
        name.to_owned()
    }
}

/// One `x-kubernetes-validations` entry for `rule`, `this` standing for
/// `this_text`; `guard`, when given, is or-ed before it (the rule holds when
/// the guard does). The message keeps the rule id visible, as `[id]`:
/// apiextensions v1 allows only `rule`, `message`, `messageExpression`,
/// `reason` (four fixed values), `fieldPath` and `optionalOldSelf`, so the
/// message is the one free text.
pub fn rule_node(rule: &CelRule, this_text: &str, guard: Option<&str>, field_path: Option<&str>) -> Result<Node> {
    let printer = Printer { this: this_text };
    let text = match guard {
        Some(guard) => format!("{guard} || {}", printer.at(&rule.expr, OR)?),
        None => printer.expr(&rule.expr)?.0,
    };
    let mut node = Obj::new();
    node.set("rule", text);
    node.set("message", format!("{} [{}]", rule.message, rule.id));
    if let Some(path) = field_path {
        node.set("fieldPath", path);
    }
    Ok(node.into())
}

/// Fails unless every string, list and map the rule reads has a maximum
/// size the API server's cost estimate can use: `maxLength` (from
/// `max_len`, `len`, `max_bytes`, `len_bytes`), `maxItems`, `maxProperties`;
/// for a list of strings a macro walks, the items' too. `this_field` is the
/// field a field-level rule is on (`this` reads it).
pub fn check_reads(expr: &Expr, api: &Api, this_field: Option<&Field>) -> Result<()> {
    let mut problems = Vec::new();
    expr.walk(&mut |e| {
        let field = match &e.kind {
            ExprKind::This => this_field.map(|f| f.descriptor.clone()),
            ExprKind::Field(_, field) => Some(field.clone()),
            _ => None,
        };
        let Some(field) = field else { return };
        let model = api
            .message(field.parent_message().full_name())
            .and_then(|m| m.fields.iter().find(|f| f.descriptor == field));
        let Some(model) = model else { return };
        if let Some(problem) = unbounded(model, &e.ty) {
            problems.push(problem);
        }
    });
    ensure!(
        problems.is_empty(),
        "the API server could not bound its cost: {}",
        problems.join("; ")
    );
    Ok(())
}

/// Why the value of `field` (of CEL type `ty`) has no size bound, if it has none.
fn unbounded(field: &Field, ty: &Type) -> Option<String> {
    let name = field.descriptor.full_name();
    let bounded = |rules: &[crate::rules::Rule]| {
        rules.iter().any(|r| {
            matches!(
                r.kind,
                RuleKind::MaxLen(_)
                    | RuleKind::Len(_)
                    | RuleKind::MaxBytes(_)
                    | RuleKind::LenBytes(_)
                    | RuleKind::MaxItems(_)
                    | RuleKind::MaxPairs(_)
            )
        })
    };
    match ty {
        Type::String | Type::Bytes if !bounded(&field.rules) => Some(format!("`{name}` has no max_len (or max_bytes)")),
        Type::List(_) | Type::Map(..) if !bounded(&field.rules) => Some(format!(
            "`{name}` has no {}",
            if field.descriptor.is_map() {
                "max_pairs"
            } else {
                "max_items"
            }
        )),
        Type::List(element) if matches!(**element, Type::String | Type::Bytes) => match &field.items {
            Some(items) if bounded(&items.rules) => None,
            _ => Some(format!("the items of `{name}` have no max_len")),
        },
        _ => None,
    }
}

/// Fails if a node with CEL rules is, or lies inside, a list or string
/// without a bound: the API server's CEL cost estimate would reject the CRD.
pub fn check_cel_bounds(node: &Node, path: &str, unbounded_above: bool) -> Result<()> {
    let Node::Map(entries) = node else {
        return Ok(());
    };
    let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let kind = get("type").and_then(Node::as_str).unwrap_or("");
    let is_map = get("additionalProperties").is_some();
    let unbounded_here = match kind {
        "array" => get("maxItems").is_none(),
        "string" => get("maxLength").is_none(),
        "object" if is_map => get("maxProperties").is_none(),
        _ => false,
    };
    if let Some(Node::List(rules)) = get("x-kubernetes-validations") {
        let rule = rules.first().and_then(|r| match r {
            Node::Map(m) => m.iter().find(|(k, _)| k == "message").and_then(|(_, v)| v.as_str()),
            _ => None,
        });
        ensure!(
            !unbounded_here && !unbounded_above,
            "CEL rule {:?} at `{}` acts on a list or string without maxItems/maxLength (here or above); \
             add a max_items/max_len rule so the API server can bound its cost",
            rule.unwrap_or_default(),
            if path.is_empty() { "." } else { path }
        );
    }
    let below = unbounded_above || ((kind == "array" || is_map) && unbounded_here);
    if let Some(Node::Map(properties)) = get("properties") {
        for (name, child) in properties {
            check_cel_bounds(child, &format!("{path}.{name}"), below)?;
        }
    }
    if let Some(items) = get("items") {
        check_cel_bounds(items, &format!("{path}[*]"), below)?;
    }
    if let Some(values) = get("additionalProperties") {
        check_cel_bounds(values, &format!("{path}[*]"), below)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::cel::parse;

    #[test]
    fn prints_this_as_self_keeping_literals_and_grouping() {
        let cases = [
            ("this.size() > 0", "self.size() > 0"),
            ("!this.contains('this')", "!self.contains('this')"),
            (r#"this == "this \" this""#, r#"self == 'this " this'"#),
            ("this.startsWith(r'\\this')", "self.startsWith('\\\\this')"),
            (r#""it's this" != this"#, r#"'it\'s this' != self"#),
            (
                "!this.contains('/./') && !this.contains('/../') && !this.endsWith('/.') && !this.endsWith('/..')",
                "!self.contains('/./') && !self.contains('/../') && !self.endsWith('/.') && !self.endsWith('/..')",
            ),
            (
                "(this == 'a' || this == 'b') && this != 'c'",
                "(self == 'a' || self == 'b') && self != 'c'",
            ),
            ("!(this == 'a' || this == 'b')", "!(self == 'a' || self == 'b')"),
            (
                "this.size() > 2 ? this.startsWith('a') : true",
                "self.size() > 2 ? self.startsWith('a') : true",
            ),
        ];
        for (protovalidate, kubernetes) in cases {
            let expr = parse(protovalidate, Type::String).unwrap();
            assert_eq!(print(&expr, "self").unwrap(), kubernetes, "{protovalidate}");
        }
        let list = parse("this.all(x, x.size() < 5u.size())", Type::List(Box::new(Type::String)));
        assert!(list.is_err(), "a uint has no size");
        let list = parse("this.all(x, x.size() < 5)", Type::List(Box::new(Type::String))).unwrap();
        assert_eq!(print(&list, "self").unwrap(), "self.all(x, x.size() < 5)");
        let uint = parse("this >= 5u && this in [6u, 7u]", Type::UInt).unwrap();
        assert_eq!(print(&uint, "self").unwrap(), "self >= 5 && self in [6, 7]");
    }

    #[test]
    fn escapes_string_literals() {
        assert_eq!(string_literal("a'b\\c\nd\u{1}"), "'a\\'b\\\\c\\nd\\u0001'");
    }
}
