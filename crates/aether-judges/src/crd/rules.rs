//! The CRD's `x-kubernetes-validations` CEL rules, compiled by kube-cel and
//! evaluated here, node by node, as the API server evaluates them.
//!
//! Why not `kube_cel::Validator`: it runs the rules in a private cel context
//! whose built-in `size()` (cel 0.13) counts a string's bytes, while CEL and the
//! API server count its characters (code points), so it refused a label key of
//! 6 characters in 7 bytes that the API server admits. Here the same compiled
//! programs run in a context we own, with `size()` replaced. Go back to
//! `kube_cel::Validator::validate_compiled` once kube-cel's `size()` counts
//! characters.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value as Cel};
use kube_cel::{CompilationResult, CompiledSchema, KubeCelExt};
use serde_json::Value;

/// The compiled rules of one schema, the schema, and the context they run in.
pub struct Rules {
    schema: Value,
    compiled: CompiledSchema,
    context: Context<'static>,
}

impl Rules {
    /// Compiles every rule of `schema` (kube-cel's compiler).
    pub fn new(schema: Value) -> Self {
        let mut context = Context::default();
        context.register_all();
        // Registered last, so it replaces cel's byte-counting `size`.
        context.add_function("size", size);
        Self {
            compiled: kube_cel::compile_schema(&schema),
            schema,
            context,
        }
    }

    /// Every rule `value` breaks, as `path: message (CEL)`.
    pub fn problems(&self, value: &Value, problems: &mut Vec<String>) {
        // The API server defaults an object before it runs the rules.
        let defaulted = kube_cel::apply_defaults(&self.schema, value);
        self.walk(&self.compiled, &self.schema, &defaulted, "", problems);
    }

