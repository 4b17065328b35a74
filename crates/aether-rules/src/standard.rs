//! The standard rules (`FieldRules.type`: `string`, `uint32`, `enum`,
//! `repeated`, `map`, ...), each read into a [`Rule`] carrying the rule id
//! and message protovalidate reports for it.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail, ensure};
use prost_reflect::{DynamicMessage, Value};

use super::pattern::Pattern;

/// One standard rule, with protovalidate's rule id and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// `string.max_len`, `uint32.gte_lte`, `repeated.unique`, ...
    pub id: String,
    /// What protovalidate says when it is broken.
    pub message: String,
    pub kind: RuleKind,
}

/// A value written in a rule: numbers widened as protovalidate's CEL does
/// (enum numbers are ints).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

impl Scalar {
    /// As protovalidate's messages print it (`%s`): numbers in the shortest
    /// decimal form, strings bare, bytes as hex.
    pub fn text(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::UInt(u) => u.to_string(),
            Scalar::Double(d) => d.to_string(),
            Scalar::String(s) => s.clone(),
            Scalar::Bytes(b) => hex(b),
        }
    }

    /// Whether this is the zero value of its type.
    pub fn is_zero(&self) -> bool {
        match self {
            Scalar::Bool(b) => !b,
            Scalar::Int(i) => *i == 0,
            Scalar::UInt(u) => *u == 0,
            Scalar::Double(d) => *d == 0.0,
            Scalar::String(s) => s.is_empty(),
            Scalar::Bytes(b) => b.is_empty(),
        }
    }

    fn read(value: &Value) -> Result<Self> {
        Ok(match value {
            Value::Bool(b) => Scalar::Bool(*b),
            Value::I32(v) => Scalar::Int((*v).into()),
            Value::I64(v) => Scalar::Int(*v),
            Value::U32(v) => Scalar::UInt((*v).into()),
            Value::U64(v) => Scalar::UInt(*v),
            Value::F32(v) => Scalar::Double((*v).into()),
            Value::F64(v) => Scalar::Double(*v),
            Value::String(s) => Scalar::String(s.clone()),
            Value::Bytes(b) => Scalar::Bytes(b.to_vec()),
            Value::EnumNumber(n) => Scalar::Int((*n).into()),
            other => bail!("expected a scalar, found {other:?}"),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// One end of a range.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub value: Scalar,
    /// `gte`/`lte` (true) or `gt`/`lt` (false).
    pub inclusive: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RuleKind {
    /// `const`: exactly this value.
    Const(Scalar),
    /// `in`: one of these values.
    In(Vec<Scalar>),
    /// `not_in`: none of these values.
    NotIn(Vec<Scalar>),
    /// `gt`/`gte` and `lt`/`lte`. With both, `exclusive` says the upper bound
    /// lies below the lower one: the value must lie outside `[upper, lower]`
    /// rather than between them (protovalidate's `*_exclusive` ids).
    Range {
        lower: Option<Bound>,
        upper: Option<Bound>,
        exclusive: bool,
    },
    /// `float.finite`, `double.finite`: not NaN nor infinite.
    Finite,
    /// `len`, `min_len`, `max_len`: code points for a string, bytes for bytes.
    Len(u64),
    MinLen(u64),
    MaxLen(u64),
    /// `string.len_bytes`, `min_bytes`, `max_bytes`: UTF-8 bytes of a string.
    LenBytes(u64),
    MinBytes(u64),
    MaxBytes(u64),
    /// `pattern`: an RE2 regular expression the value must match somewhere.
    Pattern(Pattern),
    Prefix(Scalar),
    Suffix(Scalar),
    Contains(Scalar),
    NotContains(Scalar),
    /// A well-known string format (`string.hostname = true`, ...).
    Format(Format),
    /// `enum.defined_only`: a value the enum declares.
    DefinedOnly,
    /// `repeated.min_items`, `max_items`, `unique`.
    MinItems(u64),
    MaxItems(u64),
    Unique,
    /// `map.min_pairs`, `max_pairs`.
    MinPairs(u64),
    MaxPairs(u64),
}

/// The well-known string formats a Kubernetes API needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Hostname,
    Ip,
    Ipv4,
    Ipv6,
    Uri,
    UriRef,
    Address,
    HostAndPort,
}

impl Format {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "hostname" => Format::Hostname,
            "ip" => Format::Ip,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "uri" => Format::Uri,
            "uri_ref" => Format::UriRef,
            "address" => Format::Address,
            "host_and_port" => Format::HostAndPort,
            _ => return None,
        })
    }

    /// The rule's name in `StringRules`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Hostname => "hostname",
            Format::Ip => "ip",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
            Format::Uri => "uri",
            Format::UriRef => "uri_ref",
            Format::Address => "address",
            Format::HostAndPort => "host_and_port",
        }
    }

    /// What the value must be, in protovalidate's words.
    fn noun(self) -> &'static str {
        match self {
            Format::Hostname => "hostname",
            Format::Ip => "IP address",
            Format::Ipv4 => "IPv4 address",
            Format::Ipv6 => "IPv6 address",
            Format::Uri => "URI",
            Format::UriRef => "URI Reference",
            Format::Address => "hostname, or ip address",
            Format::HostAndPort => "host (hostname or IP address) and port pair",
        }
    }

    /// The id and message of the separate rule an empty value breaks, if
    /// the format has one (every one but `uri_ref`, which admits `""`).
    pub fn empty_rule(self) -> Option<(String, String)> {
        let noun = match self {
            Format::UriRef => return None,
            Format::HostAndPort => "host and port pair",
            other => other.noun(),
        };
        Some((
            format!("string.{}_empty", self.name()),
            format!("value is empty, which is not a valid {noun}"),
        ))
    }
}

