//! `aether-conditions`: the names conditions carry, for the values of each
//! enum the proto marks [`CONDITION_NAMES_OPTION`](crate::rules::CONDITION_NAMES_OPTION).
//!
//! A condition's `type` and `reason` are strings (another owner's condition
//! must read too), so no field holds these enums; they are where the proto
//! writes each type and reason once, with its meaning. Each gets
//! `condition_name` (`AcceptedReason::HostConflict` is `"HostConflict"`)
//! and `from_condition_name`, so the controller spells none of them.

use std::fmt::Write as _;

use anyhow::{Context, Result, ensure};
use heck::ToUpperCamelCase;

use super::RUST_HEADER;
use crate::rules::{Api, Enum};

pub fn generate(api: &Api) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for package in super::messages_by_package(api).into_keys() {
        let mut code = String::new();
        for enumeration in api.enums.iter().filter(|e| e.condition_names) {
            let Some(name) = enumeration.full_name.strip_prefix(&format!("{package}.")) else {
                continue;
            };
            ensure!(
                !name.contains('.'),
                "{}: a nested enum marked condition_names is not supported (prost puts it in a module)",
                enumeration.full_name
            );
            code.push_str(&names_impl(name, enumeration).with_context(|| enumeration.full_name.clone())?);
        }
        let parsed =
            syn::parse_file(&code).with_context(|| format!("parsing the generated condition names:\n{code}"))?;
        files.push((
            format!("{package}.conditions.rs"),
            format!("{RUST_HEADER}{}", prettyplease::unparse(&parsed)).into_bytes(),
        ));
    }
    Ok(files)
}

/// `condition_name` and `from_condition_name` for enum `name`.
fn names_impl(name: &str, enumeration: &Enum) -> Result<String> {
    let mut to_name = String::new();
    let mut from_name = String::new();
    for (value, number, _) in &enumeration.values {
        // prost's variant: the value without the enum's prefix, in UpperCamelCase.
        let short = crate::rules::names::short_value_name(name, value)
            .with_context(|| format!("{value} lacks the prefix of {name}"))?;
        let variant = short.to_upper_camel_case();
        match enumeration.condition_name(value, *number) {
            Some(condition) => {
                writeln!(to_name, "Self::{variant} => {condition:?},")?;
                writeln!(from_name, "{condition:?} => Some(Self::{variant}),")?;
            }
            None => writeln!(to_name, "Self::{variant} => \"\",")?,
        }
    }
    Ok(format!(
        "impl {name} {{
            /// The name a condition carries for this value; empty for the zero value.
            pub const fn condition_name(self) -> &'static str {{
                match self {{ {to_name} }}
            }}
            /// The value a condition's name stands for; `None` for any other name.
            pub fn from_condition_name(name: &str) -> Option<Self> {{
                match name {{ {from_name} _ => None, }}
            }}
        }}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated(body: &str) -> Result<String> {
        let files = generate(&crate::generators::scratch_api(body)?)?;
        let (_, code) = files.into_iter().find(|(name, _)| name == "t.conditions.rs").unwrap();
        Ok(String::from_utf8(code).unwrap())
    }

    #[test]
    fn a_marked_enum_names_each_value_in_upper_camel_case() {
        let code = generated(
            "message Status { string reason = 1; }
             enum ColdReason { option (aether.config.v1.condition_names) = true;
               COLD_REASON_UNSPECIFIED = 0; COLD_REASON_NO_ENVOY = 1; COLD_REASON_INVALID_CERTIFICATE_REF = 2; }",
        )
        .unwrap();
        assert!(code.contains("impl ColdReason"), "{code}");
        assert!(code.contains(r#"Self::NoEnvoy => "NoEnvoy""#), "{code}");
        assert!(
            code.contains(r#""InvalidCertificateRef" => Some(Self::InvalidCertificateRef)"#),
            "{code}"
        );
        assert!(code.contains(r#"Self::Unspecified => """#), "{code}");
    }

    #[test]
    fn an_unmarked_enum_gets_no_names() {
        let code = generated(
            "message Status { Color color = 1; }
             enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; }",
        )
        .unwrap();
        assert!(!code.contains("impl"), "{code}");
    }
}
