//! Reading a spec or status as [`Reading`] says. What a newer API version
//! wrote ([`Reading::Tolerant`]): the parts this build's schema does not
//! know are set aside by [`crate::tolerant`] (the one walker of the
//! schema), and the rest is decoded as ever, each value of the wrong type a
//! problem.
//!
//! An unknown enum value is [`RULE_UNSUPPORTED`]: the object asks for
//! something this build cannot do, so it is left out. An unknown field is
//! dropped and named (Kubernetes clients do as much), unless the object
//! cannot be read without it; exactly (see [`read`]): an unknown field is
//! unsupported when the object holding it, once the unknown parts are set
//! aside, breaks a `required` rule of its own (one of its fields, or one of
//! its oneofs, is required and unset; or none of the fields of its required
//! message oneof rule is set), other than one only a set-aside enum
//! value explains.
//!
//! Why that rule: a newer API server admitted the object under the newer
//! schema, so whatever this build requires there and does not find was
//! given in a form this build does not know: a new member of a oneof
//! (`match: {template: ...}`), a new field of a required message oneof
//! rule (a route whose only destination is of a newer kind), or a newer
//! alternative to a field the newer proto no longer requires. Reading on without the unknown field would
//! report the object as breaking a rule its writer never broke. A
//! hand-written manifest that both misses a required field and holds an
//! unknown field beside it is therefore reported unsupported (the
//! `required` violation is still listed after it); one whose unknown field
//! sits in another object than the missing one is invalid, the field set
//! aside. The rule reads only this build's schema and rules, never guesses
//! from names: the table in the tests lists every case.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::decode::decode_owned_reporting;
use super::{RULE_UNSUPPORTED, Reading};
use crate::tolerant::{Unknown, set_aside};
use crate::validate::{MAX_PROBLEMS, RULE_MAX_ITEMS, Violation, capped};

/// How the last of [`super::VirtualHostObject::set_aside`] begins
/// when it counts the unknown fields beyond the first [`MAX_PROBLEMS`]
/// (`(and 5 more)`) rather than naming one.
pub const SET_ASIDE_MORE: &str = "(and ";

/// What a spec or status read gives: the value, its problems, and the
/// paths of the unknown fields set aside (empty when strict).
pub(super) struct Read<T> {
    pub(super) value: T,
    pub(super) problems: Vec<Violation>,
    pub(super) set_aside: Vec<String>,
}

/// Why an unknown part stops this build from acting on an object.
const FROM_NEWER: &str = "from a newer API version; this build cannot act on it";

/// Decodes `value` (the object's `root`, `spec` or `status`; taken, not
/// copied: a JSON tree costs up to 230 bytes a node, and a copy as much
/// again) as `reading` says. `violations` gives the rules the decoded value
/// breaks: it decides which unknown fields are unsupported (see the
/// module's rule).
pub(super) fn read<T: DeserializeOwned + Default>(
    value: Value,
    root: &str,
    reading: Reading,
    violations: impl Fn(&T) -> Vec<Violation>,
) -> Read<T> {
    // Lists above their schema's `maxItems` are cut first, each a problem:
    // decoded whole, 1.2 million empty routes took 630 MB.
    let (value, long) = match crate::tolerant::cut_long_lists(&value, root) {
        Some((cut, long)) => (cut, long),
        None => (value, Vec::new()),
    };
    let mut read = read_cut(value, root, reading, violations);
    if !long.is_empty() {
        let mut problems: Vec<Violation> = long
            .iter()
            .map(|list| Violation {
                field_path: list.path.clone(),
                rule_id: RULE_MAX_ITEMS,
                // The validator's words, and what was found.
                message: format!(
                    "must contain no more than {} item(s) (found {}; only the first {} were read)",
                    list.max, list.found, list.max
                )
                .into(),
            })
            .collect();
        problems.append(&mut read.problems);
        read.problems = capped(problems);
    }
    read
}