/// The scalar groups of `FieldRules.type`, by the name they have there.
pub const NUMERIC_GROUPS: [&str; 12] = [
    "float", "double", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32",
    "sfixed64",
];

/// Reads the rules of one group message (`StringRules`, ...), named `group`.
/// `context` prefixes rule names in errors (`repeated.items.`).
pub fn read_group(group: &str, rules: &DynamicMessage, context: &str) -> Result<Vec<Rule>> {
    let mut out = Vec::new();
    let mut lower = None;
    let mut upper = None;
    let unknown = |name: &str| format!("rule `{context}{group}.{name}` is not supported by the generators");
    for (field, value) in rules.fields() {
        let name = field.name();
        let numeric = NUMERIC_GROUPS.contains(&group);
        let rule = |kind: RuleKind, message: String| Rule {
            id: format!("{group}.{name}"),
            message,
            kind,
        };
        let list = || -> Result<Vec<Scalar>> {
            value
                .as_list()
                .context("a list rule")?
                .iter()
                .map(Scalar::read)
                .collect()
        };
        let count = || value.as_u64().context("a count");
        let is_text = group == "string";
        match (name, group) {
            ("gt" | "gte", _) if numeric => {
                lower = Some(Bound {
                    value: Scalar::read(value)?,
                    inclusive: name == "gte",
                })
            }
            ("lt" | "lte", _) if numeric => {
                upper = Some(Bound {
                    value: Scalar::read(value)?,
                    inclusive: name == "lte",
                })
            }
            ("const", _) => {
                let v = Scalar::read(value)?;
                let message = match group {
                    "string" => format!("must equal `{}`", v.text()),
                    "bytes" => format!("must be {}", v.text()),
                    _ => format!("must equal {}", v.text()),
                };
                out.push(rule(RuleKind::Const(v), message));
            }
            ("in", _) => {
                let values = list()?;
                out.push(rule(
                    RuleKind::In(values.clone()),
                    format!("must be in list {}", list_text(&values)),
                ));
            }
            ("not_in", _) => {
                let values = list()?;
                out.push(rule(
                    RuleKind::NotIn(values.clone()),
                    format!("must not be in list {}", list_text(&values)),
                ));
            }
            ("finite", "float" | "double") => {
                if value.as_bool() == Some(true) {
                    out.push(rule(RuleKind::Finite, "must be finite".to_owned()));
                }
            }
            ("len" | "min_len" | "max_len", "string" | "bytes") => {
                let n = count()?;
                let unit = if is_text { "characters" } else { "bytes" };
                let (kind, message) = match name {
                    "len" => (RuleKind::Len(n), format!("must be {n} {unit}")),
                    "min_len" => (RuleKind::MinLen(n), format!("must be at least {n} {unit}")),
                    _ => (RuleKind::MaxLen(n), format!("must be at most {n} {unit}")),
                };
                out.push(rule(kind, message));
            }
            ("len_bytes" | "min_bytes" | "max_bytes", "string") => {
                let n = count()?;
                let (kind, message) = match name {
                    "len_bytes" => (RuleKind::LenBytes(n), format!("must be {n} bytes")),
                    "min_bytes" => (RuleKind::MinBytes(n), format!("must be at least {n} bytes")),
                    _ => (RuleKind::MaxBytes(n), format!("must be at most {n} bytes")),
                };
                out.push(rule(kind, message));
            }
            ("pattern", "string") => {
                let pattern = Pattern::new(value.as_str().context("a pattern is a string")?)?;
                let message = format!("does not match regex pattern `{}`", pattern.source);
                out.push(rule(RuleKind::Pattern(pattern), message));
            }
            ("prefix" | "suffix" | "contains" | "not_contains", "string") => {
                let v = Scalar::read(value)?;
                let text = v.text();
                let (kind, message) = match name {
                    "prefix" => (RuleKind::Prefix(v), format!("does not have prefix `{text}`")),
                    "suffix" => (RuleKind::Suffix(v), format!("does not have suffix `{text}`")),
                    "contains" => (RuleKind::Contains(v), format!("does not contain substring `{text}`")),
                    _ => (RuleKind::NotContains(v), format!("contains substring `{text}`")),
                };
                out.push(rule(kind, message));
            }
            (format, "string") if Format::from_name(format).is_some() => {
                let format = Format::from_name(format).expect("matched");
                ensure!(
                    value.as_bool() == Some(true),
                    "rule `{context}string.{name} = false` says nothing; remove it"
                );
                out.push(rule(
                    RuleKind::Format(format),
                    format!("must be a valid {}", format.noun()),
                ));
            }
            ("defined_only", "enum") => {
                if value.as_bool() == Some(true) {
                    out.push(rule(
                        RuleKind::DefinedOnly,
                        "value must be one of the defined enum values".to_owned(),
                    ));
                }
            }
            _ => bail!(unknown(name)),
        }
    }
    if lower.is_some() || upper.is_some() {
        out.insert(0, range(group, lower, upper));
    }
    Ok(out)
}

