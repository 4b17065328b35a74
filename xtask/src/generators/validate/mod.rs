//! `aether-validate`: `Validate` impls (crate `aether_api::validate`) for every
//! message, compiled from the buf.validate rules in [`crate::rules`].
//!
//! The generated code does what protovalidate does for the same message:
//!
//! - a `required` scalar with implicit presence is violated by the default
//!   value (`""`, `0`), a `required` message field by its absence, a
//!   `required` list by being empty; a violated `required` is the field's only
//!   violation (its other rules are skipped);
//! - otherwise a scalar's rules apply to every value, the default included
//!   (implicit presence: an empty `message` is checked against `max_len`);
//! - an unset message field or oneof member is not checked; a set one is, and
//!   a message is validated recursively;
//! - a `required` oneof with no member set is reported at the oneof's name
//!   with rule id `required`.
//!
//! CEL rules are compiled to Rust here ([`cel`]), not interpreted at run
//! time, from the tree the rules model parsed and typed once
//! ([`crate::rules::cel`]). `false` is a violation carrying the rule's own id
//! and message.

mod cel;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result, bail, ensure};
use heck::{ToSnakeCase, ToUpperCamelCase};
use prost_reflect::{FieldDescriptor, Kind};

use super::RUST_HEADER;
use crate::rules::{Api, BoundOp, CelRule, Field, Message, Pattern, Rule};

pub fn generate(api: &Api) -> Result<Vec<(String, Vec<u8>)>> {
    let mut by_package: BTreeMap<String, Vec<&Message>> = BTreeMap::new();
    for message in &api.messages {
        by_package
            .entry(message.descriptor.package_name().to_owned())
            .or_default()
            .push(message);
    }
    let mut files = Vec::new();
    for (package, messages) in by_package {
        let mut out = Generated::default();
        for message in messages {
            out.message(message)
                .with_context(|| message.descriptor.full_name().to_owned())?;
        }
        let code = out.finish();
        let parsed = syn::parse_file(&code).with_context(|| format!("parsing the generated validators:\n{code}"))?;
        let formatted = prettyplease::unparse(&parsed);
        files.push((
            format!("{package}.validate.rs"),
            format!("{RUST_HEADER}{formatted}").into_bytes(),
        ));
    }
    Ok(files)
}

/// The code of one package's file, and the patterns its validators use.
#[derive(Default)]
struct Generated {
    code: String,
    /// Every distinct pattern, in first-use order: one compiled static each.
    patterns: Vec<String>,
}

/// The Rust type of a checked scalar value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Str,
    Int,
    UInt,
}

impl Generated {
    fn finish(self) -> String {
        let mut code = String::new();
        for (i, pattern) in self.patterns.iter().enumerate() {
            let _ = writeln!(
                code,
                "/// `{}`\nstatic PATTERN_{i}: ::std::sync::LazyLock<crate::validate::Regex> = \
                 ::std::sync::LazyLock::new(|| crate::validate::compile({pattern:?}));",
                pattern.replace('`', "\\`")
            );
        }
        code.push_str(&self.code);
        code
    }

    /// The static holding `pattern`, compiled once (checked by the rules model).
    fn pattern(&mut self, pattern: &Pattern) -> String {
        let index = match self.patterns.iter().position(|p| *p == pattern.source) {
            Some(index) => index,
            None => {
                self.patterns.push(pattern.source.clone());
                self.patterns.len() - 1
            }
        };
        format!("PATTERN_{index}")
    }

