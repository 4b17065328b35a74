//! CEL rules, parsed once by the `cel` crate and typed against the API.
//!
//! The result is a tree both the validator (which compiles it to Rust) and
//! the CRD generator (which prints it as the API server's CEL) read, so the
//! two can never accept different languages. The tree holds only what
//! protovalidate and the Kubernetes API server evaluate alike and what no
//! input can make fail at run time (an evaluation error would be a verdict
//! of its own):
//!
//! - `this`; the variables of `all`, `exists`, `exists_one` and `filter`;
//! - bool, int, uint, double and string literals; lists of them;
//! - `!`, `&&`, `||`, `_ ? _ : _`; `==`, `!=` on equal types (and an enum
//!   against an int literal); `<`, `<=`, `>`, `>=` on ints, uints, doubles
//!   and strings; `in` a list or a map's keys;
//! - `x.field` on a message (an unset field reads as its default, as in
//!   protobuf) and `has(x.field)`;
//! - `size()` of a string (code points), bytes, list or map; `contains`,
//!   `startsWith`, `endsWith`; `matches` with a literal pattern (checked
//!   like every pattern, see [`super::pattern`]);
//! - the macros `all`, `exists`, `exists_one` over a list or a map's keys,
//!   and `filter`.
//!
//! Anything else (`isHostname()`, `now`, `rules`, arithmetic that can
//! overflow, indexing that can miss) fails codegen naming the construct; the
//! caller adds the rule id and the field.

use anyhow::{Context, Result, anyhow, bail, ensure};
use cel::common::ast::{CallExpr, ComprehensionExpr, Expr as Ast, IdedExpr, LiteralValue, operators};
use prost_reflect::{EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor};

use super::pattern::Pattern;

/// A CEL rule: `this` is the value it is attached to.
#[derive(Debug, Clone, PartialEq)]
pub struct CelRule {
    pub id: String,
    pub message: String,
    /// As written in the proto.
    pub expression: String,
    /// The parsed and typed expression; always of type [`Type::Bool`].
    pub expr: Expr,
}

impl CelRule {
    /// Parses and types `expression`, where `this` has type `this`.
    pub fn new(id: String, message: String, expression: String, this: Type) -> Result<Self> {
        let expr = parse(&expression, this)?;
        Ok(Self {
            id,
            message,
            expression,
            expr,
        })
    }
}

/// Parses `expression` into the typed tree; it must be a bool.
pub fn parse(expression: &str, this: Type) -> Result<Expr> {
    let parsed = cel::parser::Parser::new()
        .parse(expression)
        .map_err(|err| anyhow!("parsing {expression:?}: {err}"))?;
    let mut typer = Typer {
        this,
        scope: Vec::new(),
    };
    let expr = typer.expr(&parsed)?;
    ensure!(
        expr.ty == Type::Bool,
        "the expression is of type {:?}; a rule must be a bool (false: violated)",
        expr.ty
    );
    Ok(expr)
}

/// A value's type as protovalidate's CEL sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Int,
    UInt,
    Double,
    String,
    Bytes,
    /// An enum: an int to protovalidate, a value name to the API server.
    Enum(EnumDescriptor),
    Message(MessageDescriptor),
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
}

