//! `aetherctl validate`, run for real on temporary files: every exit code,
//! both output forms, and every kind of hostile input.
//!
//! Each run is bounded in time (a hang fails the test instead of stalling
//! it) and, on Unix, in memory: the binary runs under `ulimit -v`, so an
//! input that made it allocate without bound would abort it, not pass.

mod edge_limits;

use std::ffi::OsString;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use crate::common::{Run, SIXTEEN_MIB, TIMEOUT, aetherctl, proposal, write};
use crate::paths;

fn validate(paths: &[&Path]) -> Run {
    let mut args: Vec<OsString> = vec!["validate".into()];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    aetherctl(&args)
}

fn validate_json(paths: &[&Path]) -> (Run, Value) {
    let mut args: Vec<OsString> = vec!["validate".into(), "--output".into(), "json".into()];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    let run = aetherctl(&args);
    let report = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    (run, report)
}

/// The proposal with an upper-case host and a `..` segment: two violations.
fn invalid_proposal() -> String {
    proposal()
        .replace("- api.example.com", "- API.example.com")
        .replace("prefix: /users", "prefix: /users/../admin")
}

/// Asserts that validating `file` fails with exit code 2 and an error line
/// naming the file and containing `what`, in both output forms.
fn assert_error(file: &Path, what: &str) {
    let run = validate(&[file]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let line = format!("error: {}", file.display());
    assert!(
        run.stderr.lines().any(|l| l.starts_with(&line) && l.contains(what)),
        "no `{line}...{what}` in:\n{}",
        run.stderr
    );
    let (run, report) = validate_json(&[file]);
    assert_eq!(run.code, 2);
    assert_eq!(report["valid"], false);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report}");
    assert_eq!(errors[0]["file"], file.display().to_string());
    // The same error as in text: `[document N: ][PATH: ]MESSAGE`.
    let mut rendered = String::new();
    if let Some(document) = errors[0]["document"].as_u64() {
        rendered.push_str(&format!("document {document}: "));
    }
    if let Some(path) = errors[0]["path"].as_str() {
        rendered.push_str(&format!("{path}: "));
    }
    rendered.push_str(errors[0]["message"].as_str().unwrap());
    assert!(rendered.contains(what), "{rendered}");
}

#[test]
fn a_valid_manifest_exits_0_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "proposal.yaml", proposal());
    let run = validate(&[&file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_snapshot!("valid_text", run.stdout)
    });

    let (run, report) = validate_json(&[&file]);
    assert_eq!(run.code, 0);
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_json_snapshot!("valid_json", report)
    });
}

#[test]
fn violations_exit_1_with_file_document_object_path_rule_and_message() {
    let dir = tempfile::tempdir().unwrap();
    // The invalid object is the second document, in namespace `edge`.
    let bad = invalid_proposal().replace("namespace: default", "namespace: edge");
    let file = write(dir.path(), "two.yaml", format!("{}\n---\n{bad}", proposal()));
    let run = validate(&[&file]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_snapshot!("violations_text", run.stdout)
    });

    let (run, report) = validate_json(&[&file]);
    assert_eq!(run.code, 1);
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_json_snapshot!("violations_json", report)
    });
}

#[test]
fn errors_and_violations_are_all_reported_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let broken = write(dir.path(), "a-broken.yaml", "kind: [\n");
    let invalid = write(dir.path(), "b-invalid.yaml", invalid_proposal());
    let missing = dir.path().join("missing.yaml");
    let run = validate(&[&missing, dir.path()]);
    assert_eq!(run.code, 2);
    let err: Vec<_> = run.stderr.lines().collect();
    assert_eq!(err.len(), 2, "{}", run.stderr);
    assert!(
        err[0].starts_with(&format!("error: {}: cannot read: ", missing.display())),
        "{}",
        err[0]
    );
    assert!(
        err[1].starts_with(&format!("error: {}: invalid YAML: ", broken.display())),
        "{}",
        err[1]
    );
    assert!(run.stdout.contains(&format!(
        "{}: document 0: default/api: spec.hosts[0]: ",
        invalid.display()
    )));
    assert!(
        run.stdout
            .ends_with("1 object(s): 0 valid, 1 invalid (2 violation(s)); 2 error(s)\n")
    );

    let (run, report) = validate_json(&[&missing, dir.path()]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr, "", "errors are in the JSON report");
    assert_eq!(report["valid"], false);
    let files: Vec<_> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["file"].clone())
        .collect();
    assert_eq!(files, [missing.display().to_string(), broken.display().to_string()]);
    assert_eq!(report["errors"][0]["document"], Value::Null);
    assert_eq!(report["errors"][0]["path"], Value::Null);
    assert_eq!(report["objects"][0]["violations"].as_array().unwrap().len(), 2);
}

