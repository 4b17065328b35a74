//! CEL rules compiled to Rust, from the typed tree of [`crate::rules::cel`].
//!
//! Each CEL type has one Rust representation: bool, `i64` (int), `u64`
//! (uint), `f64` (double), `&str`, `&[u8]`, `i32` (an enum's number), a
//! slice of prost's element type (list), a reference to prost's map, and for
//! a message either `&M` or, when it may be unset, `Option<&M>` (reading a
//! field of an unset message gives the field's default, as protobuf does).
//!
//! The tree admits no expression that can fail at run time, so Rust's
//! short-circuit `&&` and `||` give CEL's results. Binary expressions come
//! out parenthesized, so every expression is a primary one and `!` needs no
//! parentheses of its own.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use heck::{ToSnakeCase, ToUpperCamelCase};
use prost_reflect::{FieldDescriptor, Kind};

use super::{Generated, rust_field_name};
use crate::rules::cel::{Cmp, Expr, ExprKind, Literal, Macro, TextFn, Type};

/// A Rust expression, and for a message whether it is an `Option<&M>`.
struct Rust {
    code: String,
    optional: bool,
}

impl Rust {
    fn plain(code: String) -> Self {
        Self { code, optional: false }
    }
}

/// The compiler of one rule: what `this` is in Rust, and the patterns it
/// registers in the file.
pub(super) struct Compiler<'a> {
    pub generated: &'a mut Generated,
    /// The Rust expression `this` stands for, in its CEL representation.
    pub this: String,
}

