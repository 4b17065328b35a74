//! What the generator reads from CEL rules: the literals they compare
//! fields with (candidates for those fields), and, where `this` is one
//! scalar, a verdict on a candidate.

use std::collections::BTreeMap;

use aether_rules::cel::{Cmp, Expr, ExprKind, Literal, TextFn};
use prost_reflect::{FieldDescriptor, Kind};
use serde_json::{Map, Value};

use crate::val::Val;

/// The literals CEL rules compare each field with, by the field's full
/// name: `this.backend.weight <= 500u` gives `weight` the candidate 500.
pub type Literals = BTreeMap<String, Vec<Val>>;

/// The sizes CEL rules compare each field's `size()` with, by the field's
/// full name: `this.size() <= 6` gives a string the lengths 5, 6 and 7.
pub type Sizes = BTreeMap<String, Vec<u64>>;

/// Adds the literals and sizes of `expr` to `out` and `sizes`;
/// `this_field` is the field whose value `this` is (for a field's own
/// rules), if any.
pub fn collect(expr: &Expr, this_field: Option<&str>, out: &mut Literals, sizes: &mut Sizes) {
    let field_of = |subject: &Expr| match &subject.kind {
        ExprKind::Field(_, field) => Some(field.full_name().to_owned()),
        ExprKind::This => this_field.map(str::to_owned),
        _ => None,
    };
    expr.walk(&mut |e| {
        let (a, b) = match &e.kind {
            ExprKind::Compare(_, a, b) | ExprKind::Text(_, a, b) | ExprKind::In(a, b) => (a, b),
            _ => return,
        };
        for (subject, other) in [(a, b), (b, a)] {
            if let ExprKind::Size(inner) = &subject.kind
                && let ExprKind::Literal(l) = &other.kind
                && let (Some(field), Val::Int(n)) = (field_of(inner), literal(l))
                && let Ok(n) = u64::try_from(n)
            {
                let list = sizes.entry(field).or_default();
                if !list.contains(&n) {
                    list.push(n);
                }
                continue;
            }
            let Some(field) = field_of(subject) else { continue };
            let values: Vec<Val> = match &other.kind {
                ExprKind::Literal(l) => vec![literal(l)],
                ExprKind::List(items) => items
                    .iter()
                    .filter_map(|i| match &i.kind {
                        ExprKind::Literal(l) => Some(literal(l)),
                        _ => None,
                    })
                    .collect(),
                _ => continue,
            };
            let list = out.entry(field).or_default();
            for value in values {
                if !list.contains(&value) {
                    list.push(value);
                }
            }
        }
    });
}

fn literal(l: &Literal) -> Val {
    match l {
        Literal::Bool(b) => Val::Bool(*b),
        Literal::Int(i) => Val::Int((*i).into()),
        Literal::UInt(u) => Val::Int((*u).into()),
        Literal::Double(d) => Val::Double(*d),
        Literal::String(s) => Val::Str(s.clone()),
    }
}

/// The rule's verdict when `this` is `value`, or `None` where it needs
/// more than one scalar (fields, macros) or a construct not read here.
pub fn eval_on(expr: &Expr, value: &Val) -> Option<bool> {
    match eval(expr, value)? {
        Val::Bool(b) => Some(b),
        _ => None,
    }
}

