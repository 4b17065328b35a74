//! Reading what a newer API version wrote ([`Reading::Tolerant`]): the parts
//! this build's schema does not know are set aside by
//! `aether_api::tolerant` (the one walker of the schema), and the rest is
//! decoded as ever, each value of the wrong type a problem.
//!
//! An unknown field is dropped and named: the object means the same to
//! this build without it (Kubernetes clients do as much). An unknown enum
//! value is not: the object asks for something this build cannot do, so it
//! is a problem, [`RULE_UNSUPPORTED`], and the object is left out. So is an
//! unknown field the object cannot do without: one standing where this
//! build requires a value (a new member of a oneof, `match: {template: ...}`),
//! which the validator would otherwise report as the known member missing.

use aether_api::tolerant::{Unknown, set_aside};
use aether_api::validate::Violation;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Reading;
use crate::decode::decode_reporting;
use crate::objects::Problem;
use crate::schema::RULE_UNSUPPORTED;

/// What a spec or status read gives: the value, its problems, and the
/// paths of the unknown fields set aside (empty when strict).
pub(crate) struct Read<T> {
    pub(crate) value: T,
    pub(crate) problems: Vec<Problem>,
    pub(crate) set_aside: Vec<String>,
}

/// Why an unknown part stops this build from acting on an object.
const FROM_NEWER: &str = "from a newer API version; this build cannot act on it";

/// Decodes `value` (the object's `root`, `spec` or `status`) as `reading`
/// says. `violations` gives the rules the decoded value breaks: an unknown
/// field beside a required field or oneof left unset is taken to be what
/// the object has there instead (a newer member of the oneof, a newer
/// replacement of the field), so it is unsupported, not set aside.
pub(crate) fn read<T: DeserializeOwned + Default>(
    value: &Value,
    root: &str,
    reading: Reading,
    violations: impl Fn(&T) -> Vec<Violation>,
) -> Read<T> {
    if reading == Reading::Strict {
        let (value, problems) = decode_reporting(value, root);
        return Read {
            value,
            problems,
            set_aside: Vec::new(),
        };
    }
    let mut cleaned = value.clone();
    let unknown = set_aside(&mut cleaned, root);
    let (value, decoded) = decode_reporting::<T>(&cleaned, root);
    // Where this build requires a value it did not get: a `required` field
    // or oneof (named after the oneof: `spec.routes[0].match.path`).
    let missing: Vec<String> = violations(&value)
        .into_iter()
        .filter(|v| v.rule_id == "required")
        .map(|v| v.field_path)
        .collect();
    let mut problems = Vec::new();
    let mut set_aside = Vec::new();
    for part in unknown {
        match part {
            Unknown::EnumValue { path, value } => problems.push(Problem {
                path,
                rule: RULE_UNSUPPORTED,
                message: format!("unknown value {value:?} ({FROM_NEWER})"),
            }),
            Unknown::Field { path } if missing.iter().any(|m| parent(m) == parent(&path)) => {
                problems.push(Problem {
                    path,
                    rule: RULE_UNSUPPORTED,
                    message: format!("unknown field, in place of one this build requires ({FROM_NEWER})"),
                });
            }
            Unknown::Field { path } => set_aside.push(path),
        }
    }
    problems.extend(decoded);
    Read {
        value,
        problems,
        set_aside,
    }
}

/// `spec.routes[0].match` of `spec.routes[0].match.template`.
fn parent(path: &str) -> Option<&str> {
    path.rsplit_once('.').map(|(parent, _)| parent)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::objects::{RULE_ENUM, RULE_UNKNOWN_FIELD, VirtualHostObject};
    use crate::{Limits, load_bytes};

    const NEWER: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                         spec:\n  hosts: [a.example.com]\n  mirror: svc-shadow\n  routes:\n\
                         \x20 - match: {prefix: /}\n    backend: {service: web, port: 8080}\n    timeout: 15s\n";

    fn one(text: &str, reading: Reading) -> VirtualHostObject {
        let limits = Limits {
            reading,
            ..Limits::default()
        };
        let load = load_bytes(Path::new("x.yaml"), text.as_bytes(), &limits);
        assert_eq!(load.errors, [], "{text}");
        load.objects.into_iter().next().unwrap().object
    }

    fn rules(object: &VirtualHostObject) -> Vec<(&str, &str)> {
        object.problems.iter().map(|p| (p.path.as_str(), p.rule)).collect()
    }

    #[test]
    fn strict_reading_makes_each_unknown_field_a_problem() {
        let object = one(NEWER, Reading::Strict);
        assert_eq!(
            rules(&object),
            [
                ("spec.mirror", RULE_UNKNOWN_FIELD),
                ("spec.routes[0].timeout", RULE_UNKNOWN_FIELD)
            ]
        );
        assert_eq!(object.set_aside, Vec::<String>::new());
    }

    #[test]
    fn tolerant_reading_sets_unknown_fields_aside_and_keeps_the_known_ones() {
        let object = one(NEWER, Reading::Tolerant);
        assert_eq!(object.violations(), []);
        assert_eq!(object.set_aside, ["spec.mirror", "spec.routes[0].timeout"]);
        let backend = object.spec.routes[0].backend.as_ref().unwrap();
        assert_eq!((backend.service.as_str(), backend.port), ("web", 8080));
        assert_eq!(object.spec.hosts, ["a.example.com"]);
    }

    #[test]
    fn an_unknown_enum_value_is_unsupported_naming_field_and_value() {
        let text = NEWER.replace("  mirror: svc-shadow\n", "  tls: {secretName: t, provider: VAULT}\n");
        let object = one(&text, Reading::Tolerant);
        assert_eq!(rules(&object), [("spec.tls.provider", RULE_UNSUPPORTED)]);
        assert_eq!(
            object.problems[0].to_string(),
            "spec.tls.provider: unknown value \"VAULT\" (from a newer API version; this build cannot act on it) \
             [unsupported]"
        );
        // Nothing else is said of the value left out.
        assert_eq!(object.violations(), object.problems);
        assert_eq!(rules(&one(&text, Reading::Strict))[1], ("spec.tls.provider", RULE_ENUM));
    }

    #[test]
    fn a_new_oneof_member_alone_is_unsupported_not_a_missing_known_one() {
        let text = NEWER.replace("match: {prefix: /}", "match: {template: \"/users/{id}\"}");
        let object = one(&text, Reading::Tolerant);
        assert_eq!(rules(&object), [("spec.routes[0].match.template", RULE_UNSUPPORTED)]);
        // The known members' absence is still said, after the reason for it.
        let violations: Vec<(String, &str)> = object.violations().into_iter().map(|p| (p.path, p.rule)).collect();
        assert_eq!(
            violations,
            [
                ("spec.routes[0].match.template".to_owned(), RULE_UNSUPPORTED),
                ("spec.routes[0].match.path".to_owned(), "required")
            ]
        );
        assert_eq!(object.set_aside, ["spec.mirror", "spec.routes[0].timeout"]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_still_a_problem_when_tolerant() {
        let text = NEWER.replace("port: 8080", "port: -1");
        assert_eq!(
            rules(&one(&text, Reading::Tolerant)),
            [("spec.routes[0].backend.port", crate::objects::RULE_TYPE)]
        );
    }

    #[test]
    fn a_field_has_its_parent() {
        assert_eq!(parent("spec.routes[0].match.template"), Some("spec.routes[0].match"));
        assert_eq!(parent("spec"), None);
    }
}
