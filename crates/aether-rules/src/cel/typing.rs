//! From the `cel` crate's tree to the typed tree: types checked, macros
//! recognized, anything outside the portable subset refused by name.

use anyhow::{Context, Result, anyhow, bail, ensure};
use cel::common::ast::{CallExpr, ComprehensionExpr, Expr as Ast, IdedExpr, LiteralValue, operators};

use super::{Cmp, Expr, ExprKind, Literal, Macro, TextFn, Type};
use crate::pattern::Pattern;

/// Turns the `cel` crate's tree into ours, checking types on the way.
pub(super) struct Typer {
    pub this: Type,
    /// Macro variables in scope, innermost last.
    pub scope: Vec<(String, Type)>,
}

impl Typer {
    pub fn expr(&mut self, e: &IdedExpr) -> Result<Expr> {
        match &e.expr {
            Ast::Ident(name) if name == "this" => Ok(Expr::new(ExprKind::This, self.this.clone())),
            Ast::Ident(name) => {
                let (_, ty) = self.scope.iter().rev().find(|(n, _)| n == name).with_context(|| {
                    format!(
                        "`{name}` is not a variable here (protovalidate's `rules`, `rule` and `now` have no \
                             equivalent in the API server's CEL)"
                    )
                })?;
                Ok(Expr::new(ExprKind::Var(name.clone()), ty.clone()))
            }
            Ast::Literal(literal) => literal_expr(literal),
            Ast::List(list) => {
                ensure!(
                    list.optional_indices.is_empty(),
                    "optional list elements are not supported"
                );
                let items = list.elements.iter().map(|i| self.expr(i)).collect::<Result<Vec<_>>>()?;
                let first = items.first().context("an empty list literal has no type")?.ty.clone();
                ensure!(
                    items.iter().all(|i| i.ty == first),
                    "a list literal mixes types: {:?}",
                    items.iter().map(|i| &i.ty).collect::<Vec<_>>()
                );
                Ok(Expr::new(ExprKind::List(items), Type::List(Box::new(first))))
            }
            Ast::Select(select) => {
                let operand = self.expr(&select.operand)?;
                let Type::Message(message) = &operand.ty else {
                    bail!(
                        "`.{}` on a value of type {:?}: only message fields can be selected",
                        select.field,
                        operand.ty
                    )
                };
                let field = message
                    .get_field_by_name(&select.field)
                    .with_context(|| format!("{} has no field `{}`", message.full_name(), select.field))?;
                if select.test {
                    Ok(Expr::new(ExprKind::Has(operand.boxed(), field), Type::Bool))
                } else {
                    let ty = Type::of_field(&field);
                    Ok(Expr::new(ExprKind::Field(operand.boxed(), field), ty))
                }
            }
            Ast::Call(call) => self.call(call),
            Ast::Comprehension(comprehension) => self.comprehension(comprehension),
            Ast::Map(_) | Ast::Struct(_) => bail!("map and message literals are not supported"),
            Ast::Unspecified => bail!("an empty expression"),
        }
    }