fn eval(expr: &Expr, this: &Val) -> Option<Val> {
    Some(match &expr.kind {
        ExprKind::This => this.clone(),
        ExprKind::Literal(l) => literal(l),
        ExprKind::Not(a) => Val::Bool(!truth(a, this)?),
        ExprKind::And(a, b) => Val::Bool(truth(a, this)? && truth(b, this)?),
        ExprKind::Or(a, b) => Val::Bool(truth(a, this)? || truth(b, this)?),
        ExprKind::Conditional(c, a, b) => {
            if truth(c, this)? {
                eval(a, this)?
            } else {
                eval(b, this)?
            }
        }
        ExprKind::Size(a) => match eval(a, this)? {
            Val::Str(s) => Val::Int(s.chars().count() as i128),
            Val::Bytes(b) => Val::Int(b.len() as i128),
            _ => return None,
        },
        ExprKind::Text(f, a, b) => match (eval(a, this)?, eval(b, this)?) {
            (Val::Str(a), Val::Str(b)) => Val::Bool(match f {
                TextFn::Contains => a.contains(&b),
                TextFn::StartsWith => a.starts_with(&b),
                TextFn::EndsWith => a.ends_with(&b),
            }),
            _ => return None,
        },
        ExprKind::Matches(a, pattern) => match eval(a, this)? {
            Val::Str(s) => Val::Bool(crate::regex::is_match(&pattern.source, &s)?),
            _ => return None,
        },
        ExprKind::Compare(op, a, b) => {
            let ordering = match (eval(a, this)?, eval(b, this)?) {
                (Val::Int(a), Val::Int(b)) => a.partial_cmp(&b),
                (Val::Double(a), Val::Double(b)) => a.partial_cmp(&b),
                (Val::Str(a), Val::Str(b)) => a.partial_cmp(&b),
                (Val::Bool(a), Val::Bool(b)) => a.partial_cmp(&b),
                _ => return None,
            };
            use std::cmp::Ordering::*;
            Val::Bool(match (op, ordering) {
                (Cmp::Ne, None) => true,
                (_, None) => false,
                (Cmp::Eq, Some(o)) => o == Equal,
                (Cmp::Ne, Some(o)) => o != Equal,
                (Cmp::Lt, Some(o)) => o == Less,
                (Cmp::Le, Some(o)) => o != Greater,
                (Cmp::Gt, Some(o)) => o == Greater,
                (Cmp::Ge, Some(o)) => o != Less,
            })
        }
        ExprKind::In(a, b) => {
            let needle = eval(a, this)?;
            match &b.kind {
                ExprKind::List(items) => {
                    let mut found = false;
                    for item in items {
                        found |= eval(item, this)? == needle;
                    }
                    Val::Bool(found)
                }
                _ => return None,
            }
        }
        ExprKind::Field(a, field) => match eval(a, this)? {
            Val::Msg(object) => read_field(&object, field),
            _ => return None,
        },
        ExprKind::Has(a, field) => match eval(a, this)? {
            Val::Msg(object) => Val::Bool(match object.get(field.json_name()) {
                None | Some(Value::Null) => false,
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) if field.is_map() => !o.is_empty(),
                Some(Value::Object(_)) => true,
                Some(_) if field.supports_presence() => true,
                Some(v) => {
                    read_field(&object, field) != default_of(&field.kind()).unwrap_or(Val::Bool(false)) || v.is_null()
                }
            }),
            _ => return None,
        },
        _ => return None,
    })
}

/// A field of a drawn message as CEL reads it: its default when unset.
fn read_field(object: &Map<String, Value>, field: &FieldDescriptor) -> Val {
    let missing = || default_of(&field.kind()).unwrap_or(Val::Bool(false));
    if field.is_list() || field.is_map() {
        // Lists and maps are read only by macros and size(), not here.
        return Val::Bool(false);
    }
    let Some(value) = object.get(field.json_name()) else {
        return missing();
    };
    match (field.kind(), value) {
        (Kind::Message(_), Value::Object(o)) => Val::Msg(o.clone()),
        (Kind::String, Value::String(s)) => Val::Str(s.clone()),
        (Kind::Bool, Value::Bool(b)) => Val::Bool(*b),
        (Kind::Enum(e), Value::String(name)) => crate::val::enum_number(&e, name)
            .map(|n| Val::Int(n.into()))
            .unwrap_or_else(missing),
        (Kind::Float | Kind::Double, Value::Number(n)) => n.as_f64().map(Val::Double).unwrap_or_else(missing),
        (_, Value::Number(n)) => n
            .as_i64()
            .map(|i| Val::Int(i.into()))
            .or_else(|| n.as_u64().map(|u| Val::Int(u.into())))
            .unwrap_or_else(missing),
        (_, Value::String(s)) => s.parse::<i128>().map(Val::Int).unwrap_or_else(|_| missing()),
        _ => missing(),
    }
}

/// The zero value of a scalar `kind` (`None` for a message).
pub fn zero_of(kind: &Kind) -> Option<Val> {
    match kind {
        Kind::Message(_) => None,
        kind => default_of(kind),
    }
}

fn default_of(kind: &Kind) -> Option<Val> {
    Some(match kind {
        Kind::String => Val::Str(String::new()),
        Kind::Bytes => Val::Bytes(Vec::new()),
        Kind::Bool => Val::Bool(false),
        Kind::Float | Kind::Double => Val::Double(0.0),
        Kind::Message(_) => Val::Msg(Map::new()),
        _ => Val::Int(0),
    })
}

fn truth(expr: &Expr, this: &Val) -> Option<bool> {
    match eval(expr, this)? {
        Val::Bool(b) => Some(b),
        _ => None,
    }
}
