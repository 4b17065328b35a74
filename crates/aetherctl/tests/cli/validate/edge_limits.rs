//! `validate` and the edge's own limits: every limit the webhook holds one
//! object to (`aether_edge_limits`: the RE2 guard, then what Envoy refuses
//! of a route action) fails `validate`, naming the field and why, as
//! `admit` denies the object. Host conflicts, between objects, are
//! `admit`'s and `project`'s alone.

use std::path::Path;

use serde_json::Value;

use super::validate_json;
use crate::common::{aetherctl, proposal, write};

/// One limit broken: the proposal broken so, the field a violation names,
/// a few words of the reason it gives, and its rule.
struct Case {
    name: &'static str,
    manifest: String,
    field: &'static str,
    reason: &'static str,
    rule: &'static str,
}

/// The proposal with its first route's `prefix: /users` turned into `path`
/// (the lines of a match, indented as the match's fields).
fn with_match(path: &str) -> String {
    let broken = proposal().replace("        prefix: /users\n", path);
    assert_ne!(broken, proposal());
    broken
}

/// The proposal with `fields` (indented as a route's fields) added to its
/// first route.
fn with_route_fields(fields: &str) -> String {
    let broken = proposal().replace("        port: 8080\n", &format!("        port: 8080\n{fields}"));
    assert_ne!(broken, proposal());
    broken
}

/// The proposal with its first route's backend replaced by `action`
/// (indented as a route's fields).
fn with_action(action: &str) -> String {
    let broken = proposal().replace(
        "      backend:\n        service: svc-users\n        port: 8080\n",
        action,
    );
    assert_ne!(broken, proposal());
    broken
}

/// A path regex, in single quotes: YAML then reads backslashes as written.
fn path_regex(regex: &str) -> String {
    with_match(&format!("        regex: '{regex}'\n"))
}

/// Asserts that `validate` refuses `case` (exit 1, a violation of the
/// field or within it, giving the reason) in its JSON, text and YAML
/// forms alike, and that `admit` denies the object with the same words.
fn assert_refused(dir: &Path, case: &Case) {
    let name = case.name;
    let file = write(dir, &format!("{name}.yaml"), &case.manifest);
    let (run, report) = validate_json(&[&file]);
    assert_eq!(run.code, 1, "{name}: {report:#}");
    let violations: Vec<String> = report["objects"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let text = |key: &str| v[key].as_str().unwrap().to_owned();
            format!("{}: {} [{}]", text("path"), text("message"), text("rule"))
        })
        .collect();
    let names_the_field = |violation: &String| {
        violation
            .strip_prefix(case.field)
            .is_some_and(|rest| rest.starts_with([':', '.', '[']))
    };
    let rule = format!(" [{}]", case.rule);
    assert!(
        violations
            .iter()
            .any(|v| names_the_field(v) && v.contains(case.reason) && v.ends_with(&rule)),
        "{name}: no violation of {} saying {:?}{rule}: {violations:#?}",
        case.field,
        case.reason
    );

    let file_arg = file.to_str().unwrap();
    let text = aetherctl(&["validate", file_arg]);
    assert_eq!(text.code, 1, "{name}: {text:?}");
    for violation in &violations {
        let line = format!("{file_arg}: document 0: default/api: {violation}\n");
        assert!(text.stdout.contains(&line), "{name}: no {line:?} in {}", text.stdout);
    }
    let yaml = aetherctl(&["validate", "-o", "yaml", file_arg]);
    assert_eq!(yaml.code, 1, "{name}: {yaml:?}");
    let yaml: Value = serde_saphyr::from_str(&yaml.stdout).unwrap();
    assert_eq!(yaml, report, "{name}");

    let admit = aetherctl(&["admit", "-o", "json", file_arg]);
    assert_eq!(admit.code, 1, "{name}: {admit:?}");
    let admit: Value = serde_json::from_str(&admit.stdout).unwrap();
    let denial = admit["reviews"][0]["message"].as_str().unwrap();
    // The denial lists one `  - VIOLATION` line each: the same list.
    assert_eq!(denial.matches("\n  - ").count(), violations.len(), "{name}: {denial}");
    for violation in &violations {
        assert!(denial.contains(violation.as_str()), "{name}: admit said {denial:?}");
    }
}

/// An object that breaks a rule is judged by the rules alone, as the
/// webhook judges it: the edge's limits speak of a spec the rules admit.
#[test]
fn a_rule_broken_too_is_what_validate_and_admit_both_name() {
    let case = Case {
        name: "rule-and-regex",
        manifest: path_regex("/a{1001}").replace("- api.example.com", "- API.example.com"),
        field: "spec.hosts[0]",
        reason: "does not match regex pattern",
        rule: "string.pattern",
    };
    assert_refused(tempfile::tempdir().unwrap().path(), &case);
}