    fn call(&mut self, call: &CallExpr) -> Result<Expr> {
        let name = call.func_name.as_str();
        // A negative number is `-` applied to a literal.
        if name == operators::NEGATE
            && let [arg] = call.args.as_slice()
        {
            match &arg.expr {
                Ast::Literal(LiteralValue::Int(i)) => {
                    return Ok(Expr::new(ExprKind::Literal(Literal::Int(-*i.inner())), Type::Int));
                }
                Ast::Literal(LiteralValue::Double(d)) => {
                    return Ok(Expr::new(ExprKind::Literal(Literal::Double(-*d.inner())), Type::Double));
                }
                _ => {}
            }
        }
        let target = call.target.as_deref().map(|t| self.expr(t)).transpose()?;
        let args = call.args.iter().map(|a| self.expr(a)).collect::<Result<Vec<_>>>()?;
        let types: Vec<_> = args.iter().map(|a| a.ty.clone()).collect();
        let outside = || {
            anyhow!(
                "`{name}` on {:?} with arguments {types:?} is outside the CEL that protovalidate and the \
                 Kubernetes API server evaluate alike (see aether-rules/src/cel/mod.rs)",
                target.as_ref().map(|t| &t.ty)
            )
        };
        let mut args = args.into_iter();
        let mut next = || args.next().expect("arity checked by the match");
        Ok(match (name, target.as_ref().map(|t| &t.ty), types.as_slice()) {
            (operators::LOGICAL_AND | operators::LOGICAL_OR, None, [Type::Bool, Type::Bool]) => {
                let (a, b) = (next().boxed(), next().boxed());
                let kind = if name == operators::LOGICAL_AND {
                    ExprKind::And(a, b)
                } else {
                    ExprKind::Or(a, b)
                };
                Expr::new(kind, Type::Bool)
            }
            (operators::LOGICAL_NOT, None, [Type::Bool]) => Expr::new(ExprKind::Not(next().boxed()), Type::Bool),
            (operators::CONDITIONAL, None, [Type::Bool, a, b]) if a == b => {
                let ty = a.clone();
                Expr::new(
                    ExprKind::Conditional(next().boxed(), next().boxed(), next().boxed()),
                    ty,
                )
            }
            (
                operators::EQUALS
                | operators::NOT_EQUALS
                | operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
                None,
                [a, b],
            ) => {
                let cmp = match name {
                    operators::EQUALS => Cmp::Eq,
                    operators::NOT_EQUALS => Cmp::Ne,
                    operators::LESS => Cmp::Lt,
                    operators::LESS_EQUALS => Cmp::Le,
                    operators::GREATER => Cmp::Gt,
                    _ => Cmp::Ge,
                };
                let (left, right) = (next(), next());
                comparable(cmp, a, b, &left, &right).map_err(|why| anyhow!("{why}: {}", outside()))?;
                Expr::new(ExprKind::Compare(cmp, left.boxed(), right.boxed()), Type::Bool)
            }
            (operators::IN, None, [element, range]) => {
                let (element_expr, range_expr) = (next(), next());
                let fits = match range.element() {
                    Some(Type::Int) if matches!(element, Type::Enum(_)) => {
                        enum_literals(element, &range_expr).map_err(|why| anyhow!("{why}: {}", outside()))?;
                        true
                    }
                    Some(t) => t == element && is_comparable(t),
                    None => false,
                };
                ensure!(fits, outside());
                Expr::new(ExprKind::In(element_expr.boxed(), range_expr.boxed()), Type::Bool)
            }
            ("size", None, [t]) | ("size", Some(t), []) if sized(t) => {
                let operand = match target {
                    Some(t) => t,
                    None => next(),
                };
                Expr::new(ExprKind::Size(operand.boxed()), Type::Int)
            }
            ("contains" | "startsWith" | "endsWith", Some(Type::String), [Type::String]) => {
                let function = match name {
                    "contains" => TextFn::Contains,
                    "startsWith" => TextFn::StartsWith,
                    _ => TextFn::EndsWith,
                };
                let receiver = target.expect("matched Some");
                Expr::new(ExprKind::Text(function, receiver.boxed(), next().boxed()), Type::Bool)
            }
            ("matches", Some(Type::String), [Type::String]) => {
                let Ast::Literal(LiteralValue::String(pattern)) = &call.args[0].expr else {
                    bail!("`matches` takes a string literal here (checked and compiled once)")
                };
                let pattern = Pattern::new(pattern.inner())?;
                let receiver = target.expect("matched Some");
                Expr::new(ExprKind::Matches(receiver.boxed(), pattern), Type::Bool)
            }
            _ => return Err(outside()),
        })
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Result<Expr> {
        let (kind, body) = recognize_macro(c).context(
            "a comprehension other than `all`, `exists`, `exists_one` and `filter` (such as `map`) is not supported",
        )?;
        ensure!(c.iter_var2.is_none(), "two-variable comprehensions are not supported");
        let range = self.expr(&c.iter_range)?;
        let element = range
            .ty
            .element()
            .with_context(|| format!("`{}` over a value of type {:?}", kind.cel_name(), range.ty))?
            .clone();
        ensure!(c.iter_var != "this", "`this` cannot name a macro variable");
        self.scope.push((c.iter_var.clone(), element.clone()));
        let body = self.expr(body);
        self.scope.pop();
        let body = body?;
        ensure!(
            body.ty == Type::Bool,
            "the body of `{}` is of type {:?}, not bool",
            kind.cel_name(),
            body.ty
        );
        let ty = match kind {
            Macro::Filter => Type::List(Box::new(element)),
            _ => Type::Bool,
        };
        Ok(Expr::new(
            ExprKind::Macro(kind, range.boxed(), c.iter_var.clone(), body.boxed()),
            ty,
        ))
    }
}

fn literal_expr(literal: &LiteralValue) -> Result<Expr> {
    let (literal, ty) = match literal {
        LiteralValue::Boolean(b) => (Literal::Bool(*b.inner()), Type::Bool),
        LiteralValue::Int(i) => (Literal::Int(*i.inner()), Type::Int),
        LiteralValue::UInt(u) => (Literal::UInt(*u.inner()), Type::UInt),
        LiteralValue::Double(d) => (Literal::Double(*d.inner()), Type::Double),
        LiteralValue::String(s) => (Literal::String(s.inner().to_owned()), Type::String),
        LiteralValue::Bytes(_) => bail!("bytes literals are not supported"),
        LiteralValue::Null => bail!("`null` is not supported"),
    };
    Ok(Expr::new(ExprKind::Literal(literal), ty))
}

/// Whether values of `ty` can be compared with `==` (and so looked up with `in`).
fn is_comparable(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Bool | Type::Int | Type::UInt | Type::Double | Type::String | Type::Enum(_)
    )
}

