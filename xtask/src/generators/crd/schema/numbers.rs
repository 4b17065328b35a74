//! Integers and floats: their type and format, ranges as `minimum` and
//! `maximum` (an exclusive range, outside two bounds, as `anyOf`), `const`
//! and `in` as `enum`, `not_in` as `not: {enum}`.

use anyhow::{Result, bail};
use prost_reflect::Kind;

use super::super::node::{Node, Obj};
use super::scalar::{Builder, ScalarSchema, enum_of};
use super::{int, unmappable};
use crate::rules::{Bound, RuleKind, Scalar};

impl ScalarSchema<'_> {
    pub(super) fn integer(&self, b: &mut Builder) -> Result<()> {
        let (format, natural): (&str, (Option<i128>, Option<i128>)) = match self.kind {
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => ("int32", (None, None)),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => ("int64", (None, None)),
            Kind::Uint32 | Kind::Fixed32 => ("", (Some(0), Some(u32::MAX.into()))),
            _ => ("", (Some(0), None)),
        };
        b.node.set("type", "integer");
        if !format.is_empty() {
            b.node.set("format", format);
        }
        let value = |s: &Scalar| -> Result<i128> {
            match s {
                Scalar::Int(i) => Ok((*i).into()),
                Scalar::UInt(u) => Ok((*u).into()),
                other => bail!("an integer rule holding {other:?}"),
            }
        };
        // (value, exclusive) of the bounds written as minimum and maximum.
        let mut min = natural.0.map(|v| (v, false));
        let mut max = natural.1.map(|v| (v, false));
        let mut zero_refused = self.non_default;
        for rule in self.rules {
            let g = self.guarded(rule);
            match &rule.kind {
                RuleKind::Range {
                    lower,
                    upper,
                    exclusive: false,
                } if !g => {
                    if let Some(l) = lower {
                        min = Some((value(&l.value)?, !l.inclusive));
                    }
                    if let Some(u) = upper {
                        max = Some((value(&u.value)?, !u.inclusive));
                    }
                }
                RuleKind::Range {
                    lower,
                    upper,
                    exclusive,
                } => {
                    let either = range_groups(lower.as_ref(), upper.as_ref(), |s| int(value(s)?))?;
                    if *exclusive {
                        b.add(
                            vec![("anyOf", Node::List(either.into_iter().map(Node::from).collect()))],
                            g,
                        );
                    } else {
                        for group in either {
                            b.add(group.into_entries(), g);
                        }
                    }
                }
                RuleKind::Const(v) => b.add(vec![("enum", Node::List(vec![int(value(v)?)?]))], g),
                RuleKind::In(values) => {
                    let values = values.iter().map(|v| int(value(v)?)).collect::<Result<Vec<_>>>()?;
                    b.add(vec![("enum", Node::List(values))], g);
                }
                RuleKind::NotIn(values) => {
                    let values = values.iter().map(|v| int(value(v)?)).collect::<Result<Vec<_>>>()?;
                    b.add(vec![("not", enum_of(values))], g);
                }
                _ => bail!(unmappable(rule, self.field, "it does not apply to an integer")),
            }
        }
        if zero_refused {
            // The smallest value allowed, as an inclusive bound.
            match min.map(|(v, exclusive)| if exclusive { v + 1 } else { v }) {
                Some(low) if low >= 1 => zero_refused = false,
                Some(0) => {
                    min = Some((1, false));
                    zero_refused = false;
                }
                _ => {}
            }
        }
        let mut bounds = Vec::new();
        if let Some((v, exclusive)) = min {
            bounds.push(("minimum", int(v)?));
            if exclusive {
                bounds.push(("exclusiveMinimum", Node::Bool(true)));
            }
        }
        if let Some((v, exclusive)) = max {
            bounds.push(("maximum", int(v)?));
            if exclusive {
                bounds.push(("exclusiveMaximum", Node::Bool(true)));
            }
        }
        b.add(bounds, false);
        if zero_refused {
            b.cel(
                "self != 0".to_owned(),
                "value is required (must not be 0) [required]".to_owned(),
            );
        }
        Ok(())
    }

    pub(super) fn number(&self, b: &mut Builder) -> Result<()> {
        b.node.set("type", "number");
        b.node
            .set("format", if self.kind == Kind::Float { "float" } else { "double" });
        let value = |s: &Scalar| match s {
            Scalar::Double(d) => Ok(Node::Float(self.written(*d))),
            other => bail!("a float rule holding {other:?}"),
        };
        if self.non_default {
            b.add(vec![("not", enum_of(vec![Node::Float(0.0)]))], false);
        }
        for rule in self.rules {
            let g = self.guarded(rule);
            match &rule.kind {
                RuleKind::Range {
                    lower,
                    upper,
                    exclusive,
                } => {
                    let either = range_groups(lower.as_ref(), upper.as_ref(), value)?;
                    if *exclusive {
                        b.add(
                            vec![("anyOf", Node::List(either.into_iter().map(Node::from).collect()))],
                            g,
                        );
                    } else {
                        for group in either {
                            b.add(group.into_entries(), g);
                        }
                    }
                }
                RuleKind::Const(v) => b.add(vec![("enum", Node::List(vec![value(v)?]))], g),
                RuleKind::In(values) => {
                    let values = values.iter().map(value).collect::<Result<Vec<_>>>()?;
                    b.add(vec![("enum", Node::List(values))], g);
                }
                RuleKind::NotIn(values) => {
                    let values = values.iter().map(value).collect::<Result<Vec<_>>>()?;
                    b.add(vec![("not", enum_of(values))], g);
                }
                // JSON has no NaN nor infinity: every value written is finite.
                RuleKind::Finite => {}
                _ => bail!(unmappable(rule, self.field, "it does not apply to a number")),
            }
        }
        Ok(())
    }

    /// A float rule's value as the Kubernetes form writes a float field's
    /// value: the shortest decimal that reads back as the same `f32`. A
    /// value and a bound both so written compare as the `f32`s do.
    fn written(&self, value: f64) -> f64 {
        if self.kind == Kind::Float {
            let shortest = (value as f32).to_string();
            shortest.parse().unwrap_or(value)
        } else {
            value
        }
    }
}

/// The keyword groups of a range's two ends (one group each).
fn range_groups(
    lower: Option<&Bound>,
    upper: Option<&Bound>,
    value: impl Fn(&Scalar) -> Result<Node>,
) -> Result<Vec<Obj>> {
    let mut groups = Vec::new();
    if let Some(l) = lower {
        let mut g = Obj::new();
        g.set("minimum", value(&l.value)?);
        if !l.inclusive {
            g.set("exclusiveMinimum", Node::Bool(true));
        }
        groups.push(g);
    }
    if let Some(u) = upper {
        let mut g = Obj::new();
        g.set("maximum", value(&u.value)?);
        if !u.inclusive {
            g.set("exclusiveMaximum", Node::Bool(true));
        }
        groups.push(g);
    }
    Ok(groups)
}
