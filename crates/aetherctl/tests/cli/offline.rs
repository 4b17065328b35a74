//! `project`, `admit` and `status` on files: the projection, the admission
//! webhook's handler and the controller's statuses, run by the binary offline.

use std::ffi::OsString;
use std::path::Path;

use serde_json::Value;

use crate::common::{Run, aetherctl, proposal, write};
use crate::paths::{self, examples_dir};

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
    insta::assert_json_snapshot!("project_examples", snapshot);
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
    paths::shown_as(&[(&examples, "[examples]")], || {
        insta::assert_snapshot!("status_examples", run.stdout)
    });
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
    let status = report["objects"][0]["status"].clone();
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_json_snapshot!("status_json", report, {".objects[].status.conditions[].lastTransitionTime" => "[now]"});
    });

    // Stored as computed, an hour earlier: nothing to patch, and the stored
    // transition time stays.
    let mut stored = status.clone();
    stored["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z".into();
    // What the controller saw of Envoy is kept: offline, nothing is.
    assert_eq!(report["programmedObservable"], false);
    stored["conditions"].as_array_mut().unwrap().push(serde_json::json!({
        "type": "Programmed", "status": "True", "observedGeneration": 4,
        "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "Programmed", "message": "applied by 3 Envoys"
    }));
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
    paths::shown_as(&[(dir.path(), "[dir]")], || {
        insta::assert_snapshot!("status_stored_text", text.stdout)
    });

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
