//! Kubernetes Events for condition transitions, so that
//! `kubectl describe virtualhost` tells what happened to an object and when.
//!
//! An event is recorded when a status patch that changes a condition's
//! `status` or `reason` has been stored, by the replica that writes
//! statuses (the Lease's holder), on the object (`regarding`), through
//! kube-runtime's recorder (`events.k8s.io/v1`; a repeat within minutes
//! becomes a series on the same Event):
//!
//! | condition | recorded when | `type` | `reason` | `action` |
//! |---|---|---|---|---|
//! | `Accepted` | its `status` or `reason` changes (or it first appears) | `Normal` for `Accepted`, `Warning` for `HostConflict`, `PartiallyInvalid`, `Invalid`, `Unsupported` | the condition's reason | `Accepted` |
//! | `ResolvedRefs` | it turns `False` or `CertificateExpiring`, or from either back to `ResolvedRefs` | `Warning` for `False` and `CertificateExpiring`, `Normal` after | the condition's reason | `ResolvedRefs` |
//! | `Programmed` | an Envoy refuses it (`Rejected`), or it goes from `Rejected` straight to `True` | `Warning` for `Rejected`, `Normal` after | the condition's reason | `Programmed` |
//!
//! `Programmed` going `Pending` and back on every edit is no news: only a
//! refusal, and its end, are recorded.
//!
//! The note is `Type=Status: message`, cut to the API's 1 kB. Transitions
//! are found by comparing with the stored status, so a pass, a re-list or a
//! controller restart that finds a condition already stored with that
//! status and reason records nothing, and a change of message alone (an
//! other host lost, say) neither. A follower records nothing.
//!
//! Events are sent from a task of their own through a bounded queue: a slow
//! or failing API server never holds a pass, its status patches or what
//! the edge serves. An event refused, or dropped with the queue full, is
//! logged and counted (`aether_controller_event_failures_total`).

use aether_api::config::v1::{Condition, VirtualHostStatus};

use crate::programmed::{PROGRAMMED, REASON_REJECTED};
use crate::status::resolved_refs::{REASON_CERTIFICATE_EXPIRING, RESOLVED_REFS};
use crate::status::{ACCEPTED, REASON_ACCEPTED};

/// The API's bound on an Event's `note`, in bytes.
pub const MAX_NOTE_BYTES: usize = 1024;

/// One condition transition, as an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// `Warning` (else `Normal`).
    pub warning: bool,
    /// The condition's new reason (`HostConflict`).
    pub reason: String,
    /// The condition type (`Accepted`).
    pub action: &'static str,
    /// `Type=Status: message`, at most [`MAX_NOTE_BYTES`].
    pub note: String,
}

