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
