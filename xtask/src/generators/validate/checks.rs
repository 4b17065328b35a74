//! Standard rules on one value, as Rust conditions that are true when the
//! rule is broken.
//!
//! The value is bound as prost stores it: `&str` for a string, `&[u8]` for
//! bytes, the number's own Rust type (`u32`, `f32`, an enum's `i32`), so a
//! rule's literal is written in that type. Float comparisons are written
//! as negated holds (`!(value > 1.5f64)`) so that NaN breaks every bound,
//! as in protovalidate.

use anyhow::{Result, bail};
use prost_reflect::Kind;

use super::Generated;
use crate::rules::formats::Check as FormatCheck;
use crate::rules::{Bound, Rule, RuleKind, Scalar};

/// One broken-rule condition and what it reports.
pub struct Check {
    pub broken: String,
    pub id: String,
    pub message: String,
}

impl Check {
    fn new(broken: String, rule: &Rule) -> Self {
        Self {
            broken,
            id: rule.id.clone(),
            message: rule.message.clone(),
        }
    }
}

/// The checks of `rules` on the value `var` of kind `kind`.
pub fn checks(generated: &mut Generated, kind: &Kind, rules: &[Rule], var: &str) -> Result<Vec<Check>> {
    let mut out = Vec::new();
    for rule in rules {
        let literal = |value: &Scalar| literal(kind, value);
        let is_text = *kind == Kind::String;
        let length = |var: &str| {
            if is_text {
                format!("crate::validate::char_len({var})")
            } else {
                format!("{var}.len()")
            }
        };
        let broken = match &rule.kind {
            RuleKind::Const(Scalar::Bool(true)) => format!("!{var}"),
            RuleKind::Const(Scalar::Bool(false)) => var.to_owned(),
            RuleKind::Const(value) => format!("{var} != {}", literal(value)?),
            RuleKind::In(values) => format!("!{}", one_of(kind, var, values)?),
            RuleKind::NotIn(values) => one_of(kind, var, values)?,
            RuleKind::Range {
                lower,
                upper,
                exclusive,
            } => {
                if lower.is_some() && upper.is_some() {
                    // Each bound is written as its rule says, not as a Range.
                    generated.lints.insert("clippy::manual_range_contains");
                }
                if matches!(kind, Kind::Float | Kind::Double) {
                    // `!(value > x)` is how NaN breaks a bound.
                    generated.lints.insert("clippy::neg_cmp_op_on_partial_ord");
                }
                range(kind, var, lower.as_ref(), upper.as_ref(), *exclusive)?
            }
            RuleKind::Finite => format!("!{var}.is_finite()"),
            RuleKind::MinLen(1) | RuleKind::MinBytes(1) | RuleKind::MinPairs(1) if !is_text => {
                format!("{var}.is_empty()")
            }
            RuleKind::MinBytes(1) => format!("{var}.is_empty()"),
            RuleKind::Len(n) => format!("{} != {n}", length(var)),
            RuleKind::MinLen(n) => format!("{} < {n}", length(var)),
            RuleKind::MaxLen(n) => format!("{} > {n}", length(var)),
            RuleKind::LenBytes(n) => format!("{var}.len() != {n}"),
            RuleKind::MinBytes(n) => format!("{var}.len() < {n}"),
            RuleKind::MaxBytes(n) => format!("{var}.len() > {n}"),
            RuleKind::Pattern(pattern) => format!("!{}.is_match({var})", generated.pattern(pattern)),
            RuleKind::Prefix(value) => format!("!{var}.starts_with({})", literal(value)?),
            RuleKind::Suffix(value) => format!("!{var}.ends_with({})", literal(value)?),
            RuleKind::Contains(value) => format!("!{var}.contains({})", literal(value)?),
            RuleKind::NotContains(value) => format!("{var}.contains({})", literal(value)?),
            RuleKind::Format(format) => {
                let valid = format_check(generated, &format.check(), var);
                if let Some((id, message)) = format.empty_rule() {
                    // An empty value breaks the `_empty` rule instead.
                    out.push(Check {
                        broken: format!("{var}.is_empty()"),
                        id,
                        message,
                    });
                    format!("!{var}.is_empty() && !{valid}")
                } else {
                    format!("!{valid}")
                }
            }
            RuleKind::DefinedOnly => {
                let Kind::Enum(enumeration) = kind else {
                    bail!("`enum.defined_only` on a non-enum")
                };
                let numbers: Vec<_> = enumeration.values().map(|v| v.number().to_string()).collect();
                format!("!matches!({var}, {})", numbers.join(" | "))
            }
            RuleKind::MinItems(1) => format!("{var}.is_empty()"),
            RuleKind::MinItems(n) | RuleKind::MinPairs(n) => format!("{var}.len() < {n}"),
            RuleKind::MaxItems(n) | RuleKind::MaxPairs(n) => format!("{var}.len() > {n}"),
            RuleKind::Unique => match kind {
                Kind::Message(_) => bail!("`repeated.unique` on messages: protovalidate does not support it"),
                // Floats are not `Eq`; NaN equals nothing, as in CEL.
                Kind::Float | Kind::Double => format!("crate::validate::has_equal_items({var})"),
                _ => format!("crate::validate::has_duplicates({var})"),
            },
        };
        out.push(Check::new(broken, rule));
    }
    Ok(out)
}