fn sized(ty: &Type) -> bool {
    matches!(ty, Type::String | Type::Bytes | Type::List(_) | Type::Map(..))
}

/// Checks a comparison's operand types.
fn comparable(cmp: Cmp, a: &Type, b: &Type, left: &Expr, right: &Expr) -> Result<(), String> {
    let equality = matches!(cmp, Cmp::Eq | Cmp::Ne);
    match (a, b) {
        (Type::Enum(_), Type::Int) if equality => enum_literal(a, right),
        (Type::Int, Type::Enum(_)) if equality => enum_literal(b, left),
        _ if a != b => Err(format!("{a:?} and {b:?} are different types")),
        (Type::Int | Type::UInt | Type::Double | Type::String, _) => Ok(()),
        (Type::Bool | Type::Enum(_), _) if equality => Ok(()),
        _ => Err(format!("{a:?} values cannot be compared with `{}`", cmp.symbol())),
    }
}

/// An enum compared with an int: the int must be a literal naming a defined
/// value, since the API server sees the value's name.
fn enum_literal(enum_type: &Type, literal: &Expr) -> Result<(), String> {
    let Type::Enum(e) = enum_type else { unreachable!() };
    match &literal.kind {
        ExprKind::Literal(Literal::Int(n)) if i32::try_from(*n).ok().and_then(|n| e.get_value(n)).is_some() => Ok(()),
        _ => Err(format!(
            "an enum ({}) compares only with an int literal naming one of its values",
            e.full_name()
        )),
    }
}

fn enum_literals(enum_type: &Type, list: &Expr) -> Result<(), String> {
    match &list.kind {
        ExprKind::List(items) => items.iter().try_for_each(|i| enum_literal(enum_type, i)),
        _ => Err("an enum is looked up only in a list literal of its values' numbers".to_owned()),
    }
}