    fn message(&mut self, message: &Message) -> Result<()> {
        let name = message.descriptor.name();
        ensure!(
            message.descriptor.parent_message().is_none(),
            "nested messages are not supported by the validator generator (prost puts them in a module)"
        );
        // The CRD's spec and status messages are named `<Kind>Spec` and
        // `<Kind>Status`; their paths start where Kubernetes puts them.
        let root = if name.ends_with("Spec") {
            "spec"
        } else if name.ends_with("Status") {
            "status"
        } else {
            ""
        };
        let mut body = String::new();
        for field in &message.fields {
            if field.descriptor.containing_oneof().is_some() {
                continue;
            }
            body.push_str(&self.field(field).with_context(|| format!("field {}", field.name()))?);
        }
        for oneof in &message.oneofs {
            body.push_str(&self.oneof(message, oneof)?);
        }
        let rust_type = rust_type_name(name);
        let _ = write!(
            self.code,
            "// The CEL translation keeps CEL's grouping, and enum checks list every number.
            #[allow(clippy::nonminimal_bool, clippy::manual_range_patterns)]
            impl crate::validate::Validate for {rust_type} {{
                const ROOT: &'static str = {root:?};
                #[allow(unused_variables)]
                fn collect_violations(&self, path: &crate::validate::FieldPath<'_>, violations: &mut crate::validate::Violations) {{
                    {body}
                }}
            }}
            "
        );
        Ok(())
    }

    /// The checks of a field outside any oneof.
    fn field(&mut self, field: &Field) -> Result<String> {
        let d = &field.descriptor;
        let access = format!("self.{}", rust_field_name(d.name()));
        let json = d.json_name();
        ensure!(!d.is_map(), "map fields are not supported by the validator generator");
        if d.is_list() {
            return self.list(field, &access);
        }
        if let Kind::Message(_) = d.kind() {
            ensure!(
                field.rules.is_empty() && field.cel.is_empty(),
                "only `required` is supported on a message field"
            );
            let missing = if field.required {
                format!("else {{ {} }}", required_check())
            } else {
                String::new()
            };
            return Ok(format!(
                "{{ let path = path.field({json:?});
                    if let Some(value) = &{access} {{
                        crate::validate::Validate::collect_violations(value, &path, violations);
                    }} {missing}
                }}"
            ));
        }
        ensure!(
            !d.supports_presence(),
            "a scalar with explicit presence (`optional`) is not supported by the validator generator"
        );
        let ty = scalar_ty(d)?;
        let value = if ty == Ty::Str {
            format!("{access}.as_str()")
        } else {
            access.clone()
        };
        let checks = self.value_checks(d, &field.rules, &field.cel, "value")?;
        let body = if field.required {
            let default = if ty == Ty::Str {
                "value.is_empty()"
            } else {
                "value == 0"
            };
            format!("if {default} {{ {} }} else {{ {checks} }}", required_check())
        } else {
            checks
        };
        Ok(format!(
            "{{ let path = path.field({json:?}); let value = {value}; {body} }}"
        ))
    }

    fn list(&mut self, field: &Field, access: &str) -> Result<String> {
        let d = &field.descriptor;
        let json = d.json_name();
        ensure!(
            field.cel.is_empty(),
            "CEL rules on a whole list are not supported; use `repeated.items.cel`"
        );
        let mut checks = String::new();
        for rule in &field.rules {
            let id = rule.id();
            let (broken, message) = match rule {
                Rule::MinItems(1) => (
                    "value.is_empty()".to_owned(),
                    "must contain at least 1 item(s)".to_owned(),
                ),
                Rule::MinItems(n) => (
                    format!("value.len() < {n}"),
                    format!("must contain at least {n} item(s)"),
                ),
                Rule::MaxItems(n) => (
                    format!("value.len() > {n}"),
                    format!("must contain no more than {n} item(s)"),
                ),
                Rule::Unique => {
                    ensure!(
                        !matches!(d.kind(), Kind::Message(_)),
                        "`repeated.unique` on messages: protovalidate does not support it"
                    );
                    (
                        "crate::validate::has_duplicates(value)".to_owned(),
                        "repeated value must contain unique items".to_owned(),
                    )
                }
                other => bail!("rule `{id}` ({other:?}) does not apply to a list"),
            };
            let _ = write!(checks, "if {broken} {{ violations.push(&path, {id:?}, {message:?}); }}");
        }
        let element = match d.kind() {
            Kind::Message(_) => {
                ensure!(
                    field.items.is_none(),
                    "`repeated.items` rules on messages are not supported"
                );
                "crate::validate::Validate::collect_violations(item, &path, violations);".to_owned()
            }
            _ => match &field.items {
                Some(items) => {
                    let ty = scalar_ty(d)?;
                    let item = if ty == Ty::Str { "item.as_str()" } else { "*item" };
                    let checks = self.value_checks(d, &items.rules, &items.cel, "value")?;
                    format!("let value = {item}; {checks}")
                }
                None => String::new(),
            },
        };
        if !element.is_empty() {
            let _ = write!(
                checks,
                "for (index, item) in value.iter().enumerate() {{ let path = path.index(index); {element} }}"
            );
        }
        let body = if field.required {
            format!("if value.is_empty() {{ {} }} else {{ {checks} }}", required_check())
        } else {
            checks
        };
        Ok(format!(
            "{{ let path = path.field({json:?}); let value = &{access}; {body} }}"
        ))
    }

    fn oneof(&mut self, message: &Message, oneof: &crate::rules::Oneof) -> Result<String> {
        let module = message.descriptor.name().to_snake_case();
        let enum_name = oneof.name.to_upper_camel_case();
        let mut arms = String::new();
        for member in &oneof.fields {
            let field = message
                .fields
                .iter()
                .find(|f| f.name() == member)
                .context("oneof member")?;
            let d = &field.descriptor;
            let json = d.json_name();
            ensure!(
                !field.required,
                "{member}: `required` on a oneof member is not supported; use the oneof's"
            );
            let variant = member.to_upper_camel_case();
            let checks = match d.kind() {
                Kind::Message(_) => {
                    ensure!(
                        field.rules.is_empty() && field.cel.is_empty(),
                        "{member}: rules on a message member"
                    );
                    "crate::validate::Validate::collect_violations(value, &path, violations);".to_owned()
                }
                _ => {
                    let ty = scalar_ty(d)?;
                    let value = if ty == Ty::Str { "value.as_str()" } else { "*value" };
                    let checks = self
                        .value_checks(d, &field.rules, &field.cel, "value")
                        .with_context(|| format!("field {member}"))?;
                    format!("let value = {value}; {checks}")
                }
            };
            let _ = write!(
                arms,
                "Some({module}::{enum_name}::{variant}(value)) => {{ let path = path.field({json:?}); {checks} }}"
            );
        }
        let none = if oneof.required {
            format!(
                "{{ let path = path.field({:?}); violations.push(&path, \"required\", \"exactly one field is required in oneof\"); }}",
                oneof.name
            )
        } else {
            "{}".to_owned()
        };
        Ok(format!(
            "#[allow(unreachable_patterns)] match &self.{} {{ {arms} None => {none} }}",
            rust_field_name(&oneof.name)
        ))
    }

    /// Checks of standard and CEL rules on one scalar, bound to `var`.
    fn value_checks(&mut self, d: &FieldDescriptor, rules: &[Rule], cel: &[CelRule], var: &str) -> Result<String> {
        let mut checks = String::new();
        ensure!(
            !rules.iter().any(|r| matches!(
                r,
                Rule::Bound {
                    op: BoundOp::Gt | BoundOp::Gte,
                    ..
                }
            )) || !rules.iter().any(|r| matches!(
                r,
                Rule::Bound {
                    op: BoundOp::Lt | BoundOp::Lte,
                    ..
                }
            )),
            "a lower and an upper bound together: protovalidate reports them as one range rule \
             (`gte_lte` and friends), which the validator generator does not produce yet"
        );
        for rule in rules {
            let id = rule.id();
            let (broken, message) = match rule {
                Rule::MinLen(n) => (
                    format!("crate::validate::char_len({var}) < {n}"),
                    format!("must be at least {n} characters"),
                ),
                Rule::MaxLen(n) => (
                    format!("crate::validate::char_len({var}) > {n}"),
                    format!("must be at most {n} characters"),
                ),
                Rule::Pattern(pattern) => {
                    let name = self.pattern(pattern);
                    (
                        format!("!{name}.is_match({var})"),
                        format!("does not match regex pattern `{}`", pattern.source),
                    )
                }
                Rule::In(values) => {
                    ensure!(!values.is_empty(), "`string.in` with no values");
                    let alternatives: Vec<_> = values.iter().map(|v| format!("{v:?}")).collect();
                    (
                        format!("!matches!({var}, {})", alternatives.join(" | ")),
                        format!("must be in list [{}]", values.join(", ")),
                    )
                }
                Rule::Bound { op, value, .. } => {
                    let rust = rust_scalar(d)?;
                    // The comparison that breaks the rule.
                    let (broken, words) = match op {
                        BoundOp::Gte => ("<", "greater than or equal to"),
                        BoundOp::Gt => ("<=", "greater than"),
                        BoundOp::Lte => (">", "less than or equal to"),
                        BoundOp::Lt => (">=", "less than"),
                    };
                    // A bound out of the field type's range fails to compile the crate.
                    (
                        format!("{var} {broken} {value}{rust}"),
                        format!("must be {words} {value}"),
                    )
                }
                Rule::DefinedOnly => {
                    let Kind::Enum(enumeration) = d.kind() else {
                        bail!("`enum.defined_only` on a non-enum")
                    };
                    let numbers: Vec<_> = enumeration.values().map(|v| v.number().to_string()).collect();
                    (
                        format!("!matches!({var}, {})", numbers.join(" | ")),
                        "value must be one of the defined enum values".to_owned(),
                    )
                }
                Rule::MinItems(_) | Rule::MaxItems(_) | Rule::Unique => {
                    bail!("rule `{id}` applies to lists only")
                }
            };
            let _ = write!(checks, "if {broken} {{ violations.push(&path, {id:?}, {message:?}); }}");
        }
        for rule in cel {
            let holds = cel::Compiler {
                generated: self,
                this: cel::scalar_this(&d.kind(), var),
            }
            .holds(&rule.expr)
            .with_context(|| format!("CEL rule `{}` on field `{}`", rule.id, d.full_name()))?;
            // Binary expressions come wrapped in parentheses, so a leading `!`
            // negates the whole expression.
            let broken = match holds.strip_prefix('!') {
                Some(inner) => inner.to_owned(),
                None => format!("!{holds}"),
            };
            let _ = write!(
                checks,
                "if {broken} {{ violations.push(&path, {:?}, {:?}); }}",
                rule.id, rule.message
            );
        }
        Ok(checks)
    }
}

