//! The `aetherctl` binary, run for real on temporary files: every exit code,
//! both output forms, and every kind of hostile input.
//!
//! Each run is bounded in time (a hang fails the test instead of stalling
//! it) and, on Unix, in memory: the binary runs under `ulimit -v`, so an
//! input that made it allocate without bound would abort it, not pass.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{Run, SIXTEEN_MIB, TIMEOUT, aetherctl, proposal, write};
use serde_json::Value;

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
    assert_eq!(
        run.stdout,
        format!(
            "{}: document 0: default/api: valid\n1 object(s): 1 valid, 0 invalid (0 violation(s)); 0 error(s)\n",
            file.display()
        )
    );
    assert_eq!(run.stderr, "");

    let (run, report) = validate_json(&[&file]);
    assert_eq!(run.code, 0);
    assert_eq!(
        report,
        serde_json::json!({
            "valid": true,
            "objects": [{"file": file.display().to_string(), "document": 0, "namespace": "default", "name": "api", "violations": []}],
            "errors": [],
            "skipped": [],
        })
    );
}

#[test]
fn violations_exit_1_with_file_document_object_path_rule_and_message() {
    let dir = tempfile::tempdir().unwrap();
    // The invalid object is the second document, in namespace `edge`.
    let bad = invalid_proposal().replace("namespace: default", "namespace: edge");
    let file = write(dir.path(), "two.yaml", format!("{}\n---\n{bad}", proposal()));
    let run = validate(&[&file]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = file.display();
    let lines: Vec<_> = run.stdout.lines().collect();
    assert_eq!(lines[0], format!("{f}: document 0: default/api: valid"));
    assert!(
        lines[1].starts_with(&format!(
            "{f}: document 1: edge/api: spec.hosts[0]: does not match regex pattern"
        )),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(" [string.pattern]"), "{}", lines[1]);
    assert_eq!(
        lines[2],
        format!(
            "{f}: document 1: edge/api: spec.routes[0].match.prefix: \
             must not contain a dot segment (/./ or /../, or end in /. or /..) [path.no_dot_segment]"
        )
    );
    assert_eq!(lines[3], "2 object(s): 1 valid, 1 invalid (2 violation(s)); 0 error(s)");
    assert_eq!(lines.len(), 4);
    assert_eq!(run.stderr, "");

    let (run, report) = validate_json(&[&file]);
    assert_eq!(run.code, 1);
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"], serde_json::json!([]));
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["violations"], serde_json::json!([]));
    let invalid = &objects[1];
    assert_eq!(invalid["file"], f.to_string());
    assert_eq!(invalid["document"], 1);
    assert_eq!(invalid["namespace"], "edge");
    assert_eq!(invalid["name"], "api");
    let violations = invalid["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 2);
    assert_eq!(violations[0]["path"], "spec.hosts[0]");
    assert_eq!(violations[0]["rule"], "string.pattern");
    assert!(
        violations[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("does not match regex pattern")
    );
    assert_eq!(
        violations[1],
        serde_json::json!({
            "path": "spec.routes[0].match.prefix",
            "rule": "path.no_dot_segment",
            "message": "must not contain a dot segment (/./ or /../, or end in /. or /..)",
        })
    );
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
    let a = write(dir.path(), "a.yaml", proposal());
    let b = write(
        &dir.path().join("nested"),
        "b.yml",
        proposal().replace("name: api", "name: web"),
    );
    write(dir.path(), "README.md", "not a manifest");
    let run = validate(&[dir.path()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "{}: document 0: default/api: valid\n{}: document 0: default/web: valid\n\
             2 object(s): 2 valid, 0 invalid (0 violation(s)); 0 error(s)\n",
            a.display(),
            b.display()
        )
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_error(&empty, "directory holds no .yaml, .yml or .json file");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["validate"][..],
        &["validate", "--output", "xml", "x.yaml"][..],
        &["frobnicate"][..],
        &["crd", "extra"][..],
    ] {
        let run = aetherctl(args);
        assert_eq!(run.code, 2, "{args:?}");
        // clap's own message: the help, or the error and how to get help.
        assert!(
            run.stderr.contains("Usage: aetherctl") || run.stderr.contains("For more information, try '--help'"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{args:?}");
    }
    let run = aetherctl(&["validate", "--output", "xml", "x.yaml"]);
    assert!(
        run.stderr.contains("invalid value 'xml' for '--output <OUTPUT>'"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_documents_exit_codes_limits_and_the_json_shape() {
    let run = aetherctl(&["validate", "--help"]);
    assert_eq!(run.code, 0);
    for needle in [
        "Exit codes:",
        "2  a usage, I/O or parse error",
        "file size             16777216 bytes",
        "nesting depth         64 levels",
        "alias expansion       100000 nodes",
        "\"errors\": [{\"file\", \"document\": number|null",
    ] {
        assert!(run.stdout.contains(needle), "no {needle:?} in:\n{}", run.stdout);
    }
}

#[test]
fn crd_prints_the_generated_crd() {
    let run = aetherctl(&["crd"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, aether_api::CRD_YAML);
    assert!(run.stdout.contains("name: virtualhosts.config.aether.io"));
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

fn project_json(paths: &[&Path]) -> (Run, Value) {
    let mut args: Vec<OsString> = vec!["project".into(), "--format".into(), "json".into()];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    let run = aetherctl(&args);
    let snapshot = if run.code == 0 {
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
    } else {
        Value::Null
    };
    (run, snapshot)
}

#[test]
fn project_prints_the_snapshot_of_the_examples_with_their_conflicts() {
    let examples = examples_dir();
    let (run, snapshot) = project_json(&[&examples]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hosts: Vec<&str> = snapshot["routeConfiguration"]["virtualHosts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|vh| vh["domains"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()))
        .collect();
    let mut unique = hosts.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), hosts.len(), "a domain served twice: {hosts:?}");
    assert!(hosts.contains(&"api.example.com"));
    let conflicts = snapshot["report"]["conflicts"].as_array().unwrap();
    assert!(
        conflicts
            .iter()
            .any(|c| c["host"] == "api.example.com" && c["winner"] == "default/api"),
        "{conflicts:?}"
    );
    let left_out = snapshot["report"]["leftOut"].as_array().unwrap();
    assert!(left_out.iter().any(|o| o["reason"] == "invalid"), "{left_out:?}");
    // `routeOrder: SPECIFICITY`: the routes in the order the edge tries them.
    let docs = snapshot["routeConfiguration"]["virtualHosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|vh| vh["name"] == "default/docs")
        .expect("examples/route-order.yaml is projected");
    let order: Vec<&str> = docs["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|route| route["route"]["cluster"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["svc-docs-index", "svc-docs-versioned", "svc-docs", "svc-web"]);

    // YAML carries the same snapshot.
    let yaml = aetherctl(&["project".into(), examples.as_os_str().to_owned()]);
    assert_eq!(yaml.code, 0);
    let from_yaml: Value = serde_saphyr::from_str(&yaml.stdout).unwrap();
    assert_eq!(from_yaml, snapshot);
}

#[test]
fn project_prints_nothing_and_exits_2_when_an_input_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.yaml", proposal());
    let broken = write(
        dir.path(),
        "broken.yaml",
        "apiVersion: config.aether.io/v1\nspec: [unclosed",
    );
    let (run, _) = project_json(&[&good, &broken]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with(&format!("error: {}: invalid YAML: ", broken.display())),
        "{}",
        run.stderr
    );

    // A malformed timestamp is the object's problem, not the input's.
    let stamped = proposal().replace(
        "  namespace: default\n",
        "  namespace: default\n  creationTimestamp: yesterday\n",
    );
    let bad_time = write(dir.path(), "bad-time.yaml", stamped);
    let (run, snapshot) = project_json(&[&bad_time]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let problem = &snapshot["report"]["leftOut"][0]["problems"][0];
    assert_eq!(problem["fieldPath"], "metadata.creationTimestamp");
    assert!(
        problem["message"]
            .as_str()
            .unwrap()
            .starts_with("must be an RFC 3339 date-time, got \"yesterday\""),
        "{problem}"
    );

    let twice = write(dir.path(), "twice.yaml", format!("{}---\n{}", proposal(), proposal()));
    let (run, _) = project_json(&[&twice]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("default/api"), "{}", run.stderr);
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// How a report line starts for document `document` of `examples/file`.
fn at(file: &str, document: usize, key: &str) -> String {
    format!("{}: document {document}: {key}", examples_dir().join(file).display())
}

#[test]
fn admit_on_the_examples_admits_denies_and_warns_as_the_webhook_would() {
    let examples = examples_dir();
    let stored = examples.join("proposal.yaml");
    let run = aetherctl(&[
        "admit".into(),
        "--stored".into(),
        stored.clone().into_os_string(),
        examples.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    for expected in [
        // The stored object itself: an update that keeps its own hosts.
        format!("{}: UPDATE admitted\n", at("proposal.yaml", 0, "default/api")),
        format!("{}: CREATE admitted\n", at("storefront.yaml", 0, "shop/storefront")),
        // Admitted objects are stored before the next is reviewed.
        format!(
            "{}: CREATE denied: VirtualHost shop/storefront-canary conflicts: host \"shop.example.com\" is already claimed by VirtualHost shop/storefront\n",
            at("storefront.yaml", 1, "shop/storefront-canary")
        ),
        format!(
            "{}: CREATE admitted with a warning: wildcard overlap: host \"*.example.com\" overlaps \"api.example.com\" of VirtualHost default/api\n",
            at("tenants.yaml", 0, "platform/tenants")
        ),
        format!(
            "{}: CREATE denied: VirtualHost legacy/legacy-api conflicts: host \"api.example.com\" is already claimed by VirtualHost default/api\n",
            at("tenants.yaml", 1, "legacy/legacy-api")
        ),
        format!(
            "{}: CREATE denied: VirtualHost is invalid: 2 validation errors:\n",
            at("invalid.yaml", 0, "sandbox/broken")
        ),
        "  - spec.routes[0].match.prefix: must not contain an empty path segment (//) [path.no_empty_segment]\n"
            .to_owned(),
        // The matching examples, each admitted.
        format!("{}: CREATE admitted\n", at("match-headers.yaml", 0, "default/canary")),
        format!("{}: CREATE admitted\n", at("route-order.yaml", 0, "default/docs")),
        // The action examples, each admitted.
        format!("{}: CREATE admitted\n", at("action-weights.yaml", 0, "default/weights")),
        format!(
            "{}: CREATE admitted\n",
            at("action-timeouts-retries.yaml", 0, "default/timeouts")
        ),
    ] {
        assert!(run.stdout.contains(&expected), "no {expected:?} in:\n{}", run.stdout);
    }
    assert!(
        run.stdout.ends_with("16 object(s): 13 admitted, 3 denied\n"),
        "{}",
        run.stdout
    );

    // Without the stored object, the legacy claim on api.example.com comes
    // after the proposal's own CREATE in file order: still denied, now as
    // the second claim of this run.
    let run = aetherctl(&["admit".into(), examples.clone().into_os_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains(&format!("{}: CREATE admitted\n", at("proposal.yaml", 0, "default/api"))),
        "{}",
        run.stdout
    );
    let legacy = format!(
        "{}: CREATE denied: VirtualHost legacy/legacy-api conflicts: host \"api.example.com\" is already claimed by VirtualHost default/api\n",
        at("tenants.yaml", 1, "legacy/legacy-api")
    );
    assert!(run.stdout.contains(&legacy), "{}", run.stdout);
}

#[test]
fn admit_exits_0_when_everything_is_admitted_and_reports_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "api.yaml", proposal());
    let run = aetherctl(&["admit".into(), file.clone().into_os_string()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "{}: document 0: default/api: CREATE admitted\n1 object(s): 1 admitted, 0 denied\n",
            file.display()
        )
    );

    // A second object claiming the same host in another namespace, and an
    // update of the stored one that takes a host the other holds.
    let rival = proposal().replace("namespace: default", "namespace: rival");
    let rival_file = write(dir.path(), "rival.yaml", &rival);
    let stored = write(
        dir.path(),
        "stored.yaml",
        proposal().replace("api.example.com", "web.example.com"),
    );
    let run = aetherctl(&[
        "admit".into(),
        "--output".into(),
        "json".into(),
        "--stored".into(),
        stored.into_os_string(),
        file.clone().into_os_string(),
        rival_file.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["admitted"], false);
    assert_eq!(report["errors"], serde_json::json!([]));
    let reviews = report["reviews"].as_array().unwrap();
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[0]["operation"], "UPDATE");
    assert_eq!(reviews[0]["allowed"], true);
    assert_eq!(reviews[0]["message"], Value::Null);
    assert_eq!(reviews[0]["warnings"], serde_json::json!([]));
    assert_eq!(reviews[1]["file"], rival_file.display().to_string());
    assert_eq!(
        (reviews[1]["namespace"].as_str(), reviews[1]["name"].as_str()),
        (Some("rival"), Some("api"))
    );
    assert_eq!(reviews[1]["operation"], "CREATE");
    assert_eq!(reviews[1]["allowed"], false);
    assert_eq!(
        reviews[1]["message"],
        "VirtualHost rival/api conflicts: host \"api.example.com\" is already claimed by VirtualHost default/api"
    );
}

#[test]
fn admit_reviews_nothing_and_exits_2_when_an_input_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.yaml", proposal());
    let broken = write(dir.path(), "broken.yaml", "spec: [");
    for args in [
        vec![
            "admit".into(),
            "--stored".into(),
            broken.clone().into_os_string(),
            good.clone().into_os_string(),
        ],
        vec![
            "admit".into(),
            good.clone().into_os_string(),
            broken.clone().into_os_string(),
        ],
    ] {
        let run = aetherctl(&args);
        assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout, "");
        assert!(
            run.stderr.starts_with(&format!("error: {}", broken.display())),
            "{}",
            run.stderr
        );
    }
    let run = aetherctl(&[
        "admit".into(),
        "-o".into(),
        "json".into(),
        broken.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 2);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["reviews"], serde_json::json!([]));
    assert_eq!(report["errors"][0]["file"], broken.display().to_string());
}

#[test]
fn status_on_the_examples_says_what_the_controller_would_write() {
    let examples = examples_dir();
    let run = aetherctl(&["status".into(), examples.clone().into_os_string()]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    for expected in [
        format!(
            "{}: Accepted=True (Accepted), 3 route(s): serving api.example.com [would patch]\n",
            at("proposal.yaml", 0, "default/api")
        ),
        format!(
            "{}: Accepted=False (HostConflict), 0 route(s): left out: host shop.example.com is served by the older VirtualHost shop/storefront [would patch]\n",
            at("storefront.yaml", 1, "shop/storefront-canary")
        ),
        format!(
            "{}: Accepted=True (HostConflict), 2 route(s): host api.example.com is served by the older VirtualHost default/api; still serving legacy.example.com [would patch]\n",
            at("tenants.yaml", 1, "legacy/legacy-api")
        ),
        format!(
            "{}: Accepted=False (Invalid), 0 route(s): left out: spec.hosts[0]: ",
            at("invalid.yaml", 0, "sandbox/broken")
        ),
    ] {
        assert!(run.stdout.contains(&expected), "no {expected:?} in:\n{}", run.stdout);
    }
    assert!(
        run.stdout.ends_with("16 object(s): 13 fully served, 3 not\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn status_compares_with_the_stored_status_and_keeps_its_transition_time() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = proposal().replace("  namespace: default\n", "  namespace: default\n  generation: 4\n");
    assert_ne!(manifest, proposal());
    let file = write(dir.path(), "api.yaml", &manifest);
    let run = aetherctl(&[
        "status".into(),
        "-o".into(),
        "json".into(),
        file.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["served"], true);
    let object = &report["objects"][0];
    assert_eq!(object["wouldPatch"], true, "the manifest has no status");
    let status = object["status"].clone();
    assert_eq!(status["routeCount"], 3);
    let condition = &status["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"],
            &condition["observedGeneration"]
        ),
        (
            &Value::from("Accepted"),
            &Value::from("True"),
            &Value::from("Accepted"),
            &Value::from(4)
        )
    );

    // Stored as computed, an hour earlier: nothing to patch, and the stored
    // transition time stays.
    let mut stored = status.clone();
    stored["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z".into();
    let with_status = format!("{manifest}status: {stored}\n");
    let file = write(dir.path(), "api.yaml", &with_status);
    let run = aetherctl(&[
        "status".into(),
        "-o".into(),
        "json".into(),
        file.clone().into_os_string(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["objects"][0]["wouldPatch"], false, "{report}");
    assert_eq!(report["objects"][0]["status"], stored);
    let text = aetherctl(&["status".into(), file.clone().into_os_string()]);
    assert_eq!(
        text.stdout,
        format!(
            "{}: document 0: default/api: Accepted=True (Accepted), 3 route(s): serving api.example.com\n1 object(s): 1 fully served, 0 not\n",
            file.display()
        )
    );

    // A stale stored status (an older generation) is patched.
    let file = write(
        dir.path(),
        "api.yaml",
        with_status.replace("generation: 4", "generation: 5"),
    );
    let run = aetherctl(&["status".into(), "-o".into(), "json".into(), file.into_os_string()]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["objects"][0]["wouldPatch"], true);
    assert_eq!(report["objects"][0]["status"]["conditions"][0]["observedGeneration"], 5);
    assert_eq!(
        report["objects"][0]["status"]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z",
        "Accepted did not flip"
    );
}

#[test]
fn status_computes_nothing_and_exits_2_when_an_input_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.yaml", proposal());
    let broken = write(
        dir.path(),
        "broken.yaml",
        "apiVersion: config.aether.io/v1\nspec: [unclosed",
    );
    let run = aetherctl(&["status".into(), good.into_os_string(), broken.clone().into_os_string()]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .starts_with(&format!("error: {}: invalid YAML: ", broken.display())),
        "{}",
        run.stderr
    );
}
