//! `Programmed` through a rollout, as the API server is sent it: the exact
//! merge patch of each step, and only the steps that change something.
//! `kubectl wait --for=condition=Programmed` returns once the condition is
//! `True` with the object's generation as `observedGeneration`, so after
//! an edit the old `True` must give way at the new generation; and
//! `lastTransitionTime` moves only when `status` flips (Kubernetes'
//! `meta.SetStatusCondition`), not on a change of reason or generation.

use std::collections::BTreeMap;

use aether_controller::outputs::plan;
use aether_controller::programmed::Programmed;
use aether_controller::{EdgeTls, Observed, TlsSettings, Written};
use aether_projection::{ObjectKey, ProjectionConfig, Snapshot, project};
use jiff::Timestamp;
use serde_json::{Value, json};

use crate::common;

/// Another owner's condition, stored before the controller's.
fn foreign() -> Value {
    json!({"type": "example.com/Audited", "status": "True", "observedGeneration": 1,
           "lastTransitionTime": "2025-12-01T00:00:00Z", "reason": "Audited", "message": "",
           "severity": "low"})
}

struct Rollout {
    snapshot: Snapshot,
    key: ObjectKey,
    /// The status as stored, as JSON (what a merge patch made it).
    stored: Value,
}

impl Rollout {
    fn new() -> Self {
        let object = common::object("shop", "web", None, &["web.example.com"], &["svc-web"]);
        let key = object.key();
        let snapshot = project(vec![object], &ProjectionConfig::default()).unwrap();
        Self {
            snapshot,
            key,
            stored: json!({"conditions": [foreign()]}),
        }
    }

    /// The merge patch sent when the fleet says `programmed` of
    /// `generation` at `now`, if any; applied to what is stored.
    fn step(&mut self, generation: i64, programmed: Programmed, now: &str) -> Option<Value> {
        let status = stored_status(&self.stored);
        let observed = Observed {
            generation,
            status,
            programmed: Some(programmed),
        };
        let observed = BTreeMap::from([(self.key.clone(), observed)]);
        let tls = EdgeTls {
            settings: TlsSettings::new("/var/run/aether"),
            resolutions: Default::default(),
        };
        let plan = plan(
            &self.snapshot,
            &tls,
            &observed,
            &Written::default(),
            now.parse::<Timestamp>().unwrap(),
        )
        .unwrap();
        let patch = plan.patches.first()?;
        let stored_conditions = self.stored["conditions"].as_array().cloned().unwrap_or_default();
        let body = patch.merge_patch_keeping(&stored_conditions);
        self.stored = body["status"].clone();
        Some(body)
    }
}

/// `status` as the controller reads a stored one: tolerantly (another
/// owner's condition may carry fields this build does not know).
fn stored_status(status: &Value) -> Option<aether_api::config::v1::VirtualHostStatus> {
    let value = json!({"apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": "shop", "name": "web", "generation": 1},
        "spec": {"hosts": ["web.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": "svc-web"}}]},
        "status": status});
    aether_api::object::VirtualHostObject::from_value(value, aether_api::object::Reading::Tolerant)
        .unwrap()
        .status
}

/// The `Programmed` condition of a patch body.
fn programmed(body: &Value) -> &Value {
    body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Programmed")
        .unwrap()
}

#[test]
fn a_rollout_is_told_in_programmed_as_kubectl_wait_reads_it() {
    let mut rollout = Rollout::new();

    // Generation 1, no Envoy yet: the whole status, the foreign condition kept as stored.
    let first = rollout.step(1, Programmed::NoEnvoy, "2026-01-01T00:00:00Z").unwrap();
    assert_eq!(
        first,
        json!({"status": {"routeCount": 1, "conditions": [
            foreign(),
            {"type": "Accepted", "status": "True", "observedGeneration": 1,
             "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Accepted",
             "message": "serving web.example.com"},
            {"type": "ResolvedRefs", "status": "True", "observedGeneration": 1,
             "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ResolvedRefs",
             "message": "no TLS secret referenced: served over plain HTTP only"},
            {"type": "Programmed", "status": "False", "observedGeneration": 1,
             "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "NoEnvoy",
             "message": "no Envoy is connected"},
        ]}})
    );

    // Nothing changed, later: nothing sent.
    assert_eq!(rollout.step(1, Programmed::NoEnvoy, "2026-01-01T00:00:05Z"), None);

    // An Envoy connects and has not applied it: False → False keeps the time.
    let pending = Programmed::Pending {
        named: vec!["edge-0".into()],
        waiting: 1,
        envoys: 1,
        left_out: vec![],
    };
    let body = rollout.step(1, pending.clone(), "2026-01-01T00:00:10Z").unwrap();
    assert_eq!(
        programmed(&body),
        &json!({"type": "Programmed", "status": "False", "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Pending",
                "message": "waiting for 1 of 1 Envoy to apply it: edge-0"})
    );

    // Applied: True at generation 1, now.
    let body = rollout
        .step(
            1,
            Programmed::Programmed {
                envoys: 1,
                left_out: vec![],
            },
            "2026-01-01T00:00:11Z",
        )
        .unwrap();
    assert_eq!(
        programmed(&body),
        &json!({"type": "Programmed", "status": "True", "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:11Z", "reason": "Programmed",
                "message": "applied by 1 Envoy"})
    );

    // An edit (generation 2) not applied yet: the stored True at 1 gives
    // way, so `kubectl wait` waits; True → False moves the time.
    let body = rollout.step(2, pending, "2026-01-01T00:01:00Z").unwrap();
    assert_eq!(
        (
            &programmed(&body)["status"],
            &programmed(&body)["observedGeneration"],
            &programmed(&body)["lastTransitionTime"]
        ),
        (&json!("False"), &json!(2), &json!("2026-01-01T00:01:00Z"))
    );
    // Accepted stays True: only its generation moves, not its time.
    let accepted = &body["status"]["conditions"][1];
    assert_eq!(
        (&accepted["observedGeneration"], &accepted["lastTransitionTime"]),
        (&json!(2), &json!("2026-01-01T00:00:00Z"))
    );

    // Refused: False → False, the reason and message change, not the time.
    let rejected = Programmed::Rejected {
        envoy: "edge-0".into(),
        resource: "RouteConfiguration aether-edge/shop/web".into(),
        error: "duplicate domain".into(),
    };
    let body = rollout.step(2, rejected, "2026-01-01T00:01:01Z").unwrap();
    assert_eq!(
        programmed(&body),
        &json!({"type": "Programmed", "status": "False", "observedGeneration": 2,
                "lastTransitionTime": "2026-01-01T00:01:00Z", "reason": "Rejected",
                "message": "Envoy edge-0 refused RouteConfiguration aether-edge/shop/web: duplicate domain"})
    );

    // The next edit is applied: True at generation 3; what `kubectl wait` returns on.
    let body = rollout
        .step(
            3,
            Programmed::Programmed {
                envoys: 1,
                left_out: vec![],
            },
            "2026-01-01T00:02:00Z",
        )
        .unwrap();
    assert_eq!(
        programmed(&body),
        &json!({"type": "Programmed", "status": "True", "observedGeneration": 3,
                "lastTransitionTime": "2026-01-01T00:02:00Z", "reason": "Programmed",
                "message": "applied by 1 Envoy"})
    );
    // The foreign condition went back as stored, unknown field and all, every time.
    assert_eq!(body["status"]["conditions"][0], foreign());
}