impl Compiler<'_> {
    /// A Rust bool expression that is true when `expr` holds.
    pub fn holds(&mut self, expr: &Expr) -> Result<String> {
        Ok(self.expr(expr)?.code)
    }

    fn expr(&mut self, expr: &Expr) -> Result<Rust> {
        Ok(match &expr.kind {
            ExprKind::This => Rust::plain(self.this.clone()),
            ExprKind::Var(name) => Rust::plain(variable(name)),
            ExprKind::Literal(literal) => Rust::plain(literal_code(literal)),
            ExprKind::List(items) => {
                let items = items
                    .iter()
                    .map(|i| Ok(self.expr(i)?.code))
                    .collect::<Result<Vec<_>>>()?;
                Rust::plain(format!("[{}]", items.join(", ")))
            }
            ExprKind::Not(a) => Rust::plain(format!("!{}", self.expr(a)?.code)),
            ExprKind::And(a, b) | ExprKind::Or(a, b) => {
                let op = if matches!(expr.kind, ExprKind::And(..)) {
                    "&&"
                } else {
                    "||"
                };
                Rust::plain(format!("({} {op} {})", self.expr(a)?.code, self.expr(b)?.code))
            }
            ExprKind::Compare(cmp @ (Cmp::Eq | Cmp::Ne), a, b) if is_empty_string(a) || is_empty_string(b) => {
                // Against `''`: `is_empty()`, as clippy would have it.
                let other = if is_empty_string(a) { b } else { a };
                let not = if *cmp == Cmp::Ne { "!" } else { "" };
                let code = self.expr(other)?.code;
                let code = code.strip_suffix(".as_str()").unwrap_or(&code);
                Rust::plain(format!("{not}{code}.is_empty()"))
            }
            ExprKind::Compare(cmp, a, b) => {
                let (left, right) = (self.operand(a, b)?, self.operand(b, a)?);
                Rust::plain(format!("({left} {} {right})", cmp.symbol()))
            }
            ExprKind::In(element, range) => {
                let element_code = self.operand(element, range)?;
                let code = match (&range.kind, &range.ty) {
                    (ExprKind::List(items), _) => {
                        let items = items
                            .iter()
                            .map(|i| self.operand(i, element))
                            .collect::<Result<Vec<_>>>()?;
                        format!("[{}].contains(&{element_code})", items.join(", "))
                    }
                    (_, Type::List(item)) => {
                        let range = self.expr(range)?.code;
                        format!(
                            "{range}.iter().any(|item| {} == {element_code})",
                            element_of(item, "item")?
                        )
                    }
                    (_, Type::Map(key, _)) => {
                        let range = self.expr(range)?.code;
                        format!(
                            "{range}.keys().any(|key| {} == {element_code})",
                            element_of(key, "key")?
                        )
                    }
                    (_, other) => bail!("`in` a value of type {other:?}"),
                };
                Rust::plain(format!("({code})"))
            }
            ExprKind::Conditional(c, a, b) => {
                let (c, a, b) = (self.expr(c)?, self.expr(a)?, self.expr(b)?);
                let (a, b) = if a.optional != b.optional {
                    (as_optional(a), as_optional(b))
                } else {
                    (a, b)
                };
                Rust {
                    code: format!("(if {} {{ {} }} else {{ {} }})", c.code, a.code, b.code),
                    optional: a.optional,
                }
            }
            ExprKind::Field(operand, field) => self.field(operand, field)?,
            ExprKind::Has(operand, field) => {
                let operand = self.expr(operand)?;
                Rust::plain(if operand.optional {
                    format!("{}.is_some_and(|m| {})", operand.code, has(field, "m")?)
                } else {
                    has(field, &operand.code)?
                })
            }
            ExprKind::Size(operand) => {
                if let ExprKind::Macro(Macro::Filter, range, var, body) = &operand.kind {
                    let counted = self.filter(range, var, body)?;
                    return Ok(Rust::plain(format!("({counted} as i64)")));
                }
                let code = self.expr(operand)?.code;
                Rust::plain(match operand.ty {
                    Type::String => format!("(crate::validate::char_len({code}) as i64)"),
                    _ => format!("({code}.len() as i64)"),
                })
            }
            ExprKind::Text(function, receiver, argument) => {
                let method = match function {
                    TextFn::Contains => "contains",
                    TextFn::StartsWith => "starts_with",
                    TextFn::EndsWith => "ends_with",
                };
                let (receiver, argument) = (self.expr(receiver)?.code, self.expr(argument)?.code);
                Rust::plain(format!("{receiver}.{method}({argument})"))
            }
            ExprKind::Matches(receiver, pattern) => {
                let regex = self.generated.pattern(pattern);
                Rust::plain(format!("{regex}.is_match({})", self.expr(receiver)?.code))
            }
            ExprKind::Macro(Macro::Filter, ..) => {
                bail!("the validator compiles `filter` only as the receiver of `size()`")
            }
            ExprKind::Macro(kind, range, var, body) => {
                let (iter, closure) = self.iteration(range, var, body)?;
                Rust::plain(match kind {
                    Macro::All => format!("{iter}.all(|{closure})"),
                    Macro::Exists => format!("{iter}.any(|{closure})"),
                    _ => format!("({iter}.filter(|&{closure}).count() == 1)"),
                })
            }
        })
    }

    /// An operand of a comparison: an int literal next to an enum is the
    /// enum's `i32`.
    fn operand(&mut self, expr: &Expr, other: &Expr) -> Result<String> {
        if let (ExprKind::Literal(Literal::Int(n)), Type::Enum(_)) = (&expr.kind, &other.ty) {
            return Ok(format!("{n}i32"));
        }
        Ok(self.expr(expr)?.code)
    }

    /// `filter(...)` counted.
    fn filter(&mut self, range: &Expr, var: &str, body: &Expr) -> Result<String> {
        let (iter, closure) = self.iteration(range, var, body)?;
        Ok(format!("{iter}.filter(|&{closure}).count()"))
    }

    /// The iterator over a macro's range, and the closure (without its
    /// opening `|`) that binds the variable and evaluates the body.
    fn iteration(&mut self, range: &Expr, var: &str, body: &Expr) -> Result<(String, String)> {
        let range_code = self.expr(range)?.code;
        let (iter, element) = match &range.ty {
            Type::List(element) => (format!("{range_code}.iter()"), element),
            Type::Map(key, _) => (format!("{range_code}.keys()"), key),
            other => bail!("a macro over {other:?}"),
        };
        let name = variable(var);
        let bind = element_of(element, "element")?;
        let body = self.expr(body)?.code;
        let body = unparenthesized(&body);
        Ok((iter, format!("element| {{ let {name} = {bind}; {body} }}")))
    }

    fn field(&mut self, operand: &Expr, field: &FieldDescriptor) -> Result<Rust> {
        let operand = self.expr(operand)?;
        let ty = Type::of_field(field);
        if !operand.optional {
            return access(field, &operand.code);
        }
        let read = access(field, "m")?;
        Ok(if read.optional {
            Rust {
                code: format!("{}.and_then(|m| {})", operand.code, read.code),
                optional: true,
            }
        } else {
            Rust::plain(format!(
                "{}.map_or({}, |m| {})",
                operand.code,
                default_of(&ty)?,
                read.code
            ))
        })
    }
}

/// `code` without the parentheses around all of it, if it has them (a
/// block's value needs none, and rustc warns of them).
fn unparenthesized(code: &str) -> &str {
    let bytes = code.as_bytes();
    if bytes.first() != Some(&b'(') {
        return code;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return if i == bytes.len() - 1 { &code[1..i] } else { code };
                }
            }
            _ => {}
        }
    }
    code
}

fn is_empty_string(expr: &Expr) -> bool {
    matches!(&expr.kind, ExprKind::Literal(Literal::String(s)) if s.is_empty())
}

fn as_optional(rust: Rust) -> Rust {
    if rust.optional {
        rust
    } else {
        Rust {
            code: format!("Some({})", rust.code),
            optional: true,
        }
    }
}

/// A macro variable's Rust name: prefixed, so it cannot shadow the
/// generated code's own bindings (`value`, `path`, `violations`).
fn variable(name: &str) -> String {
    format!("cel_{name}")
}

fn literal_code(literal: &Literal) -> String {
    match literal {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(i) => format!("{i}i64"),
        Literal::UInt(u) => format!("{u}u64"),
        Literal::Double(d) => format!("{d:?}f64"),
        Literal::String(s) => format!("{s:?}"),
    }
}