/// A well-known format's test on `var`, a primary Rust bool expression
/// (see [`crate::rules::formats`]).
fn format_check(generated: &mut Generated, check: &FormatCheck, var: &str) -> String {
    match check {
        FormatCheck::Pattern(pattern) => format!("{}.is_match({var})", generated.pattern(pattern)),
        FormatCheck::All(all) | FormatCheck::Any(all) => {
            let op = if matches!(check, FormatCheck::All(_)) {
                " && "
            } else {
                " || "
            };
            let parts: Vec<_> = all.iter().map(|c| format_check(generated, c, var)).collect();
            if parts.len() == 1 {
                parts.into_iter().next().expect("one part")
            } else {
                format!("({})", parts.join(op))
            }
        }
    }
}

/// `var` is one of `values` (a Rust bool expression).
fn one_of(kind: &Kind, var: &str, values: &[Scalar]) -> Result<String> {
    if values.is_empty() {
        return Ok("false".to_owned());
    }
    let literals = values.iter().map(|v| literal(kind, v)).collect::<Result<Vec<_>>>()?;
    Ok(match kind {
        // Float patterns are not allowed; bytes compare as slices.
        Kind::Float | Kind::Double | Kind::Bytes => format!("[{}].contains(&{var})", literals.join(", ")),
        _ => format!("matches!({var}, {})", literals.join(" | ")),
    })
}

/// The broken condition of a range.
fn range(kind: &Kind, var: &str, lower: Option<&Bound>, upper: Option<&Bound>, exclusive: bool) -> Result<String> {
    let float = matches!(kind, Kind::Float | Kind::Double);
    let holds_lower = |b: &Bound| -> Result<String> {
        let op = if b.inclusive { ">=" } else { ">" };
        Ok(format!("{var} {op} {}", literal(kind, &b.value)?))
    };
    let holds_upper = |b: &Bound| -> Result<String> {
        let op = if b.inclusive { "<=" } else { "<" };
        Ok(format!("{var} {op} {}", literal(kind, &b.value)?))
    };
    Ok(match (lower, upper) {
        // One integer bound: the comparison that breaks it, plainly.
        (Some(b), None) if !float => {
            let op = if b.inclusive { "<" } else { "<=" };
            format!("{var} {op} {}", literal(kind, &b.value)?)
        }
        (None, Some(b)) if !float => {
            let op = if b.inclusive { ">" } else { ">=" };
            format!("{var} {op} {}", literal(kind, &b.value)?)
        }
        (Some(b), None) => format!("!({})", holds_lower(b)?),
        (None, Some(b)) => format!("!({})", holds_upper(b)?),
        (Some(l), Some(u)) => {
            let joint = if exclusive { "||" } else { "&&" };
            format!("!({} {joint} {})", holds_lower(l)?, holds_upper(u)?)
        }
        (None, None) => bail!("a range without bounds"),
    })
}

/// `value` as a Rust literal of the type prost gives a value of `kind`.
pub fn literal(kind: &Kind, value: &Scalar) -> Result<String> {
    Ok(match (kind, value) {
        (Kind::Int32 | Kind::Sint32 | Kind::Sfixed32, Scalar::Int(i)) => format!("{i}i32"),
        (Kind::Int64 | Kind::Sint64 | Kind::Sfixed64, Scalar::Int(i)) => format!("{i}i64"),
        (Kind::Uint32 | Kind::Fixed32, Scalar::UInt(u)) => format!("{u}u32"),
        (Kind::Uint64 | Kind::Fixed64, Scalar::UInt(u)) => format!("{u}u64"),
        // Float rules hold f32 values, widened losslessly to f64 on reading.
        (Kind::Float, Scalar::Double(d)) => format!("{:?}f32", *d as f32),
        (Kind::Double, Scalar::Double(d)) => format!("{d:?}f64"),
        (Kind::Enum(_), Scalar::Int(i)) => i.to_string(),
        (Kind::Bool, Scalar::Bool(b)) => b.to_string(),
        (Kind::String, Scalar::String(s)) => format!("{s:?}"),
        (Kind::Bytes, Scalar::Bytes(b)) => format!("&{b:?}[..]"),
        (kind, value) => bail!("a rule value {value:?} on a field of kind {kind:?}"),
    })
}

/// The condition under which a value of `kind` bound to `var` is its zero value.
pub fn is_zero(kind: &Kind, var: &str) -> String {
    match kind {
        Kind::String | Kind::Bytes => format!("{var}.is_empty()"),
        Kind::Bool => format!("!{var}"),
        Kind::Float | Kind::Double => format!("{var} == 0.0"),
        _ => format!("{var} == 0"),
    }
}
