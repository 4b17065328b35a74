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

/// CEL's reserved words: a field of that name is not an identifier in a
/// CEL expression, so the API server binds it escaped (`__name__`).
pub const RESERVED_WORDS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

mod typing;

use anyhow::{Result, anyhow, ensure};
use prost_reflect::{EnumDescriptor, FieldDescriptor, Kind, MessageDescriptor};

use super::pattern::Pattern;
use typing::Typer;

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
    pub(super) fn new(kind: ExprKind, ty: Type) -> Self {
        Self { kind, ty }
    }

    pub(super) fn boxed(self) -> Box<Self> {
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
