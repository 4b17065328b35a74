//! `aether-regexes`: `Regexes` impls (crate `aether_api::regexes`), the one
//! list of a message's regular expressions, from the fields the proto marks
//! [`RE2_OPTION`](crate::rules::RE2_OPTION).
//!
//! The edge's RE2 guard walks this list, so a regex field added in the
//! proto is guarded once it is marked, with no Rust code edited. Only the
//! messages that hold a marked field, directly or below, get an impl.
//! A marked field codegen cannot reach (under a map, in a nested message)
//! fails codegen rather than going unguarded.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{Context, Result, bail, ensure};
use heck::{ToSnakeCase, ToUpperCamelCase};
use prost_reflect::{Kind, MessageDescriptor};

use super::{RUST_HEADER, rust_field_name};
use crate::rules::{Api, Field, Message};

pub fn generate(api: &Api) -> Result<Vec<(String, Vec<u8>)>> {
    let holding = messages_holding_regexes(api);
    let mut files = Vec::new();
    for (package, messages) in super::messages_by_package(api) {
        let mut code = String::new();
        for message in messages
            .into_iter()
            .filter(|m| holding.contains(m.descriptor.full_name()))
        {
            code.push_str(&visit_impl(message, &holding).with_context(|| message.descriptor.full_name().to_owned())?);
        }
        let parsed = syn::parse_file(&code).with_context(|| format!("parsing the generated regex lists:\n{code}"))?;
        files.push((
            format!("{package}.regexes.rs"),
            format!("{RUST_HEADER}{}", prettyplease::unparse(&parsed)).into_bytes(),
        ));
    }
    Ok(files)
}

/// The full names of the messages with a marked field, directly or in a
/// message field below them.
fn messages_holding_regexes(api: &Api) -> BTreeSet<String> {
    let mut holding: BTreeSet<String> = BTreeSet::new();
    loop {
        let before = holding.len();
        for message in &api.messages {
            let holds = message
                .fields
                .iter()
                .any(|field| field.re2 || message_kind(field).is_some_and(|child| holding.contains(child.full_name())));
            if holds {
                holding.insert(message.descriptor.full_name().to_owned());
            }
        }
        if holding.len() == before {
            return holding;
        }
    }
}

/// The message a field holds (for a map: as its values).
fn message_kind(field: &Field) -> Option<MessageDescriptor> {
    match field.descriptor.kind() {
        Kind::Message(entry) if field.descriptor.is_map() => match entry.map_entry_value_field().kind() {
            Kind::Message(value) => Some(value),
            _ => None,
        },
        Kind::Message(message) => Some(message),
        _ => None,
    }
}

fn visit_impl(message: &Message, holding: &BTreeSet<String>) -> Result<String> {
    ensure!(
        message.descriptor.parent_message().is_none(),
        "a nested message holding a regex field is not supported (prost puts it in a module)"
    );
    let mut body = String::new();
    for field in &message.fields {
        let child = message_kind(field).filter(|child| holding.contains(child.full_name()));
        if !field.re2 && child.is_none() {
            continue;
        }
        ensure!(
            !field.descriptor.is_map(),
            "field {}: a regex in a map is not supported",
            field.name()
        );
        // What is done with each value: a regex is visited, a message walked.
        let path = format!("path.field({:?})", field.json_name());
        let each = |value: &str, at: &str| match field.re2 {
            true => format!("visit(&{at}, {value});"),
            false => format!("{value}.visit_regexes(&{at}, visit);"),
        };
        let name = rust_field_name(field.name());
        let code = if let Some(oneof) = field.descriptor.containing_oneof().filter(|o| !o.is_synthetic()) {
            format!(
                "if let Some({}::{}::{}(value)) = &self.{} {{ {} }}",
                message.descriptor.name().to_snake_case(),
                oneof.name().to_upper_camel_case(),
                field.name().to_upper_camel_case(),
                rust_field_name(oneof.name()),
                each("value", &path),
            )
        } else if field.descriptor.is_list() {
            format!(
                "{{ let path = {path}; for (index, value) in self.{name}.iter().enumerate() {{ {} }} }}",
                each("value", "path.index(index)")
            )
        } else if field.descriptor.supports_presence() {
            format!("if let Some(value) = &self.{name} {{ {} }}", each("value", &path))
        } else if field.re2 {
            // Implicit presence: an empty string is no regex.
            format!(
                "if !self.{name}.is_empty() {{ {} }}",
                each(&format!("&self.{name}"), &path)
            )
        } else {
            bail!("field {}: a message without presence", field.name());
        };
        body.push_str(&code);
    }
    let mut out = String::new();
    let _ = write!(
        out,
        "impl crate::regexes::Regexes for {} {{
            fn visit_regexes<'a>(
                &'a self,
                path: &crate::validate::FieldPath<'_>,
                visit: &mut dyn FnMut(&crate::validate::FieldPath<'_>, &'a str),
            ) {{ {body} }}
        }}
        ",
        message.descriptor.name().to_upper_camel_case()
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated code of a scratch API ([`scratch_api`](crate::generators::scratch_api)).
    fn generated(body: &str) -> Result<String> {
        let files = generate(&crate::generators::scratch_api(body)?)?;
        let (_, code) = files.into_iter().find(|(name, _)| name == "t.regexes.rs").unwrap();
        Ok(String::from_utf8(code).unwrap())
    }

    #[test]
    fn a_marked_field_is_listed_with_no_code_edited() {
        let code = generated(
            "message Spec { repeated Route routes = 1; string name = 2; }
             message Route { Match match = 1; string note = 2; }
             message Match { string cookie = 1 [(aether.config.v1.re2) = true]; repeated string any = 2 [(aether.config.v1.re2) = true]; }",
        )
        .unwrap();
        assert!(code.contains("impl crate::regexes::Regexes for Spec"), "{code}");
        assert!(code.contains("impl crate::regexes::Regexes for Route"), "{code}");
        assert!(code.contains("if !self.cookie.is_empty()"), "{code}");
        assert!(code.contains(r#"path.field("cookie")"#), "{code}");
        assert!(code.contains(r#"let path = path.field("any")"#), "{code}");
        assert!(
            !code.contains("note") && !code.contains("name"),
            "unmarked fields are not listed: {code}"
        );
    }

    #[test]
    fn a_message_without_regexes_gets_no_impl() {
        let code = generated("message Spec { string name = 1; }").unwrap();
        assert!(!code.contains("impl"), "{code}");
    }

    #[test]
    fn a_marked_field_that_is_no_string_fails_the_reading() {
        let err = generated("message Spec { uint32 port = 1 [(aether.config.v1.re2) = true]; }").unwrap_err();
        assert!(format!("{err:#}").contains("not a string"), "{err:#}");
    }

    #[test]
    fn a_regex_under_a_map_fails_codegen() {
        let err = generated(
            "message Spec { map<string, Match> matches = 1; }
             message Match { string regex = 1 [(aether.config.v1.re2) = true]; }",
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("map"), "{err:#}");
    }
}