/// The macro a comprehension was expanded from, and its body, recognized by
/// the shape the `cel` crate's parser expands each one into.
fn recognize_macro(c: &ComprehensionExpr) -> Option<(Macro, &IdedExpr)> {
    let accu = c.accu_var.as_str();
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Ast::Ident(name) if name == accu);
    fn call<'e>(e: &'e IdedExpr, name: &str) -> Option<&'e [IdedExpr]> {
        match &e.expr {
            Ast::Call(call) if call.func_name == name && call.target.is_none() => Some(call.args.as_slice()),
            _ => None,
        }
    }
    match &c.accu_init.expr {
        Ast::Literal(LiteralValue::Boolean(init)) => {
            let (kind, op) = if *init.inner() {
                (Macro::All, operators::LOGICAL_AND)
            } else {
                (Macro::Exists, operators::LOGICAL_OR)
            };
            match call(&c.loop_step, op)? {
                [accu_arg, body] if is_accu(accu_arg) && is_accu(&c.result) => Some((kind, body)),
                _ => None,
            }
        }
        Ast::Literal(LiteralValue::Int(zero)) if *zero.inner() == 0 => {
            match call(&c.loop_step, operators::CONDITIONAL)? {
                [body, _, otherwise] if is_accu(otherwise) && call(&c.result, operators::EQUALS).is_some() => {
                    Some((Macro::ExistsOne, body))
                }
                _ => None,
            }
        }
        Ast::List(empty) if empty.elements.is_empty() => match call(&c.loop_step, operators::CONDITIONAL)? {
            [body, step, otherwise] if is_accu(otherwise) => match call(step, operators::ADD)? {
                [accu_arg, added] if is_accu(accu_arg) => match &added.expr {
                    Ast::List(list) if matches!(list.elements.as_slice(), [e] if matches!(&e.expr, Ast::Ident(v) if *v == c.iter_var)) => {
                        Some((Macro::Filter, body))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::parse;

    fn kinds(expression: &str, this: Type) -> Result<Expr> {
        parse(expression, this)
    }

    #[test]
    fn recognizes_the_macros() {
        let strings = Type::List(Box::new(Type::String));
        for (source, expected) in [
            ("this.all(x, x.size() < 3)", Macro::All),
            ("this.exists(x, x == 'a')", Macro::Exists),
            ("this.exists_one(x, x.startsWith('a'))", Macro::ExistsOne),
        ] {
            let expr = kinds(source, strings.clone()).unwrap();
            assert!(
                matches!(&expr.kind, ExprKind::Macro(kind, _, var, _) if *kind == expected && var == "x"),
                "{source}: {expr:?}"
            );
        }
        let filtered = kinds("this.filter(x, x != '').size() <= 2", strings.clone()).unwrap();
        let ExprKind::Compare(Cmp::Le, size, _) = &filtered.kind else {
            panic!("{filtered:?}")
        };
        let ExprKind::Size(filter) = &size.kind else {
            panic!("{size:?}")
        };
        assert!(matches!(filter.kind, ExprKind::Macro(Macro::Filter, ..)));
        assert!(kinds("this.map(x, x).size() > 0", strings).is_err());
    }

    #[test]
    fn types_literals_and_refuses_mixed_comparisons() {
        assert!(kinds("this > 5u", Type::UInt).is_ok());
        assert!(kinds("this > -5", Type::Int).is_ok());
        assert!(kinds("this > 1.5", Type::Double).is_ok());
        let err = kinds("this > 5", Type::UInt).unwrap_err().to_string();
        assert!(err.contains("different types"), "{err}");
        assert!(kinds("this == 1", Type::String).is_err());
        assert!(kinds("this in ['a', 'b']", Type::String).is_ok());
        assert!(kinds("this in ['a', 1]", Type::String).is_err());
    }

    #[test]
    fn refuses_what_the_api_server_lacks_naming_it() {
        for (expression, named) in [
            ("this.isHostname()", "isHostname"),
            ("this < now", "now"),
            ("this.size() < rules.max_len", "rules"),
            ("this.lowerAscii() == this", "lowerAscii"),
            ("this + 1 > 2", "_+_"),
        ] {
            let this = if expression.contains("+ 1") {
                Type::Int
            } else {
                Type::String
            };
            let err = format!("{:#}", kinds(expression, this).unwrap_err());
            assert!(err.contains(named), "{expression}: {err}");
        }
        let err = kinds("this.size()", Type::String).unwrap_err().to_string();
        assert!(err.contains("Int") && err.contains("bool"), "{err}");
        let err = kinds("this.matches(this)", Type::String).unwrap_err().to_string();
        assert!(err.contains("string literal"), "{err}");
        assert!(kinds("this.matches('\\\\d')", Type::String).is_err());
    }
}
