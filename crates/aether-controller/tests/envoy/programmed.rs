//! `Programmed` over xDS: each object's status says when every Envoy
//! serves its generation, which Envoy has not yet, or which refused it and
//! why; checked against what Envoy really serves.

use aether_e2e::edge::PATIENCE;
use aether_e2e::{Edge, Mode, wait_until};
use serde_json::Value;

use crate::chains::{chain_serves, start_manifests};
use crate::controller;

/// `default/NAME` at `generation`, `/v{generation}` to `svc-NAME-api`.
fn object(name: &str, generation: i64) -> String {
    aether_testing::objects::object("default", name)
        .metadata("generation", generation.into())
        .hosts([format!("{name}.example.com")])
        .route(&format!("/v{generation}"), &format!("svc-{name}-api"))
        .route("/", &format!("svc-{name}"))
        .tls("wild-tls")
        .manifest()
}

/// Waits until `name`'s `Programmed` has `reason` at `generation`; returns it.
fn programmed(edge: &Edge, name: &str, reason: &str, generation: i64) -> Value {
    let key = format!("default/{name}");
    wait_until(
        &format!("{key} Programmed {reason} at generation {generation}"),
        PATIENCE,
        || format!("{}\n{}", edge.condition(&key, "Programmed"), edge.logs()),
        || {
            let condition = edge.condition(&key, "Programmed");
            (condition["reason"] == reason && condition["observedGeneration"] == generation).then_some(condition)
        },
    )
}

#[cfg(feature = "test-hooks")]
#[test]
fn programmed_follows_every_envoys_answer_over_xds() {
    let names = ["a", "b", "c"];
    let files: Vec<(String, String)> = names
        .iter()
        .map(|name| (format!("{name}.yaml"), object(name, 1)))
        .collect();
    // b's chain configuration is one Envoy refuses.
    let (edge, ca) = start_manifests(
        controller(),
        Mode::Xds,
        &["--test-refused-chain=default/b"],
        &names,
        &files,
    );
    let serves = |name: &str, path: &str| chain_serves(&edge, &ca, &format!("{name}.example.com"), path);

    for name in ["a", "c"] {
        let condition = programmed(&edge, name, "Programmed", 1);
        assert_eq!(condition["status"], "True", "{condition}");
        assert_eq!(condition["message"], "applied by 1 Envoy", "{condition}");
    }
    let refused = programmed(&edge, "b", "Rejected", 1);
    assert_eq!(refused["status"], "False", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.starts_with("Envoy aether-edge refused RouteConfiguration aether-edge/default/b: "),
        "{message}"
    );
    assert!(message.len() > "Envoy aether-edge refused RouteConfiguration aether-edge/default/b: ".len());

    let rejected_at_start = edge.rejected();

    // An edit: Programmed at the new generation once Envoy serves it.
    edge.write("a.yaml", &object("a", 2));
    let condition = programmed(&edge, "a", "Programmed", 2);
    assert_eq!(condition["status"], "True", "{condition}");
    assert_eq!(
        serves("a", "/v2").as_deref(),
        Some("svc-a-api"),
        "programmed means served"
    );
    assert_eq!(edge.condition("default/c", "Programmed")["status"], "True");

    // A second Envoy; an edit while it is down waits for it, and is
    // programmed once it is back (known by its node id).
    let mut second = edge.another_envoy("edge-2");
    second.kill();
    edge.write("a.yaml", &object("a", 3));
    // Pending for both at first, then for the one gone alone.
    let waiting_for_the_gone = "waiting for 1 of 2 Envoys to apply it: edge-2 (disconnected)";
    let pending = wait_until(
        "a Pending on edge-2 alone",
        PATIENCE,
        || format!("{}\n{}", edge.condition("default/a", "Programmed"), edge.logs()),
        || {
            let condition = edge.condition("default/a", "Programmed");
            (condition["message"] == waiting_for_the_gone).then_some(condition)
        },
    );
    assert_eq!(
        (&pending["status"], &pending["reason"], &pending["observedGeneration"]),
        (&"False".into(), &"Pending".into(), &3.into()),
        "{pending}"
    );
    assert_eq!(
        serves("a", "/v3").as_deref(),
        Some("svc-a-api"),
        "the first Envoy serves it"
    );
    let _back = edge.another_envoy("edge-2");
    let condition = programmed(&edge, "a", "Programmed", 3);
    assert_eq!(condition["message"], "applied by 2 Envoys", "{condition}");
    // No configuration was refused since the start (when b's, sent with
    // others, made Envoy refuse the response whole once).
    assert_eq!(edge.rejected(), rejected_at_start, "nothing refused since the start");
}