fn required_check() -> String {
    "violations.push(&path, \"required\", \"value is required\");".to_owned()
}

fn scalar_ty(d: &FieldDescriptor) -> Result<Ty> {
    Ok(match d.kind() {
        Kind::String => Ty::Str,
        Kind::Int32 | Kind::Int64 | Kind::Sint32 | Kind::Sint64 | Kind::Sfixed32 | Kind::Sfixed64 | Kind::Enum(_) => {
            Ty::Int
        }
        Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => Ty::UInt,
        other => bail!("fields of type {other:?} are not supported by the validator generator"),
    })
}

/// The Rust type prost gives a scalar field, as a literal suffix.
fn rust_scalar(d: &FieldDescriptor) -> Result<&'static str> {
    Ok(match d.kind() {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 | Kind::Enum(_) => "i32",
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => "i64",
        Kind::Uint32 | Kind::Fixed32 => "u32",
        Kind::Uint64 | Kind::Fixed64 => "u64",
        other => bail!("numeric bounds on {other:?}"),
    })
}

/// prost's name for a message type (`VirtualHostTLS` -> `VirtualHostTls`).
fn rust_type_name(name: &str) -> String {
    name.to_upper_camel_case()
}

/// prost's name for a field (`match` -> `r#match`).
fn rust_field_name(name: &str) -> String {
    let snake = name.to_snake_case();
    match syn::parse_str::<syn::Ident>(&snake) {
        Ok(_) => snake,
        Err(_) => format!("r#{snake}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::cel::{Type, parse};

    fn compile_cel(expression: &str, this: Type) -> Result<String> {
        let expr = parse(expression, this)?;
        cel::Compiler {
            generated: &mut Generated::default(),
            this: "value".to_owned(),
        }
        .holds(&expr)
    }

    #[test]
    fn compiles_the_path_rules() {
        let code = compile_cel(
            "!this.contains('/./') && !this.contains('/../') && !this.endsWith('/.') && !this.endsWith('/..')",
            Type::String,
        )
        .unwrap();
        assert_eq!(
            code,
            r#"((!value.contains("/./") && !value.contains("/../")) && (!value.ends_with("/.") && !value.ends_with("/..")))"#
        );
    }

    #[test]
    fn compiles_sizes_comparisons_and_matches() {
        assert_eq!(
            compile_cel("size(this) <= 3", Type::String).unwrap(),
            "((crate::validate::char_len(value) as i64) <= 3i64)"
        );
        assert_eq!(
            compile_cel("this.size() != 0 || this == 'x'", Type::String).unwrap(),
            r#"(((crate::validate::char_len(value) as i64) != 0i64) || (value == "x"))"#
        );
        assert_eq!(
            compile_cel("this.matches('^a+$')", Type::String).unwrap(),
            "PATTERN_0.is_match(value)"
        );
        assert_eq!(compile_cel("this > 5u", Type::UInt).unwrap(), "(value > 5u64)");
        assert_eq!(
            compile_cel("(this.size() > 2 ? 'long' : '') != ''", Type::String).unwrap(),
            r#"((if ((crate::validate::char_len(value) as i64) > 2i64) { "long" } else { "" }) != "")"#
        );
    }

    #[test]
    fn compiles_macros_over_lists() {
        let strings = Type::List(Box::new(Type::String));
        assert_eq!(
            compile_cel("this.all(h, h.size() <= 3)", strings.clone()).unwrap(),
            "value.iter().all(|element| { let cel_h = element.as_str(); \
             ((crate::validate::char_len(cel_h) as i64) <= 3i64) })"
        );
        assert_eq!(
            compile_cel("this.filter(h, h != '').size() == 1", strings).unwrap(),
            r#"((value.iter().filter(|&element| { let cel_h = element.as_str(); (cel_h != "") }).count() as i64) == 1i64)"#
        );
    }

    #[test]
    fn cel_errors_name_the_rule_and_field() {
        let root = crate::workspace_root();
        let plan = crate::plan::Plan::load(&root).unwrap();
        let pinned = crate::proto_deps::PinnedCrates::load(&root).unwrap();
        let context = crate::generators::Context::load(&root, &plan.input_dirs, pinned).unwrap();
        let route_match = context.api.message("aether.config.v1.RouteMatch").unwrap();
        let mut prefix_rules = route_match.fields[0].cel.clone();
        // A tree the model would not build (filter outside size()), so the
        // validator's own refusal is what is tested.
        prefix_rules[0].expr = parse("this.all(x, x != '')", Type::List(Box::new(Type::String))).unwrap();
        if let crate::rules::cel::ExprKind::Macro(kind, ..) = &mut prefix_rules[0].expr.kind {
            *kind = crate::rules::cel::Macro::Filter;
        }
        let d = &route_match.fields[0].descriptor;
        let err = Generated::default()
            .value_checks(d, &[], &prefix_rules, "value")
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("path.no_empty_segment") && text.contains("aether.config.v1.RouteMatch.prefix"),
            "{text}"
        );
    }

    #[test]
    fn prost_names() {
        assert_eq!(rust_type_name("VirtualHostTLS"), "VirtualHostTls");
        assert_eq!(rust_type_name("HTTPRoute"), "HttpRoute");
        assert_eq!(rust_field_name("match"), "r#match");
        assert_eq!(rust_field_name("type"), "r#type");
        assert_eq!(rust_field_name("secret_name"), "secret_name");
    }
}