/// The RE2 guard's limits, each in the field it reads: what RE2 would not
/// compile, or reads otherwise, or compiles into a program larger than
/// Envoy takes.
#[test]
fn each_re2_limit_fails_validate_as_admit_denies_it() {
    let regex = "spec.routes[0].match.regex";
    let cases = [
        Case {
            name: "count-above-re2s-bound",
            manifest: path_regex("/a{1001}"),
            field: regex,
            reason: "a repetition count above RE2's",
            rule: "re2",
        },
        Case {
            name: "nested-counts-multiplying-above-re2s-bound",
            manifest: path_regex("/(?:(?:a{2}){501}){0}"),
            field: regex,
            reason: "counted repetitions nested to a product of",
            rule: "re2",
        },
        Case {
            name: "program-above-envoys-size",
            manifest: path_regex("/[a-z]{200}"),
            field: regex,
            reason: "Envoy refuses programs above",
            rule: "re2",
        },
        Case {
            name: "groups-nested-deeper-than-the-guard-reads",
            manifest: path_regex(&format!("/{}a{}", "(?:".repeat(101), ")".repeat(101))),
            field: regex,
            reason: "not a regular expression: exceed the maximum number of nested",
            rule: "re2",
        },
        Case {
            name: "construct-re2-reads-otherwise",
            manifest: path_regex("/(?<id>[0-9]+)"),
            field: regex,
            reason: "a (?<name>...) group",
            rule: "re2",
        },
        Case {
            name: "header-regex",
            manifest: with_match(
                "        prefix: /users\n        headers:\n          - {name: x-id, regex: '\\p{L}+'}\n",
            ),
            field: "spec.routes[0].match.headers[0].regex",
            reason: "a Unicode class",
            rule: "re2",
        },
        Case {
            name: "query-parameter-regex",
            manifest: with_match(
                "        prefix: /users\n        queryParams:\n          - {name: id, regex: '[a-z&&[^aeiou]]'}\n",
            ),
            field: "spec.routes[0].match.queryParams[0].regex",
            reason: "a class set operation",
            rule: "re2",
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    for case in &cases {
        assert_refused(dir.path(), case);
    }
}

/// What Envoy refuses of a route action (`aether_edge_limits`' rule
/// `envoy`), each check once. The API's rules refuse each of these first
/// today, so the violation is theirs; were one loosened, the edge's rule
/// would name the field instead (and this test say so). Either way
/// `validate` and `admit` name the same field and reason.
#[test]
fn each_envoy_limit_on_a_route_action_fails_validate_as_admit_denies_it() {
    let cases = [
        Case {
            name: "header-set-is-host",
            manifest: with_route_fields("      requestHeaders:\n        set:\n          - {name: host, value: a}\n"),
            field: "spec.routes[0].requestHeaders.set[0].name",
            reason: "must not be in list",
            rule: "string.not_in",
        },
        Case {
            name: "header-set-is-a-pseudo-header",
            manifest: with_route_fields(
                "      requestHeaders:\n        add:\n          - {name: ':path', value: /a}\n",
            ),
            field: "spec.routes[0].requestHeaders.add[0].name",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "header-name-not-a-token",
            manifest: with_route_fields("      responseHeaders:\n        set:\n          - {name: 'x id', value: a}\n"),
            field: "spec.routes[0].responseHeaders.set[0].name",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "header-value-with-a-line-break",
            manifest: with_route_fields(
                "      requestHeaders:\n        set:\n          - {name: x-a, value: \"a\\r\\nb\"}\n",
            ),
            field: "spec.routes[0].requestHeaders.set[0].value",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "header-removed-is-host",
            manifest: with_route_fields("      responseHeaders:\n        remove: [host]\n"),
            field: "spec.routes[0].responseHeaders.remove[0]",
            reason: "must not be in list",
            rule: "string.not_in",
        },
        Case {
            name: "split-weights-above-envoys-sum",
            manifest: with_action(
                "      backends:\n        - {service: svc-a, weight: 4294967295}\n        - {service: svc-b, weight: 1}\n",
            ),
            field: "spec.routes[0].backends",
            reason: "must be less than or equal to",
            rule: "uint32.lte",
        },
        Case {
            name: "timeout-the-edge-cannot-read",
            manifest: with_route_fields("      timeout: 1.5s\n"),
            field: "spec.routes[0].timeout",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "per-try-timeout-the-edge-cannot-read",
            manifest: with_route_fields("      retries: {attempts: 1, perTryTimeout: 1d}\n"),
            field: "spec.routes[0].retries.perTryTimeout",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "redirect-status-envoy-does-not-send",
            manifest: with_action("      redirect: {statusCode: 305}\n"),
            field: "spec.routes[0].redirect.statusCode",
            reason: "must be in list",
            rule: "uint32.in",
        },
        Case {
            name: "redirect-value-not-a-header-value",
            manifest: with_action("      redirect: {host: \"a\\nb\"}\n"),
            field: "spec.routes[0].redirect.host",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
        Case {
            name: "rewrite-value-not-a-header-value",
            manifest: with_route_fields("      rewrite: {prefix: \"/a\\nb\"}\n"),
            field: "spec.routes[0].rewrite.prefix",
            reason: "does not match regex pattern",
            rule: "string.pattern",
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    for case in &cases {
        assert_refused(dir.path(), case);
    }
}