/// The range rule of `lower` and `upper`, with the id protovalidate picks.
fn range(group: &str, lower: Option<Bound>, upper: Option<Bound>) -> Rule {
    let name = |b: &Bound, low: bool| match (low, b.inclusive) {
        (true, false) => "gt",
        (true, true) => "gte",
        (false, false) => "lt",
        (false, true) => "lte",
    };
    let words = |b: &Bound, low: bool| {
        let relation = if low { "greater than" } else { "less than" };
        if b.inclusive {
            format!("{relation} or equal to {}", b.value.text())
        } else {
            format!("{relation} {}", b.value.text())
        }
    };
    let (id, message, exclusive) = match (&lower, &upper) {
        (Some(l), Some(u)) => {
            let exclusive = below(&u.value, &l.value);
            let suffix = if exclusive { "_exclusive" } else { "" };
            let joint = if exclusive { "or" } else { "and" };
            (
                format!("{group}.{}_{}{suffix}", name(l, true), name(u, false)),
                format!("must be {} {joint} {}", words(l, true), words(u, false)),
                exclusive,
            )
        }
        (Some(l), None) => (
            format!("{group}.{}", name(l, true)),
            format!("must be {}", words(l, true)),
            false,
        ),
        (None, Some(u)) => (
            format!("{group}.{}", name(u, false)),
            format!("must be {}", words(u, false)),
            false,
        ),
        (None, None) => unreachable!("called with a bound"),
    };
    Rule {
        id,
        message,
        kind: RuleKind::Range {
            lower,
            upper,
            exclusive,
        },
    }
}

/// `a < b` for two numbers of one group.
pub fn below(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::Int(a), Scalar::Int(b)) => a < b,
        (Scalar::UInt(a), Scalar::UInt(b)) => a < b,
        (Scalar::Double(a), Scalar::Double(b)) => a < b,
        _ => false,
    }
}

/// A list as protovalidate's messages print it (`%s` of a list): bytes
/// as text (invalid UTF-8 replaced), not as hex.
fn list_text(values: &[Scalar]) -> String {
    let items: Vec<_> = values
        .iter()
        .map(|v| match v {
            Scalar::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            other => other.text(),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// The rules of `RepeatedRules` other than `items`.
pub fn repeated_rule(name: &str, value: &Value) -> Result<Option<Rule>> {
    let count = || value.as_u64().context("a count");
    Ok(Some(match name {
        "min_items" => {
            let n = count()?;
            Rule {
                id: "repeated.min_items".into(),
                message: format!("must contain at least {n} item(s)"),
                kind: RuleKind::MinItems(n),
            }
        }
        "max_items" => {
            let n = count()?;
            Rule {
                id: "repeated.max_items".into(),
                message: format!("must contain no more than {n} item(s)"),
                kind: RuleKind::MaxItems(n),
            }
        }
        "unique" if value.as_bool() == Some(true) => Rule {
            id: "repeated.unique".into(),
            message: "repeated value must contain unique items".into(),
            kind: RuleKind::Unique,
        },
        "unique" => return Ok(None),
        other => bail!("rule `repeated.{other}` is not supported by the generators"),
    }))
}

/// The rules of `MapRules` other than `keys` and `values`.
pub fn map_rule(name: &str, value: &Value) -> Result<Rule> {
    let n = value.as_u64().context("a count")?;
    Ok(match name {
        "min_pairs" => Rule {
            id: "map.min_pairs".into(),
            message: format!("map must be at least {n} entries"),
            kind: RuleKind::MinPairs(n),
        },
        "max_pairs" => Rule {
            id: "map.max_pairs".into(),
            message: format!("map must be at most {n} entries"),
            kind: RuleKind::MaxPairs(n),
        },
        other => bail!("rule `map.{other}` is not supported by the generators"),
    })
}