/// The CEL representation of a list element or map key, from `&E` bound to `name`.
fn element_of(ty: &Type, name: &str) -> Result<String> {
    Ok(match ty {
        Type::String => format!("{name}.as_str()"),
        Type::Bytes => format!("{name}.as_slice()"),
        Type::Int | Type::UInt | Type::Double => format!("{}::from(*{name})", rust_repr(ty)),
        Type::Bool | Type::Enum(_) => format!("*{name}"),
        Type::Message(_) => name.to_owned(),
        other => bail!("lists of {other:?} are not supported"),
    })
}

fn rust_repr(ty: &Type) -> &'static str {
    match ty {
        Type::Int => "i64",
        Type::UInt => "u64",
        _ => "f64",
    }
}

/// The CEL representation of `this` for a scalar field's value bound to
/// `var` as prost stores it (strings already as `&str`).
pub(super) fn scalar_this(kind: &Kind, var: &str) -> String {
    match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => format!("i64::from({var})"),
        Kind::Uint32 | Kind::Fixed32 => format!("u64::from({var})"),
        Kind::Float => format!("f64::from({var})"),
        _ => var.to_owned(),
    }
}

/// A field's default in its CEL representation.
fn default_of(ty: &Type) -> Result<String> {
    Ok(match ty {
        Type::Bool => "false".to_owned(),
        Type::Int => "0i64".to_owned(),
        Type::UInt => "0u64".to_owned(),
        Type::Double => "0f64".to_owned(),
        Type::String => "\"\"".to_owned(),
        Type::Bytes => "&[][..]".to_owned(),
        Type::Enum(_) => "0i32".to_owned(),
        Type::List(_) => "&[][..]".to_owned(),
        other => bail!("reading a {other:?} field of a message that may be unset is not supported"),
    })
}

/// Reads `field` of the message `&M` that `message` evaluates to.
fn access(field: &FieldDescriptor, message: &str) -> Result<Rust> {
    let name = rust_field_name(field.name());
    if let Some(oneof) = field.containing_oneof().filter(|o| !o.is_synthetic()) {
        let parent = field.parent_message();
        let variant = format!(
            "{}::{}::{}",
            parent.name().to_snake_case(),
            oneof.name().to_upper_camel_case(),
            field.name().to_upper_camel_case()
        );
        let oneof_field = rust_field_name(oneof.name());
        let ty = Type::of_field(field);
        if let Type::Message(_) = ty {
            return Ok(Rust {
                code: format!("(match &{message}.{oneof_field} {{ Some({variant}(v)) => Some(v), _ => None }})"),
                optional: true,
            });
        }
        let read = element_of(&ty, "v")?;
        return Ok(Rust::plain(format!(
            "(match &{message}.{oneof_field} {{ Some({variant}(v)) => {read}, _ => {} }})",
            default_of(&ty)?
        )));
    }
    if field.supports_presence() && !matches!(field.kind(), Kind::Message(_)) {
        bail!(
            "`{}`: CEL on a scalar with explicit presence is not supported",
            field.full_name()
        );
    }
    let place = format!("{message}.{name}");
    Ok(if field.is_map() {
        Rust::plain(format!("(&{place})"))
    } else if field.is_list() {
        Rust::plain(format!("{place}.as_slice()"))
    } else {
        match field.kind() {
            Kind::Message(_) => Rust {
                code: format!("{place}.as_ref()"),
                optional: true,
            },
            Kind::String => Rust::plain(format!("{place}.as_str()")),
            Kind::Bytes => Rust::plain(format!("{place}.as_slice()")),
            kind => Rust::plain(scalar_this(&kind, &place)),
        }
    })
}

/// protovalidate's `has()` on `field` of the `&M` that `message` evaluates to.
pub(super) fn has(field: &FieldDescriptor, message: &str) -> Result<String> {
    let name = rust_field_name(field.name());
    if let Some(oneof) = field.containing_oneof().filter(|o| !o.is_synthetic()) {
        let parent = field.parent_message();
        return Ok(format!(
            "matches!({message}.{}, Some({}::{}::{}(_)))",
            rust_field_name(oneof.name()),
            parent.name().to_snake_case(),
            oneof.name().to_upper_camel_case(),
            field.name().to_upper_camel_case()
        ));
    }
    let place = format!("{message}.{name}");
    let mut code = String::new();
    if field.is_list() || field.is_map() {
        let _ = write!(code, "!{place}.is_empty()");
    } else {
        match field.kind() {
            Kind::Message(_) => {
                let _ = write!(code, "{place}.is_some()");
            }
            _ if field.supports_presence() => {
                let _ = write!(code, "{place}.is_some()");
            }
            Kind::String | Kind::Bytes => {
                let _ = write!(code, "!{place}.is_empty()");
            }
            Kind::Bool => code = place,
            Kind::Float | Kind::Double => {
                let _ = write!(code, "({place} != 0.0)");
            }
            _ => {
                let _ = write!(code, "({place} != 0)");
            }
        }
    }
    Ok(code)
}