#[test]
fn errors_and_violations_carry_document_index_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let nameless = proposal().replace("  name: api\n", "");
    let unknown = proposal()
        .replace("name: api", "name: web")
        .replace("    provider: KUBERNETES", "    provider: KUBERNETES\n    colour: blue");
    let file = write(
        dir.path(),
        "docs.yaml",
        format!("{}\n---\n{nameless}\n---\n{unknown}", proposal()),
    );
    let run = validate(&[&file]);
    assert_eq!(run.code, 2);
    // Not an object: an error.
    assert_eq!(
        run.stderr,
        format!("error: {}: document 1: metadata.name: required\n", file.display())
    );
    // An object with an unknown field: a violation of it. The valid
    // document is still checked and reported.
    assert_eq!(
        run.stdout,
        format!(
            "{0}: document 0: default/api: valid\n\
             {0}: document 2: default/web: spec.tls.colour: unknown field (the fields are provider, secretName) [unknown_field]\n\
             2 object(s): 1 valid, 1 invalid (1 violation(s)); 1 error(s)\n",
            file.display()
        )
    );

    let (_, report) = validate_json(&[&file]);
    assert_eq!(report["errors"][0]["document"], 1);
    assert_eq!(report["errors"][0]["path"], "metadata.name");
    assert_eq!(report["objects"][1]["document"], 2);
    assert_eq!(report["objects"][1]["violations"][0]["path"], "spec.tls.colour");
}

/// Asserts that validating `file` finds exactly one violation of its one
/// object, `violation` (`PATH: MESSAGE [RULE]`), in both output forms.
fn assert_violation(file: &Path, violation: &str) {
    let run = validate(&[file]);
    assert_eq!((run.code, run.stderr.as_str()), (1, ""), "{}", run.stdout);
    assert_eq!(
        run.stdout,
        format!(
            "{}: document 0: default/api: {violation}\n1 object(s): 0 valid, 1 invalid (1 violation(s)); 0 error(s)\n",
            file.display()
        )
    );
    let (_, report) = validate_json(&[file]);
    let found = &report["objects"][0]["violations"][0];
    let rendered = format!(
        "{}: {} [{}]",
        found["path"].as_str().unwrap(),
        found["message"].as_str().unwrap(),
        found["rule"].as_str().unwrap()
    );
    assert_eq!(rendered, violation);
}

#[test]
fn a_spec_field_of_the_wrong_type_is_a_violation_naming_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "type.yaml",
        proposal().replace("service: svc-health", "service: [svc]"),
    );
    assert_violation(
        &file,
        "spec.routes[1].backend.service: must be a string, got [\"svc\"] [type]",
    );
}

/// A name the API server would refuse is a violation, as the edge leaves
/// such an object out (it was reported valid).
#[test]
fn a_metadata_name_that_is_not_a_dns_subdomain_is_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "name.yaml", proposal().replace("name: api", "name: Api_1"));
    let run = validate(&[&file]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains(
            "default/Api_1: metadata.name: must be at most 253 characters of dot-separated parts of a-z, 0-9 and -, \
             each starting and ending with a letter or digit [dns1123_subdomain]"
        ),
        "{}",
        run.stdout
    );
    let file = write(
        dir.path(),
        "namespace.yaml",
        proposal().replace("namespace: default", "namespace: \"x\\\"y\""),
    );
    let run = validate(&[&file]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains(": metadata.namespace: must be 1 to 63 characters"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_match_with_both_prefix_and_exact_names_the_oneof() {
    let dir = tempfile::tempdir().unwrap();
    let both = proposal().replace("exact: /healthz", "exact: /healthz\n        prefix: /health");
    assert_ne!(both, proposal());
    let file = write(dir.path(), "both.yaml", both);
    assert_violation(
        &file,
        "spec.routes[1].match: only one of `prefix`, `exact`, `regex` may be set (oneof `path`) [decode]",
    );
}

/// A regular expression the edge's RE2 does not compile is a violation:
/// the webhook denies the object (issue 36: it was reported valid).
#[test]
fn a_regex_the_edge_cannot_compile_is_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "regex.yaml",
        proposal().replace("prefix: /users", r#"regex: "^/users/([""#),
    );
    assert_violation(
        &file,
        "spec.routes[0].match.regex: not a regular expression: unclosed character class [re2]",
    );
}

/// The checked-in examples, `invalid.yaml` aside, pass: the edge's limits
/// too (`match-regex.yaml`, `match-headers.yaml` and `match-query.yaml`
/// hold regular expressions).
#[test]
fn the_valid_examples_exit_0() {
    let mut files: Vec<_> = std::fs::read_dir(paths::examples_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.file_name().is_some_and(|name| name != "invalid.yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let files: Vec<&Path> = files.iter().map(|path| path.as_path()).collect();
    let (run, report) = validate_json(&files);
    assert_eq!((run.code, &report["valid"]), (0, &Value::Bool(true)), "{report:#}");
}

#[test]
fn a_wrong_api_version_or_kind_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let version = write(
        dir.path(),
        "v.yaml",
        proposal().replace("config.aether.io/v1", "config.aether.io/v2"),
    );
    assert_error(
        &version,
        r#"document 0: apiVersion: expected "config.aether.io/v1", found "config.aether.io/v2""#,
    );
    let kind = write(
        dir.path(),
        "k.json",
        r#"{"apiVersion": "config.aether.io/v1", "kind": "Gateway"}"#,
    );
    assert_error(&kind, r#"document 0: kind: expected "VirtualHost", found "Gateway""#);
}

#[test]
fn a_document_that_is_not_a_mapping_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "seq.yaml", "- a\n- b\n");
    assert_error(
        &file,
        "document 0: expected a mapping (a Kubernetes object), found a sequence",
    );
    let file = write(dir.path(), "scalar.yaml", format!("{}\n---\njust text\n", proposal()));
    assert_error(
        &file,
        "document 1: expected a mapping (a Kubernetes object), found a string",
    );
}

#[test]
fn an_empty_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "empty.yaml", "");
    assert_error(&file, "holds no document (empty, or only comments)");
}