impl Type {
    /// The type of a field's value: the list or map for a repeated or map field.
    pub fn of_field(field: &FieldDescriptor) -> Self {
        if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                unreachable!("a map field's kind is its entry message")
            };
            let key = entry.map_entry_key_field();
            let value = entry.map_entry_value_field();
            Type::Map(
                Box::new(Self::of_kind(&key.kind())),
                Box::new(Self::of_kind(&value.kind())),
            )
        } else if field.is_list() {
            Type::List(Box::new(Self::of_kind(&field.kind())))
        } else {
            Self::of_kind(&field.kind())
        }
    }

    /// The type of one value of `kind`.
    pub fn of_kind(kind: &Kind) -> Self {
        match kind {
            Kind::Bool => Type::Bool,
            Kind::Int32 | Kind::Int64 | Kind::Sint32 | Kind::Sint64 | Kind::Sfixed32 | Kind::Sfixed64 => Type::Int,
            Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => Type::UInt,
            Kind::Float | Kind::Double => Type::Double,
            Kind::String => Type::String,
            Kind::Bytes => Type::Bytes,
            Kind::Enum(e) => Type::Enum(e.clone()),
            Kind::Message(m) => Type::Message(m.clone()),
        }
    }

    /// The element type of a list, or the key type of a map: what a macro's
    /// variable and `in` range over.
    pub fn element(&self) -> Option<&Type> {
        match self {
            Type::List(element) | Type::Map(element, _) => Some(element),
            _ => None,
        }
    }
}

/// A typed CEL expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    This,
    /// A macro's variable.
    Var(String),
    Literal(Literal),
    List(Vec<Expr>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(Cmp, Box<Expr>, Box<Expr>),
    /// `element in range` (a list, or a map's keys).
    In(Box<Expr>, Box<Expr>),
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `message.field`: its default when unset.
    Field(Box<Expr>, FieldDescriptor),
    /// `has(message.field)`: set (messages, oneof members), non-default
    /// (implicit-presence scalars), non-empty (lists, maps).
    Has(Box<Expr>, FieldDescriptor),
    Size(Box<Expr>),
    Text(TextFn, Box<Expr>, Box<Expr>),
    Matches(Box<Expr>, Pattern),
    /// `range.<macro>(variable, body)`.
    Macro(Macro, Box<Expr>, String, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    String(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    /// The operator as CEL and Rust both spell it.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFn {
    Contains,
    StartsWith,
    EndsWith,
}

impl TextFn {
    pub fn cel_name(self) -> &'static str {
        match self {
            TextFn::Contains => "contains",
            TextFn::StartsWith => "startsWith",
            TextFn::EndsWith => "endsWith",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Macro {
    All,
    Exists,
    ExistsOne,
    Filter,
}

impl Macro {
    pub fn cel_name(self) -> &'static str {
        match self {
            Macro::All => "all",
            Macro::Exists => "exists",
            Macro::ExistsOne => "exists_one",
            Macro::Filter => "filter",
        }
    }
}

impl Expr {
    fn new(kind: ExprKind, ty: Type) -> Self {
        Self { kind, ty }
    }

    fn boxed(self) -> Box<Self> {
        Box::new(self)
    }

    /// Calls `visit` on this expression and every expression below it.
    pub fn walk(&self, visit: &mut impl FnMut(&Expr)) {
        visit(self);
        match &self.kind {
            ExprKind::This | ExprKind::Var(_) | ExprKind::Literal(_) => {}
            ExprKind::List(items) => items.iter().for_each(|e| e.walk(visit)),
            ExprKind::Not(a) | ExprKind::Size(a) | ExprKind::Matches(a, _) => a.walk(visit),
            ExprKind::Field(a, _) | ExprKind::Has(a, _) => a.walk(visit),
            ExprKind::And(a, b)
            | ExprKind::Or(a, b)
            | ExprKind::Compare(_, a, b)
            | ExprKind::In(a, b)
            | ExprKind::Text(_, a, b)
            | ExprKind::Macro(_, a, _, b) => {
                a.walk(visit);
                b.walk(visit);
            }
            ExprKind::Conditional(a, b, c) => {
                a.walk(visit);
                b.walk(visit);
                c.walk(visit);
            }
        }
    }
}

/// Turns the `cel` crate's tree into ours, checking types on the way.
struct Typer {
    this: Type,
    /// Macro variables in scope, innermost last.
    scope: Vec<(String, Type)>,
}

impl Typer {
    fn expr(&mut self, e: &IdedExpr) -> Result<Expr> {
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
                 Kubernetes API server evaluate alike (see xtask/src/rules/cel.rs)",
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