    /// The rules of one node, then of its children, where `value` has them.
    fn walk(&self, compiled: &CompiledSchema, schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
        if !compiled.validations.is_empty() {
            let mut scope = self.context.new_inner_scope();
            scope.add_variable_from_value("self", to_cel(value, schema));
            for validation in &compiled.validations {
                match validation {
                    Ok(rule) => evaluate(rule, &scope, path, problems),
                    // A rule that does not compile admits nothing, as the API
                    // server refuses such a CRD outright.
                    Err(err) => problems.push(format!("{path}: {err} (CEL)")),
                }
            }
        }
        match value {
            Value::Object(fields) => {
                for (key, child) in fields {
                    let child_path = join(path, key);
                    if let Some(property) = compiled.properties.get(key) {
                        self.walk(property, &schema["properties"][key], child, &child_path, problems);
                    } else if let Some(values) = &compiled.additional_properties
                        && !compiled.preserve_unknown_fields
                    {
                        self.walk(values, &schema["additionalProperties"], child, &child_path, problems);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = &compiled.items {
                    for (i, child) in items.iter().enumerate() {
                        let child_path = format!("{path}[{i}]");
                        self.walk(item, &schema["items"], child, &child_path, problems);
                    }
                }
            }
            _ => {}
        }
        // The rules of `allOf`/`oneOf`/`anyOf` branches apply to the same value.
        for (keyword, branches) in [
            ("allOf", &compiled.all_of),
            ("oneOf", &compiled.one_of),
            ("anyOf", &compiled.any_of),
        ] {
            for (i, branch) in branches.iter().enumerate() {
                self.walk(branch, &schema[keyword][i], value, path, problems);
            }
        }
    }
}

/// Runs one rule with `self` bound: false, not a bool, or an error, it is a problem.
fn evaluate(rule: &CompilationResult, scope: &Context<'_>, path: &str, problems: &mut Vec<String>) {
    // A transition rule needs the stored object, which an offline judge of
    // a new object does not have: the API server skips it on create, unless
    // `optionalOldSelf` asks for it with `oldSelf` null.
    let mut scope = scope.new_inner_scope();
    if rule.is_transition_rule {
        if rule.rule.optional_old_self != Some(true) {
            return;
        }
        scope.add_variable_from_value("oldSelf", Cel::Null);
    }
    let path = match rule.rule.field_path.as_deref() {
        Some(field) if field.starts_with('.') => format!("{path}{field}"),
        Some(field) => join(path, field),
        None => path.to_string(),
    };
    let message = match rule.program.execute(&scope) {
        Ok(Cel::Bool(true)) => return,
        Ok(Cel::Bool(false)) => match rule.message_program.as_ref().map(|m| m.execute(&scope)) {
            Some(Ok(Cel::String(message))) => message.to_string(),
            _ => rule
                .rule
                .message
                .clone()
                .unwrap_or_else(|| format!("failed rule: {}", rule.rule.rule)),
        },
        Ok(other) => format!("rule \"{}\" evaluated to {other:?}, not a bool", rule.rule.rule),
        Err(err) => format!("rule \"{}\" failed to evaluate: {err}", rule.rule.rule),
    };
    problems.push(format!("{path}: {message} (CEL)"));
}

/// CEL's `size()`: a string's characters (code points), a list's items, a map's entries, a bytes' bytes.
fn size(ftx: &FunctionContext, This(this): This<Cel>) -> Result<i64, ExecutionError> {
    let size = match this {
        Cel::String(s) => s.chars().count(),
        Cel::Bytes(b) => b.len(),
        Cel::List(l) => l.len(),
        Cel::Map(m) => m.map.len(),
        other => return Err(ftx.error(format!("no size() of {other:?}"))),
    };
    i64::try_from(size).map_err(|_| ftx.error("a size beyond int"))
}

/// The CEL value the API server binds for `value` under `schema`.
///
/// Numbers take the schema's type (an `integer` is an int, a `number` a double,
/// even when written whole), `format: byte` strings are the bytes they encode,
/// an object is a map by field name or, under `additionalProperties`, by key.
fn to_cel(value: &Value, schema: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (schema["type"].as_str(), n.as_i64(), n.as_f64()) {
            (Some("number"), _, Some(f)) => Cel::Float(f),
            (_, Some(i), _) => Cel::Int(i),
            // A whole number written with a fraction (`2.0`) decodes as an int.
            (Some("integer"), None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Cel::Int(f as i64),
            _ => n
                .as_u64()
                .map_or_else(|| Cel::Float(n.as_f64().unwrap_or(f64::NAN)), Cel::UInt),
        },
        Value::String(s) => match schema["format"].as_str() {
            // An int-or-string's format says nothing of its strings.
            _ if schema["x-kubernetes-int-or-string"] == true => Cel::String(Arc::new(s.clone())),
            Some("byte") => match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(bytes) => Cel::Bytes(Arc::new(bytes)),
                // Not base64: the OpenAPI check refuses it; CEL sees the text.
                Err(_) => Cel::String(Arc::new(s.clone())),
            },
            Some(format @ ("date-time" | "duration")) => {
                panic!("`format: {format}` strings are not bound as the API server binds them; bind them first")
            }
            _ => Cel::String(Arc::new(s.clone())),
        },
        Value::Array(items) => Cel::List(Arc::new(
            items.iter().map(|item| to_cel(item, &schema["items"])).collect(),
        )),
        Value::Object(fields) => {
            let mut map = HashMap::with_capacity(fields.len());
            for (key, child) in fields {
                let child_schema = match schema["properties"].get(key) {
                    Some(property) => {
                        assert!(
                            is_plain_field_name(key),
                            "field `{key}` would need CEL escaping, which this judge does not do"
                        );
                        property
                    }
                    None => &schema["additionalProperties"],
                };
                map.insert(Key::String(Arc::new(key.clone())), to_cel(child, child_schema));
            }
            Cel::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A field name the API server binds as it is: an identifier, not a CEL reserved word.
fn is_plain_field_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.contains("__")
        && !aether_rules::cel::RESERVED_WORDS.contains(&name)
}

/// `base.segment`, or `segment` at the root.
fn join(base: &str, segment: &str) -> String {
    if base.is_empty() {
        segment.to_string()
    } else {
        format!("{base}.{segment}")
    }
}
