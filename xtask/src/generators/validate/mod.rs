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
mod checks;
mod fields;

use std::fmt::Write as _;

use anyhow::{Context, Result, ensure};
use heck::ToUpperCamelCase;

use super::{RUST_HEADER, rust_field_name};
use crate::rules::{Api, Message, MessageOneof, Pattern};

pub fn generate(api: &Api) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for (package, messages) in super::messages_by_package(api) {
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
    /// Lints the message being generated trips (on purpose: its checks
    /// keep each rule's own shape), allowed on its impl.
    lints: std::collections::BTreeSet<&'static str>,
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
        for rule in &message.oneof_rules {
            body.push_str(&message_oneof(rule)?);
        }
        for rule in &message.cel {
            let holds = cel::Compiler {
                generated: self,
                this: "self".to_owned(),
            }
            .holds(&rule.expr)
            .with_context(|| format!("CEL rule `{}` on message `{}`", rule.id, message.descriptor.full_name()))?;
            body.push_str(&violated_if_not(&holds, "path", &rule.id, &rule.message));
        }
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
        let mut lints = vec!["clippy::nonminimal_bool", "clippy::manual_range_patterns"];
        lints.extend(std::mem::take(&mut self.lints));
        let lints = lints.join(", ");
        let _ = write!(
            self.code,
            "// The CEL translation keeps CEL's grouping, and enum checks list every number.
            #[allow({lints})]
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
}

/// `(buf.validate.message).oneof`: how many of the fields are set (as
/// `has()` counts), checked at the message's own path.
fn message_oneof(rule: &MessageOneof) -> Result<String> {
    let mut set = Vec::new();
    for field in &rule.fields {
        set.push(cel::has(field, "self")?);
    }
    let names: Vec<_> = rule.fields.iter().map(|f| f.name()).collect();
    let names = names.join(", ");
    let mut code = format!(
        "{{ let set = [{}].iter().filter(|set| **set).count(); \
         if set > 1 {{ violations.push(path, \"message.oneof\", {:?}); }}",
        set.join(", "),
        format!("only one of {names} can be set")
    );
    if rule.required {
        let _ = write!(
            code,
            " if set == 0 {{ violations.push(path, \"message.oneof\", {:?}); }}",
            format!("one of {names} must be set")
        );
    }
    code.push('}');
    Ok(code)
}

/// A violation of rule `id` at `path` (a `&FieldPath` expression) unless
/// the Rust bool `holds` is true.
fn violated_if_not(holds: &str, path: &str, id: &str, message: &str) -> String {
    // Binary expressions come wrapped in parentheses, so a leading `!`
    // negates the whole expression.
    let broken = match holds.strip_prefix('!') {
        Some(inner) => inner.to_owned(),
        None => format!("!{holds}"),
    };
    format!("if {broken} {{ violations.push({path}, {id:?}, {message:?}); }}")
}

fn required_check() -> String {
    "violations.push(&path, \"required\", \"value is required\");".to_owned()
}

/// prost's name for a message type (`VirtualHostTLS` -> `VirtualHostTls`).
fn rust_type_name(name: &str) -> String {
    name.to_upper_camel_case()
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
            compile_cel("(this.size() > 2 ? 'long' : 'short') != 'long'", Type::String).unwrap(),
            r#"((if ((crate::validate::char_len(value) as i64) > 2i64) { "long" } else { "short" }) != "long")"#
        );
    }

    #[test]
    fn compiles_macros_over_lists() {
        let strings = Type::List(Box::new(Type::String));
        assert_eq!(
            compile_cel("this.all(h, h.size() <= 3)", strings.clone()).unwrap(),
            "value.iter().all(|element| { let cel_h = element.as_str(); \
             (crate::validate::char_len(cel_h) as i64) <= 3i64 })"
        );
        assert_eq!(
            compile_cel("this.filter(h, h != '').size() == 1", strings).unwrap(),
            r#"((value.iter().filter(|&element| { let cel_h = element.as_str(); !cel_h.is_empty() }).count() as i64) == 1i64)"#
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