#[test]
fn invalid_utf8_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = proposal().into_bytes();
    bytes.extend(b"# caf\xe9\n"); // Latin-1, not UTF-8
    let offset = bytes.len() - 2;
    let file = write(dir.path(), "latin1.yaml", bytes);
    assert_error(&file, &format!("not UTF-8: invalid byte at offset {offset}"));
}

#[test]
fn a_billion_laughs_is_stopped() {
    // 9 levels of 9 aliases: 9^9 (387 million) nodes if expanded.
    let mut yaml = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..9 {
        let aliases = vec![format!("*l{}", level - 1); 9].join(", ");
        yaml.push_str(&format!("l{level}: &l{level} [{aliases}]\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "laughs.yaml", yaml);
    let started = Instant::now();
    assert_error(&file, "invalid YAML: alias replay limit exceeded");
    assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
}

#[test]
fn deep_nesting_is_stopped_in_yaml_flow_yaml_block_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let brackets = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let flow = write(dir.path(), "flow.yaml", &brackets);
    assert_error(&flow, "invalid YAML: recursion limit exceeded");
    let json = write(dir.path(), "deep.json", &brackets);
    assert_error(&json, "invalid JSON: recursion limit exceeded");
    // Within serde_json's own bound, but beyond ours.
    let json = write(dir.path(), "65.json", format!("{}{}", "[".repeat(65), "]".repeat(65)));
    assert_error(&json, "nested deeper than 64 levels");
    let block: String = (0..10_000).map(|i| format!("{}- \n", " ".repeat(i % 2000))).collect();
    let block = write(dir.path(), "block.yaml", block);
    assert_error(&block, "nested deeper than 64 levels (at line 65");
}

#[test]
fn a_file_over_the_size_limit_is_an_error_and_one_at_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    // The proposal padded with a comment to exactly 16 MiB.
    let mut text = proposal();
    let padding = SIXTEEN_MIB - text.len() - 2;
    text.push('#');
    text.push_str(&"x".repeat(padding));
    text.push('\n');
    assert_eq!(text.len(), SIXTEEN_MIB);
    let at = write(dir.path(), "at.yaml", &text);
    let run = validate(&[&at]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with(&format!("{}: document 0: default/api: valid\n", at.display()))
    );

    text.push('\n');
    let over = write(dir.path(), "over.yaml", &text);
    assert_error(&over, "larger than the 16777216 byte limit");
}

#[test]
fn directories_are_searched_for_manifests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("nested")).unwrap();
    write(dir.path(), "a.yaml", proposal());
    write(
        &dir.path().join("nested"),
        "b.yml",
        proposal().replace("name: api", "name: web"),
    );
    write(dir.path(), "README.md", "not a manifest");
    let run = validate(&[dir.path()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_snapshot!("directories_text", run.stdout)
    });
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_error(&empty, "directory holds no .yaml, .yml or .json file");
}

#[test]
fn the_shared_fixtures_judge_as_they_say() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../aether-api/tests/fixtures");
    let (run, report) = validate_json(&[&fixtures.join("valid")]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(report["objects"].as_array().unwrap().len() >= 15);

    let (run, report) = validate_json(&[&fixtures.join("invalid")]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    for object in report["objects"].as_array().unwrap() {
        let file = object["file"].as_str().unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        let mut expected: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .map(str::to_owned)
            .collect();
        let mut found: Vec<String> = object["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| format!("{} {}", v["path"].as_str().unwrap(), v["rule"].as_str().unwrap()))
            .collect();
        expected.sort();
        found.sort();
        assert_eq!(found, expected, "{file}");
    }
}