#[test]
fn over_files_programmed_is_not_observed() {
    let files = vec![("a.yaml".to_owned(), object("a", 4))];
    let (edge, _ca) = start_manifests(controller(), Mode::Files, &[], &["a"], &files);
    let condition = programmed(&edge, "a", "NotObserved", 4);
    assert_eq!(condition["status"], "Unknown", "{condition}");
}

/// [`object`] with one more route, `/refuse-me`, which the test-only
/// `--test-refused-marker=/refuse-me` makes Envoy refuse.
#[cfg(feature = "test-hooks")]
fn refused_object(name: &str, generation: i64) -> String {
    aether_testing::objects::object("default", name)
        .metadata("generation", generation.into())
        .hosts([format!("{name}.example.com")])
        .route(&format!("/v{generation}"), &format!("svc-{name}-api"))
        .route("/refuse-me", &format!("svc-{name}-api"))
        .route("/", &format!("svc-{name}"))
        .tls("wild-tls")
        .manifest()
}

#[cfg(feature = "test-hooks")]
#[test]
fn a_refused_edit_is_quarantined_for_every_envoy_and_the_others_go_on() {
    let names = ["a", "b"];
    let files: Vec<(String, String)> = names
        .iter()
        .map(|name| (format!("{name}.yaml"), object(name, 1)))
        .collect();
    let flags = ["--test-refused-marker=/refuse-me", "--envoy-absence-grace-secs=0"];
    let (mut edge, ca) = start_manifests(controller(), Mode::Xds, &flags, &names, &files);
    let serves = |edge: &Edge, name: &str, path: &str| chain_serves(edge, &ca, &format!("{name}.example.com"), path);
    for name in names {
        programmed(&edge, name, "Programmed", 1);
    }

    // b's edit is one Envoy refuses: b says so, and keeps its version 1.
    edge.write("b.yaml", &refused_object("b", 2));
    let refused = programmed(&edge, "b", "Rejected", 2);
    let message = refused["message"].as_str().unwrap();
    let prefix = "Envoy aether-edge refused RouteConfiguration aether-edge/default/b: ";
    assert!(message.starts_with(prefix) && message.len() > prefix.len(), "{message}");
    assert_eq!(serves(&edge, "b", "/v1").as_deref(), Some("svc-b-api"));
    assert_eq!(
        serves(&edge, "b", "/v2").as_deref(),
        Some("svc-b"),
        "not the refused version"
    );

    // a's edits go on.
    edge.write("a.yaml", &object("a", 2));
    programmed(&edge, "a", "Programmed", 2);
    assert_eq!(serves(&edge, "a", "/v2").as_deref(), Some("svc-a-api"));

    // An Envoy that starts now is served b's version taken, never the
    // refused one; with the first gone, it alone answers.
    let late = edge.another_envoy("edge-late");
    edge.envoy.kill();
    wait_until(
        "the late Envoy serves b's version 1 and a's 2",
        PATIENCE,
        || format!("{}\n{}", late.log_tail(), edge.logs()),
        || {
            (serves(&edge, "b", "/v1").as_deref() == Some("svc-b-api")
                && serves(&edge, "a", "/v2").as_deref() == Some("svc-a-api"))
            .then_some(())
        },
    );
    assert_eq!(serves(&edge, "b", "/v2").as_deref(), Some("svc-b"));
    assert_eq!(late.stat("http.edge.rds.aether-edge/default/b.update_rejected"), 0);
    assert_eq!(
        edge.condition("default/b", "Programmed")["reason"],
        "Rejected",
        "still refused while that version is asked for"
    );

    // b's next edit is tried again, and taken.
    edge.write("b.yaml", &object("b", 3));
    let condition = programmed(&edge, "b", "Programmed", 3);
    assert_eq!(condition["message"], "applied by 1 Envoy", "{condition}");
    assert_eq!(serves(&edge, "b", "/v3").as_deref(), Some("svc-b-api"));
}