/// The transitions from the `stored` status (`None`: the object has none
/// yet) to the `desired` one; see the module's table.
pub fn transitions(stored: Option<&VirtualHostStatus>, desired: &VirtualHostStatus) -> Vec<Transition> {
    let before = |kind: &str| {
        stored
            .into_iter()
            .flat_map(|status| &status.conditions)
            .find(|condition| condition.r#type == kind)
    };
    let after = |kind: &str| desired.conditions.iter().find(|condition| condition.r#type == kind);
    let changed = |old: Option<&Condition>, new: &Condition| {
        old.is_none_or(|old| (&old.status, &old.reason) != (&new.status, &new.reason))
    };
    let mut found = Vec::new();
    if let Some(new) = after(ACCEPTED)
        && changed(before(ACCEPTED), new)
    {
        found.push(transition(ACCEPTED, new, new.reason != REASON_ACCEPTED));
    }
    if let Some(new) = after(RESOLVED_REFS) {
        let old = before(RESOLVED_REFS);
        // A reference that resolves is no news; one that stops or whose
        // certificate is about to end (or one that resolves again after
        // either) is.
        let troubled =
            |condition: &Condition| condition.status == "False" || condition.reason == REASON_CERTIFICATE_EXPIRING;
        if (troubled(new) || old.is_some_and(troubled)) && changed(old, new) {
            found.push(transition(RESOLVED_REFS, new, troubled(new)));
        }
    }
    if let Some(new) = after(PROGRAMMED) {
        let old = before(PROGRAMMED);
        let refused = new.reason == REASON_REJECTED;
        let was_refused = old.is_some_and(|old| old.reason == REASON_REJECTED);
        if (refused && changed(old, new)) || (was_refused && new.status == "True") {
            found.push(transition(PROGRAMMED, new, refused));
        }
    }
    found
}

fn transition(action: &'static str, condition: &Condition, warning: bool) -> Transition {
    Transition {
        warning,
        reason: condition.reason.clone(),
        action,
        note: crate::text::cut_bytes(
            format!("{}={}: {}", condition.r#type, condition.status, condition.message),
            MAX_NOTE_BYTES,
        ),
    }
}

#[cfg(feature = "server")]
pub use recorder::{EventRecorder, QUEUE, REPORTING_CONTROLLER};

#[cfg(feature = "server")]
mod recorder {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::Client;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    use prometheus_client::metrics::counter::Counter;
    use tokio::sync::mpsc;
    use tokio::task::JoinHandle;
    use tracing::{debug, warn};

    use super::Transition;
    use crate::metrics::Metrics;

    /// Events waiting to be sent, at most; beyond, new ones are dropped
    /// (and counted) until the API server catches up.
    pub const QUEUE: usize = 1024;

    /// The controller's name in each Event's `reportingController` (what
    /// `kubectl describe` shows as "From").
    pub const REPORTING_CONTROLLER: &str = "aether-controller";

    /// The API's bound on `reportingInstance`, in bytes.
    const MAX_INSTANCE_BYTES: usize = 128;

    /// Sends Events from a task of its own (see the module's documentation).
    #[derive(Debug, Clone)]
    pub struct EventRecorder {
        queue: mpsc::Sender<(ObjectReference, Event)>,
        failures: Counter,
    }

    impl EventRecorder {
        /// Starts the task that sends the Events through `client`, as
        /// `instance` (the replica's name; the host's name when `None`).
        /// The task ends once every clone of the recorder is dropped and
        /// the queue is sent.
        pub fn spawn(client: Client, instance: Option<String>, metrics: &Metrics) -> (Self, JoinHandle<()>) {
            let mut reporter = Reporter::from(REPORTING_CONTROLLER);
            if let Some(instance) = instance {
                reporter.instance = Some(instance);
            }
            reporter.instance = reporter.instance.map(|mut instance| {
                while instance.len() > MAX_INSTANCE_BYTES {
                    instance.pop();
                }
                instance
            });
            let recorder = Recorder::new(client, reporter);
            let (queue, mut pending) = mpsc::channel::<(ObjectReference, Event)>(QUEUE);
            let (recorded, failures) = (metrics.events.clone(), metrics.event_failures.clone());
            let failed = failures.clone();
            let task = tokio::spawn(async move {
                while let Some((regarding, event)) = pending.recv().await {
                    match recorder.publish(&event, &regarding).await {
                        Ok(()) => {
                            recorded.inc();
                            debug!(object = ?regarding.name, reason = %event.reason, "event recorded");
                        }
                        Err(err) => {
                            failed.inc();
                            warn!(namespace = ?regarding.namespace, name = ?regarding.name, reason = %event.reason, error = %err, "recording an event failed");
                        }
                    }
                }
            });
            (Self { queue, failures }, task)
        }

        /// Queues an event per transition of the object `regarding`; never
        /// waits. Returns how many were dropped (queue full), each counted
        /// as a failure.
        pub fn record(&self, regarding: &ObjectReference, transitions: Vec<Transition>) -> usize {
            let mut dropped = 0;
            for transition in transitions {
                let event = Event {
                    type_: if transition.warning {
                        EventType::Warning
                    } else {
                        EventType::Normal
                    },
                    reason: transition.reason,
                    note: Some(transition.note),
                    action: transition.action.to_owned(),
                    secondary: None,
                };
                if self.queue.try_send((regarding.clone(), event)).is_err() {
                    self.failures.inc();
                    dropped += 1;
                }
            }
            dropped
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            r#type: kind.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            ..Condition::default()
        }
    }

    fn status(conditions: &[&Condition]) -> VirtualHostStatus {
        VirtualHostStatus {
            conditions: conditions.iter().map(|&condition| condition.clone()).collect(),
            route_count: 1,
        }
    }

    #[test]
    fn a_change_of_status_or_reason_is_a_transition_and_a_change_of_message_is_not() {
        let accepted = condition("Accepted", "True", "Accepted", "serving a.test");
        let conflict = condition("Accepted", "False", "HostConflict", "left out: host a.test ...");
        let partial = condition("Accepted", "True", "PartiallyInvalid", "route left out: ...");
        let first = transitions(None, &status(&[&accepted]));
        assert_eq!(
            first,
            [Transition {
                warning: false,
                reason: "Accepted".into(),
                action: "Accepted",
                note: "Accepted=True: serving a.test".into()
            }]
        );
        let to_conflict = transitions(Some(&status(&[&accepted])), &status(&[&conflict]));
        assert_eq!(
            (
                to_conflict[0].warning,
                to_conflict[0].reason.as_str(),
                to_conflict.len()
            ),
            (true, "HostConflict", 1)
        );
        // Same status, another reason: a transition too (a Warning).
        let to_partial = transitions(Some(&status(&[&accepted])), &status(&[&partial]));
        assert_eq!(
            (to_partial[0].warning, to_partial[0].reason.as_str()),
            (true, "PartiallyInvalid")
        );
        // Another message alone, or nothing new: none.
        let reworded = condition("Accepted", "False", "HostConflict", "left out: host b.test ...");
        assert_eq!(transitions(Some(&status(&[&conflict])), &status(&[&reworded])), []);
        assert_eq!(transitions(Some(&status(&[&accepted])), &status(&[&accepted])), []);
    }

    #[test]
    fn resolved_refs_is_news_only_when_it_fails_or_recovers() {
        let accepted = condition("Accepted", "True", "Accepted", "serving a.test");
        let resolved = condition("ResolvedRefs", "True", "ResolvedRefs", "no TLS secret referenced");
        let refused = condition(
            "ResolvedRefs",
            "False",
            "InvalidCertificateRef",
            "secret default/x: missing",
        );
        let stored = status(&[&accepted, &resolved]);
        assert_eq!(
            transitions(None, &stored).len(),
            1,
            "a first ResolvedRefs=True is no news"
        );
        let failing = transitions(Some(&stored), &status(&[&accepted, &refused]));
        assert_eq!(
            failing,
            [Transition {
                warning: true,
                reason: "InvalidCertificateRef".into(),
                action: "ResolvedRefs",
                note: "ResolvedRefs=False: secret default/x: missing".into()
            }]
        );
        let recovered = transitions(Some(&status(&[&accepted, &refused])), &stored);
        assert_eq!(
            (recovered[0].warning, recovered[0].reason.as_str()),
            (false, "ResolvedRefs")
        );
    }

    #[test]
    fn a_certificate_expiring_is_a_warning_once_and_its_renewal_is_normal() {
        let accepted = condition("Accepted", "True", "Accepted", "serving a.test");
        let resolved = condition(
            "ResolvedRefs",
            "True",
            "ResolvedRefs",
            "secret default/x: certificate serial 01 valid until 2026-03-01T00:00:00Z, served by SNI",
        );
        let expiring = condition(
            "ResolvedRefs",
            "True",
            "CertificateExpiring",
            "secret default/x: certificate serial 01 expires at 2026-03-01T00:00:00Z, within 7 days: renew it; served by SNI",
        );
        let expired = condition(
            "ResolvedRefs",
            "False",
            "InvalidCertificateRef",
            "secret default/x: the certificate expired at 2026-03-01T00:00:00Z; its hosts are not served over TLS",
        );
        let with = |condition: &Condition| status(&[&accepted, condition]);
        let warned = transitions(Some(&with(&resolved)), &with(&expiring));
        assert_eq!(
            warned,
            [Transition {
                warning: true,
                reason: "CertificateExpiring".into(),
                action: "ResolvedRefs",
                note: format!("ResolvedRefs=True: {}", expiring.message),
            }]
        );
        // Once per transition: the same reason on the next pass is no news,
        // even with its message reworded.
        let mut reworded = expiring.clone();
        reworded.message.push_str(" (again)");
        assert_eq!(transitions(Some(&with(&expiring)), &with(&reworded)), []);
        // Expiring, then expired: a Warning of its own.
        let lapsed = transitions(Some(&with(&expiring)), &with(&expired));
        assert_eq!(
            (lapsed.len(), lapsed[0].warning, lapsed[0].reason.as_str()),
            (1, true, "InvalidCertificateRef")
        );
        // Renewed before it ended, or after: Normal.
        for before in [&expiring, &expired] {
            let renewed = transitions(Some(&with(before)), &with(&resolved));
            assert_eq!(
                (renewed.len(), renewed[0].warning, renewed[0].reason.as_str()),
                (1, false, "ResolvedRefs"),
                "{}",
                before.reason
            );
        }
        // A first status already expiring is news too.
        assert_eq!(
            transitions(None, &with(&expiring))
                .iter()
                .map(|t| (t.action, t.warning))
                .collect::<Vec<_>>(),
            [("Accepted", false), ("ResolvedRefs", true)]
        );
    }

    #[test]
    fn programmed_is_news_only_when_envoy_refuses_it_and_when_that_ends() {
        let accepted = condition("Accepted", "True", "Accepted", "serving a.test");
        let pending = condition("Programmed", "False", "Pending", "waiting for 1 of 1 Envoy to apply it");
        let programmed = condition("Programmed", "True", "Programmed", "applied by 1 Envoy");
        let rejected = condition(
            "Programmed",
            "False",
            "Rejected",
            "Envoy e refused RouteConfiguration x: bad",
        );
        let with = |condition: &Condition| status(&[&accepted, condition]);
        // An edit's round: no news.
        assert_eq!(transitions(Some(&with(&programmed)), &with(&pending)), []);
        assert_eq!(transitions(Some(&with(&pending)), &with(&programmed)), []);
        let refused = transitions(Some(&with(&pending)), &with(&rejected));
        assert_eq!(
            refused,
            [Transition {
                warning: true,
                reason: "Rejected".into(),
                action: "Programmed",
                note: "Programmed=False: Envoy e refused RouteConfiguration x: bad".into()
            }]
        );
        assert_eq!(transitions(Some(&with(&rejected)), &with(&pending)), []);
        let fixed = transitions(Some(&with(&rejected)), &with(&programmed));
        assert_eq!((fixed[0].warning, fixed[0].reason.as_str()), (false, "Programmed"));
    }

    #[test]
    fn a_long_note_is_cut_to_the_api_bound_on_a_character_boundary() {
        let long = condition("Accepted", "False", "Invalid", &"é".repeat(2000));
        let note = &transitions(None, &status(&[&long]))[0].note;
        assert!(
            note.len() <= MAX_NOTE_BYTES && note.len() > MAX_NOTE_BYTES - 4,
            "{}",
            note.len()
        );
        assert!(note.ends_with('…') && note.starts_with("Accepted=False: éé"));
    }
}
