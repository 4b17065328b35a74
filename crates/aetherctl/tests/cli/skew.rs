//! Version skew: manifests written against a newer proto (today's plus
//! `crates/aether-api/tests/skew/additions.txt`) read by this build's
//! `aetherctl`. `validate` lints strictly unless `--tolerant`; `project` and
//! `status` read as the controller does, `admit` as the webhook does.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::aetherctl;

fn fixture(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../aether-api/tests/skew");
    dir.join(name).display().to_string()
}

const NEW_FIELDS: &str = "a-newer-fields.yaml";
const NEW_ENUM_VALUE: &str = "b-new-enum-value.yaml";
const NEW_ONEOF_MEMBER: &str = "c-new-oneof-member.yaml";
const PLAIN: &str = "d-plain.yaml";

#[test]
fn validate_is_strict_by_default_and_names_each_unknown_field() {
    let run = aetherctl(&["validate", &fixture(NEW_FIELDS)]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("spec.mirror: unknown field"), "{}", run.stdout);
    assert!(
        run.stdout.contains("spec.routes[0].idleTimeout: unknown field"),
        "{}",
        run.stdout
    );
}

#[test]
fn validate_tolerant_passes_new_fields_and_fails_new_values_as_unsupported() {
    let run = aetherctl(&["validate", "--tolerant", &fixture(NEW_FIELDS), &fixture(PLAIN)]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = aetherctl(&["validate", "--tolerant", &fixture(NEW_ENUM_VALUE)]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("spec.tls.provider")
            && run.stdout.contains("unknown value \"VAULT\"")
            && run.stdout.contains("unsupported"),
        "{}",
        run.stdout
    );
    let run = aetherctl(&["validate", "--tolerant", &fixture(NEW_ONEOF_MEMBER)]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("spec.routes[0].match.template") && run.stdout.contains("unsupported"),
        "{}",
        run.stdout
    );
}

#[test]
fn project_leaves_objects_with_unknown_parts_out_and_serves_the_rest() {
    let all = [NEW_FIELDS, NEW_ENUM_VALUE, NEW_ONEOF_MEMBER, PLAIN].map(fixture);
    let mut args = vec!["project".to_owned(), "--format".into(), "json".into()];
    args.extend(all);
    let run = aetherctl(&args);
    assert_eq!(run.code, 0, "{run:?}");
    let snapshot: Value = serde_json::from_str(&run.stdout).unwrap();
    let left_out: Vec<(&str, &str)> = snapshot["report"]["leftOut"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["object"].as_str().unwrap(), l["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        left_out,
        [
            ("skew/new-enum-value", "unsupported"),
            ("skew/new-oneof-member", "unsupported"),
            // New spec fields may change the routing: not served.
            ("skew/newer-fields", "unsupported")
        ]
    );
    let text = run.stdout;
    assert!(text.contains("plain.example.com"), "{text}");
    assert!(
        !text.contains("newer.example.com") && !text.contains("svc-api"),
        "{text}"
    );
}

#[test]
fn status_is_unsupported_naming_field_and_value() {
    let run = aetherctl(&[
        "status",
        "--output",
        "json",
        &fixture(NEW_ENUM_VALUE),
        &fixture(NEW_FIELDS),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let condition = |name: &str| {
        let object = report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap();
        object["status"]["conditions"][0].clone()
    };
    let unsupported = condition("new-enum-value");
    assert_eq!(
        (&unsupported["status"], &unsupported["reason"]),
        (&"False".into(), &"Unsupported".into())
    );
    let message = unsupported["message"].as_str().unwrap();
    assert!(
        message.starts_with("left out: spec.tls.provider: unknown value \"VAULT\""),
        "{message}"
    );
    let newer = condition("newer-fields");
    assert_eq!(newer["reason"], "Unsupported", "{newer}");
    let message = newer["message"].as_str().unwrap();
    assert!(message.starts_with("left out: spec.mirror: unknown field"), "{message}");
}

#[test]
fn admit_reads_as_the_webhook_does_denying_only_what_it_cannot_judge() {
    let mut args = vec!["admit".to_owned(), "--output".into(), "json".into()];
    args.extend([NEW_FIELDS, NEW_ENUM_VALUE, NEW_ONEOF_MEMBER, PLAIN].map(fixture));
    let run = aetherctl(&args);
    assert_eq!(run.code, 1, "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let review = |name: &str| {
        report["reviews"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no review of {name}: {report}"))
            .clone()
    };
    // New fields: admitted, each named in a warning, as the webhook answers.
    let newer = review("newer-fields");
    assert_eq!(newer["allowed"], true, "{newer}");
    assert_eq!(
        newer["warnings"],
        serde_json::json!([
            "unknown field spec.mirror not judged (from a newer API version than this webhook's)",
            "unknown field spec.routes[0].idleTimeout not judged (from a newer API version than this webhook's)"
        ])
    );
    // What the webhook cannot judge: denied as unsupported, naming field and value.
    let prefix = "Unsupported: VirtualHost uses what this webhook cannot judge (from a newer API version): ";
    let vault = review("new-enum-value");
    assert_eq!(vault["allowed"], false);
    let message = vault["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{prefix}spec.tls.provider: unknown value \"VAULT\"")),
        "{message}"
    );
    let template = review("new-oneof-member");
    assert_eq!(template["allowed"], false);
    let message = template["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{prefix}spec.routes[0].match.template: unknown field")),
        "{message}"
    );
    let plain = review("plain");
    assert_eq!(
        (&plain["allowed"], &plain["warnings"]),
        (&true.into(), &serde_json::json!([]))
    );
}
