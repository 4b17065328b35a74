//! The checks of each field: scalars, messages, lists, maps and oneofs, with
//! protovalidate's rules on which rules apply:
//!
//! - a violated `required` is the field's only violation;
//! - an implicit-presence scalar, a list and a map are always checked (the
//!   default value and the empty list included), unless `ignore` is
//!   `IGNORE_IF_ZERO_VALUE` and the value is the zero value;
//! - an unset message field or oneof member is not checked;
//! - `IGNORE_ALWAYS` skips everything, the message's own rules included.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail, ensure};
use heck::{ToSnakeCase, ToUpperCamelCase};
use prost_reflect::{FieldDescriptor, Kind};

use super::checks::{checks, is_zero};
use super::{Generated, cel, required_check, rust_field_name, violated_if_not};
use crate::rules::{CelRule, Field, Ignore, Message, Oneof, Rule, ValueRules};

const RECURSE: &str = "crate::validate::Validate::collect_violations(value, &path, violations);";

impl Generated {
    /// The checks of a field outside any oneof.
    pub(super) fn field(&mut self, field: &Field) -> Result<String> {
        let d = &field.descriptor;
        if field.ignore == Ignore::Always {
            return Ok(String::new());
        }
        let access = format!("self.{}", rust_field_name(d.name()));
        let json = d.json_name();
        if d.is_map() {
            return self.map(field, &access);
        }
        if d.is_list() {
            return self.list(field, &access);
        }
        if let Kind::Message(_) = d.kind() {
            ensure!(
                field.rules.is_empty(),
                "only `required` and `cel` rules apply to a message field"
            );
            let cel = self.cel_checks(&field.cel, "value", d)?;
            let missing = if field.required {
                format!("else {{ {} }}", required_check())
            } else {
                String::new()
            };
            return Ok(format!(
                "{{ let path = path.field({json:?});
                    if let Some(value) = &{access} {{
                        {cel}{RECURSE}
                    }} {missing}
                }}"
            ));
        }
        ensure!(
            !d.supports_presence(),
            "a scalar with explicit presence (`optional`) is not supported by the validator generator"
        );
        let kind = d.kind();
        let checks = self.value_checks(d, &field.rules, &field.cel, "value")?;
        let zero = is_zero(&kind, "value");
        let body = self.guarded(field, &zero, checks);
        Ok(format!(
            "{{ let path = path.field({json:?}); let value = {}; {body} }}",
            bind(&kind, &access)
        ))
    }

    fn list(&mut self, field: &Field, access: &str) -> Result<String> {
        let d = &field.descriptor;
        let json = d.json_name();
        let kind = d.kind();
        let mut body = String::new();
        for check in checks(self, &kind, &field.rules, "value")? {
            push(&mut body, &check.broken, &check.id, &check.message);
        }
        body.push_str(&self.cel_checks(&field.cel, "value", d)?);
        let items = field.items.as_ref();
        let element = match kind {
            Kind::Message(_) => {
                ensure!(
                    items.is_none_or(|i| i.rules.is_empty()),
                    "only `cel` rules apply to the items of a list of messages"
                );
                match items {
                    Some(items) if !items.cel.is_empty() => {
                        format!(
                            "let value = item; {}{RECURSE}",
                            self.cel_checks(&items.cel, "value", d)?
                        )
                    }
                    _ => "crate::validate::Validate::collect_violations(item, &path, violations);".to_owned(),
                }
            }
            _ => match items {
                Some(items) => {
                    let checks = self.value_checks(d, &items.rules, &items.cel, "value")?;
                    format!("let value = {}; {checks}", bind(&kind, "item"))
                }
                None => String::new(),
            },
        };
        if !element.is_empty() {
            let _ = write!(
                body,
                "for (index, item) in value.iter().enumerate() {{ let path = path.index(index); {element} }}"
            );
        }
        let body = self.guarded(field, "value.is_empty()", body);
        Ok(format!(
            "{{ let path = path.field({json:?}); let value = &{access}; {body} }}"
        ))
    }

    /// `checks` under the field's `required` (a zero value is its only
    /// violation) or `IGNORE_IF_ZERO_VALUE` (a zero value is not checked).
    fn guarded(&mut self, field: &Field, zero: &str, checks: String) -> String {
        if field.required {
            if checks.is_empty() {
                format!("if {zero} {{ {} }}", required_check())
            } else {
                format!("if {zero} {{ {} }} else {{ {checks} }}", required_check())
            }
        } else if field.ignore == Ignore::IfZeroValue && !checks.is_empty() {
            // One check under the guard reads as two `if`s clippy would merge.
            self.lints.insert("clippy::collapsible_if");
            format!("if !({zero}) {{ {checks} }}")
        } else {
            checks
        }
    }

    fn map(&mut self, field: &Field, access: &str) -> Result<String> {
        let d = &field.descriptor;
        let json = d.json_name();
        let Kind::Message(entry) = d.kind() else {
            bail!("a map field's kind is its entry")
        };
        let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut body = String::new();
        for check in checks(self, &Kind::Message(entry.clone()), &field.rules, "value")? {
            push(&mut body, &check.broken, &check.id, &check.message);
        }
        body.push_str(&self.cel_checks(&field.cel, "value", d)?);
        let key_kind = key_field.kind();
        let key_path = match key_kind {
            Kind::String => "crate::validate::MapKey::Str(key.as_str())",
            Kind::Bool => "crate::validate::MapKey::Bool(*key)",
            Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => {
                "crate::validate::MapKey::UInt(u64::from(*key))"
            }
            _ => "crate::validate::MapKey::Int(i64::from(*key))",
        };
        let empty = ValueRules::default();
        let keys = field.keys.as_ref().unwrap_or(&empty);
        let values = field.values.as_ref().unwrap_or(&empty);
        let key_checks = self.value_checks(&key_field, &keys.rules, &keys.cel, "value")?;
        let value_checks = match value_field.kind() {
            Kind::Message(_) => {
                ensure!(
                    values.rules.is_empty(),
                    "only `cel` rules apply to the values of a map of messages"
                );
                format!(
                    "let value = item; {}{RECURSE}",
                    self.cel_checks(&values.cel, "value", &value_field)?
                )
            }
            kind => {
                let checks = self.value_checks(&value_field, &values.rules, &values.cel, "value")?;
                format!("let value = {}; {checks}", bind(&kind, "item"))
            }
        };
        let _ = write!(
            body,
            "for (key, item) in value.iter() {{ let path = path.key({key_path}); \
             {{ let value = {}; {key_checks} }} {{ {value_checks} }} }}",
            bind(&key_kind, "key")
        );
        let body = self.guarded(field, "value.is_empty()", body);
        Ok(format!(
            "{{ let path = path.field({json:?}); let value = &{access}; {body} }}"
        ))
    }

    pub(super) fn oneof(&mut self, message: &Message, oneof: &Oneof) -> Result<String> {
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
            let checks = if field.ignore == Ignore::Always {
                String::new()
            } else if let Kind::Message(_) = d.kind() {
                ensure!(field.rules.is_empty(), "{member}: rules on a message member");
                format!("{}{RECURSE}", self.cel_checks(&field.cel, "value", d)?)
            } else {
                let kind = d.kind();
                let checks = self
                    .value_checks(d, &field.rules, &field.cel, "value")
                    .with_context(|| format!("field {member}"))?;
                let checks = if field.ignore == Ignore::IfZeroValue && !checks.is_empty() {
                    self.lints.insert("clippy::collapsible_if");
                    format!("if !({}) {{ {checks} }}", is_zero(&kind, "value"))
                } else {
                    checks
                };
                format!("let value = {}; {checks}", bind(&kind, "value"))
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

    /// Checks of standard and CEL rules on one scalar, bound to `var` as
    /// [`bind`] binds it.
    pub(super) fn value_checks(
        &mut self,
        d: &FieldDescriptor,
        rules: &[Rule],
        cel: &[CelRule],
        var: &str,
    ) -> Result<String> {
        let kind = d.kind();
        ensure!(
            !matches!(kind, Kind::Message(_)) || rules.is_empty(),
            "standard rules on a message"
        );
        let mut code = String::new();
        for check in checks(self, &kind, rules, var)? {
            push(&mut code, &check.broken, &check.id, &check.message);
        }
        code.push_str(&self.cel_checks(cel, var, d)?);
        Ok(code)
    }

    /// The CEL rules on a value bound to `var`, `this` in its CEL representation.
    fn cel_checks(&mut self, rules: &[CelRule], var: &str, d: &FieldDescriptor) -> Result<String> {
        let this = if d.is_list() || d.is_map() {
            var.to_owned()
        } else {
            cel::scalar_this(&d.kind(), var)
        };
        let mut code = String::new();
        for rule in rules {
            let holds = cel::Compiler {
                generated: self,
                this: this.clone(),
            }
            .holds(&rule.expr)
            .with_context(|| format!("CEL rule `{}` on field `{}`", rule.id, d.full_name()))?;
            code.push_str(&violated_if_not(&holds, "&path", &rule.id, &rule.message));
        }
        Ok(code)
    }
}

/// A scalar read from `place` (a field, or `*`-able element reference) as
/// the checks take it: strings as `&str`, bytes as `&[u8]`, numbers copied.
fn bind(kind: &Kind, place: &str) -> String {
    let (deref, place) = match place.strip_prefix("self.") {
        Some(_) => ("", place.to_owned()),
        None => ("*", place.to_owned()),
    };
    match kind {
        Kind::String => format!("{place}.as_str()"),
        Kind::Bytes => format!("{place}.as_slice()"),
        _ => format!("{deref}{place}"),
    }
}

fn push(code: &mut String, broken: &str, id: &str, message: &str) {
    let _ = write!(code, "if {broken} {{ violations.push(&path, {id:?}, {message:?}); }}");
}
