//! Which rules the zero value breaks: what makes an implicit-presence
//! field required in the Kubernetes form, which omits zero values.

use super::standard::{Rule, RuleKind, Scalar};

impl Rule {
    /// Whether the zero value of the field's type (`""`, `0`, `false`, an
    /// enum's 0, an empty list or map) breaks this rule. Such a rule makes
    /// an implicit-presence field required in the Kubernetes form, which
    /// omits zero values.
    pub fn breaks_zero(&self) -> bool {
        match &self.kind {
            RuleKind::Const(value) => !value.is_zero(),
            RuleKind::In(values) => !values.iter().any(Scalar::is_zero),
            RuleKind::NotIn(values) => values.iter().any(Scalar::is_zero),
            RuleKind::Range {
                lower,
                upper,
                exclusive,
            } => {
                let above = lower.as_ref().map(|b| match zero_versus(&b.value) {
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Equal => b.inclusive,
                    std::cmp::Ordering::Less => false,
                });
                let below = upper.as_ref().map(|b| match zero_versus(&b.value) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => b.inclusive,
                    std::cmp::Ordering::Greater => false,
                });
                let holds = match (above, below) {
                    (Some(a), Some(b)) if *exclusive => a || b,
                    (Some(a), Some(b)) => a && b,
                    (Some(a), None) => a,
                    (None, Some(b)) => b,
                    (None, None) => true,
                };
                !holds
            }
            RuleKind::Len(n) | RuleKind::LenBytes(n) => *n != 0,
            RuleKind::MinLen(n) | RuleKind::MinBytes(n) | RuleKind::MinItems(n) | RuleKind::MinPairs(n) => *n > 0,
            RuleKind::Pattern(pattern) => !pattern.matches_empty,
            RuleKind::Prefix(value) | RuleKind::Suffix(value) | RuleKind::Contains(value) => !value.is_zero(),
            RuleKind::NotContains(value) => value.is_zero(),
            RuleKind::Format(format) => format.empty_rule().is_some(),
            RuleKind::Finite
            | RuleKind::MaxLen(_)
            | RuleKind::MaxBytes(_)
            | RuleKind::MaxItems(_)
            | RuleKind::MaxPairs(_)
            | RuleKind::Unique
            | RuleKind::DefinedOnly => false,
        }
    }
}

/// How zero compares with a bound's value.
fn zero_versus(value: &Scalar) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match value {
        Scalar::Int(i) => 0.cmp(i),
        Scalar::UInt(u) => 0.cmp(u),
        Scalar::Double(d) => 0.0f64.partial_cmp(d).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
    }
}