/// [`read`] of a value whose lists are within their `maxItems`.
fn read_cut<T: DeserializeOwned + Default>(
    value: Value,
    root: &str,
    reading: Reading,
    violations: impl Fn(&T) -> Vec<Violation>,
) -> Read<T> {
    if reading == Reading::Strict {
        let (value, problems) = decode_owned_reporting(value, root);
        return Read {
            value,
            problems,
            set_aside: Vec::new(),
        };
    }
    let mut cleaned = value;
    let unknown = set_aside(&mut cleaned, root);
    let (value, decoded) = decode_owned_reporting::<T>(cleaned, root);
    // Sets, not lists: each unknown part is looked up in them, and a body
    // of a million unknown fields made that a million times a million.
    let dropped_values: HashSet<&str> = unknown
        .iter()
        .filter(|part| matches!(part, Unknown::EnumValue { .. }))
        .map(Unknown::path)
        .collect();
    // The objects missing a required field or oneof of their own (a
    // oneof's violation is named after it: `spec.routes[0].match.path`; a
    // message oneof rule's after the object: `spec.routes[0]`).
    let incomplete: HashSet<String> = violations(&value)
        .into_iter()
        .filter(|v| !dropped_values.contains(&v.field_path.as_str()))
        .filter_map(|v| missing_in(&v).map(str::to_owned))
        .collect();
    let mut problems = Vec::new();
    let mut set_aside = Vec::new();
    let mut more_set_aside = 0usize;
    for part in unknown {
        match part {
            Unknown::EnumValue { path, value } => problems.push(Violation::new(
                path,
                RULE_UNSUPPORTED,
                format!("unknown value {value:?} ({FROM_NEWER})"),
            )),
            Unknown::Field { .. } if incomplete.contains(part.parent()) => {
                problems.push(Violation::new(
                    part.path(),
                    RULE_UNSUPPORTED,
                    format!("unknown field, in place of one this build requires ({FROM_NEWER})"),
                ));
            }
            Unknown::Field { path, .. } if set_aside.len() < MAX_PROBLEMS => set_aside.push(path),
            Unknown::Field { .. } => more_set_aside += 1,
        }
    }
    // Named as many as the problems are, the rest counted: they are logged
    // and answered as warnings, one line each.
    if more_set_aside > 0 {
        set_aside.push(format!("{SET_ASIDE_MORE}{more_set_aside} more)"));
    }
    problems.extend(decoded);
    Read {
        value,
        problems: capped(problems),
        set_aside,
    }
}

/// The object a violation says misses a required field or oneof: the
/// holder of a `required` field or oneof, or the object of a required
/// message oneof rule (`(buf.validate.message).oneof`) none of whose fields
/// is set. That rule's message says which: protovalidate's "one of a, b
/// must be set" for none, "only one of a, b can be set" for two or more
/// (two set is no field missing).
fn missing_in(violation: &Violation) -> Option<&str> {
    match violation.rule_id {
        "required" => holder(&violation.field_path),
        "message.oneof" if violation.message.ends_with("must be set") => Some(&violation.field_path),
        _ => None,
    }
}

/// The object holding the field or oneof a validator violation names:
/// `spec.routes[0].match` of `spec.routes[0].match.path`. Field and oneof
/// names are proto identifiers (no dot, no bracket), so the last dot
/// splits them off; `None` for a path that does not end in a name (a list
/// item), which no `required` rule reports.
fn holder(path: &str) -> Option<&str> {
    let (holder, name) = path.rsplit_once('.')?;
    name.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        .then_some(holder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::schema::{RULE_ENUM, RULE_TYPE, RULE_UNKNOWN_FIELD};
    use crate::object::{Judged, VirtualHostObject};

    const NEWER: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                         spec:\n  hosts: [a.example.com]\n  mirror: svc-shadow\n  routes:\n\
                         \x20 - match: {prefix: /}\n    backend: {service: web, port: 8080}\n    idleTimeout: 15s\n";

    fn one(text: &str, reading: Reading) -> VirtualHostObject {
        let value: Value = serde_saphyr::from_str(text).unwrap();
        VirtualHostObject::from_value(value, reading).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn rules(object: &VirtualHostObject) -> Vec<(&str, &str)> {
        object
            .read_problems
            .iter()
            .map(|p| (p.field_path.as_str(), p.rule_id))
            .collect()
    }

    #[test]
    fn strict_reading_makes_each_unknown_field_a_problem() {
        let object = one(NEWER, Reading::Strict);
        assert_eq!(
            rules(&object),
            [
                ("spec.mirror", RULE_UNKNOWN_FIELD),
                ("spec.routes[0].idleTimeout", RULE_UNKNOWN_FIELD)
            ]
        );
        assert_eq!(object.set_aside, Vec::<String>::new());
    }

    #[test]
    fn tolerant_reading_sets_unknown_fields_aside_and_keeps_the_known_ones() {
        let object = one(NEWER, Reading::Tolerant);
        assert_eq!(object.problems(Judged::Whole), []);
        assert_eq!(object.set_aside, ["spec.mirror", "spec.routes[0].idleTimeout"]);
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
            object.read_problems[0].to_string(),
            "spec.tls.provider: unknown value \"VAULT\" (from a newer API version; this build cannot act on it) \
             [unsupported]"
        );
        // Nothing else is said of the value left out.
        assert_eq!(object.problems(Judged::Whole), object.read_problems);
        assert_eq!(rules(&one(&text, Reading::Strict))[1], ("spec.tls.provider", RULE_ENUM));
    }

    #[test]
    fn a_new_oneof_member_alone_is_unsupported_not_a_missing_known_one() {
        let text = NEWER.replace("match: {prefix: /}", "match: {template: \"/users/{id}\"}");
        let object = one(&text, Reading::Tolerant);
        assert_eq!(rules(&object), [("spec.routes[0].match.template", RULE_UNSUPPORTED)]);
        // The known members' absence is still said, after the reason for it.
        let violations: Vec<(String, &str)> = object
            .problems(Judged::Whole)
            .into_iter()
            .map(|p| (p.field_path, p.rule_id))
            .collect();
        assert_eq!(
            violations,
            [
                ("spec.routes[0].match.template".to_owned(), RULE_UNSUPPORTED),
                ("spec.routes[0].match.path".to_owned(), "required")
            ]
        );
        assert_eq!(object.set_aside, ["spec.mirror", "spec.routes[0].idleTimeout"]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_still_a_problem_when_tolerant() {
        let text = NEWER.replace("port: 8080", "port: -1");
        assert_eq!(
            rules(&one(&text, Reading::Tolerant)),
            [("spec.routes[0].backend.port", RULE_TYPE)]
        );
    }

    #[test]
    fn a_violation_names_the_object_holding_its_field() {
        assert_eq!(holder("spec.routes[0].match.path"), Some("spec.routes[0].match"));
        assert_eq!(holder("spec.hosts"), Some("spec"));
        assert_eq!(holder("spec.hosts[0]"), None);
        assert_eq!(holder("spec"), None);
    }

    /// The rule, case by case: a route (`ROUTE` with `MATCH` and `BACKEND`
    /// filled in, in the flow form) read tolerantly, and the unsupported
    /// paths, the set-aside ones and the other rules broken.
    #[test]
    fn which_unknown_fields_are_unsupported() {
        struct Case {
            what: &'static str,
            route: &'static str,
            tls: &'static str,
            unsupported: &'static [&'static str],
            set_aside: &'static [&'static str],
            other: &'static [(&'static str, &'static str)],
        }
        let no_tls = "";
        let cases = [
            Case {
                what: "a new oneof member alone: the required oneof is unset",
                route: "{match: {template: x}, backend: {service: web}}",
                tls: no_tls,
                unsupported: &["spec.routes[0].match.template"],
                set_aside: &[],
                other: &[("spec.routes[0].match.path", "required")],
            },
            Case {
                what: "a new field beside a set oneof member",
                route: "{match: {prefix: /, ignoreCase: true}, backend: {service: web}}",
                tls: no_tls,
                unsupported: &[],
                set_aside: &["spec.routes[0].match.ignoreCase"],
                other: &[],
            },
            Case {
                what: "a new field where a required field of the same object is unset",
                route: "{match: {prefix: /}, backend: {serviceRef: {name: web}}}",
                tls: no_tls,
                unsupported: &["spec.routes[0].backend.serviceRef"],
                set_aside: &[],
                other: &[("spec.routes[0].backend.service", "required")],
            },
            Case {
                what: "a new field beside a set required field",
                route: "{match: {prefix: /}, backend: {service: web, weight: 3}}",
                tls: no_tls,
                unsupported: &[],
                set_aside: &["spec.routes[0].backend.weight"],
                other: &[],
            },
            Case {
                what: "a new field where a required message of the same object is unset",
                route: "{matchAll: {prefix: /}, backend: {service: web}}",
                tls: no_tls,
                unsupported: &["spec.routes[0].matchAll"],
                set_aside: &[],
                other: &[("spec.routes[0].match", "required")],
            },
            Case {
                what: "a new field where none of a required message oneof's fields is set",
                route: "{match: {prefix: /}, forward: {host: b.example.com}}",
                tls: no_tls,
                unsupported: &["spec.routes[0].forward"],
                set_aside: &[],
                // The route's own rule is not listed: a problem inside it says more.
                other: &[],
            },
            Case {
                what: "a new field where two of a message oneof's fields are set: invalid, the field set aside",
                route: "{match: {prefix: /}, backend: {service: web}, redirect: {}, forward: {host: b.example.com}}",
                tls: no_tls,
                unsupported: &[],
                set_aside: &["spec.routes[0].forward"],
                other: &[("spec.routes[0]", "message.oneof")],
            },
            Case {
                what: "a new field in another object than the one missing a field: invalid, the field set aside",
                route: "{match: {prefix: /}, backend: {port: 80}, idleTimeout: 15s}",
                tls: no_tls,
                unsupported: &[],
                set_aside: &["spec.routes[0].idleTimeout"],
                other: &[("spec.routes[0].backend.service", "required")],
            },
            Case {
                what: "a new field whose name holds dots, where a required field is unset",
                route: "{match: {prefix: /}, backend: {example.com/service: web}}",
                tls: no_tls,
                unsupported: &["spec.routes[0].backend.example.com/service"],
                set_aside: &[],
                other: &[("spec.routes[0].backend.service", "required")],
            },
            Case {
                what: "a new enum value: unsupported; a new field beside it is set aside",
                route: "{match: {prefix: /}, backend: {service: web}}",
                tls: "  tls: {secretName: t, provider: VAULT, minVersion: '1.3'}\n",
                unsupported: &["spec.tls.provider"],
                set_aside: &["spec.tls.minVersion"],
                other: &[],
            },
        ];
        for case in cases {
            let text = format!(
                "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: a}}\n\
                 spec:\n  hosts: [a.example.com]\n  routes: [{}]\n{}",
                case.route, case.tls
            );
            let object = one(&text, Reading::Tolerant);
            let unsupported: Vec<&str> = object
                .read_problems
                .iter()
                .filter(|p| p.rule_id == RULE_UNSUPPORTED)
                .map(|p| p.field_path.as_str())
                .collect();
            assert_eq!(unsupported, case.unsupported, "{}", case.what);
            assert_eq!(object.set_aside, case.set_aside, "{}", case.what);
            let other: Vec<(String, &str)> = object
                .problems(Judged::Whole)
                .into_iter()
                .filter(|p| p.rule_id != RULE_UNSUPPORTED)
                .map(|p| (p.field_path, p.rule_id))
                .collect();
            let expected: Vec<(String, &str)> = case.other.iter().map(|(p, r)| ((*p).to_owned(), *r)).collect();
            assert_eq!(other, expected, "{}", case.what);
        }
    }
}
