//! Envoys that do not answer: left out of what is applied once their
//! oldest wait passes the fleet's answer deadline, on a paused clock.

use std::time::Duration;

use super::*;
use crate::fleet::{Applied, Fleet, Membership};

const DEADLINE: Duration = Duration::from_secs(60);

/// A fleet waiting an hour for Envoys gone, [`DEADLINE`] for answers.
fn fleet() -> Fleet {
    Fleet::with_answer_deadline(Duration::from_secs(3600), DEADLINE)
}

/// A delta stream of `type_urls` (one publisher each), a member of
/// `fleet`, its Envoy `node`; not subscribed to anything yet.
pub(super) fn joined(
    fleet: &Fleet,
    currents: &[(&'static str, &Current)],
    node: &str,
) -> (Arc<Outbox>, Membership, String) {
    joined_counted(fleet, currents, node, Arc::new(Counts::default()))
}

/// [`joined`], counted in `metrics`.
pub(super) fn joined_counted(
    fleet: &Fleet,
    currents: &[(&'static str, &Current)],
    node: &str,
    metrics: Arc<Counts>,
) -> (Arc<Outbox>, Membership, String) {
    let types = currents
        .iter()
        .map(|(type_url, current)| Served {
            kind: Kind {
                type_url,
                by_name: false,
                on_names: Arc::new(|_, _| {}),
            },
            current: (*current).clone(),
            quarantine: None,
        })
        .collect::<Vec<_>>();
    let outbox = Outbox::new(types, metrics, fleet);
    let membership = fleet.join(outbox.clone());
    (outbox, membership, node.to_owned())
}

/// The first request of `type_url` from `node`: every resource.
pub(super) fn first_request(type_url: &str, node: &str) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        node: Some(envoy_types::pb::envoy::config::core::v3::Node {
            id: node.to_owned(),
            ..Default::default()
        }),
        ..subscribe(type_url, &[])
    }
}

pub(super) fn stamped(items: &[(&str, u8)]) -> Arc<Resources> {
    let mut resources = resources(items);
    resources.stamp();
    Arc::new(resources)
}

fn need(type_url: &'static str, current: &Current, name: &str) -> Need {
    Need {
        type_url,
        name: name.to_owned(),
        seq: current.borrow().as_ref().unwrap().get(name).unwrap().seq,
    }
}

/// Lets the fleet's alarm run, and whether it told a change.
pub(super) async fn told(changes: &mut tokio::sync::watch::Receiver<u64>) -> bool {
    tokio::time::timeout(Duration::from_millis(1), changes.changed())
        .await
        .is_ok()
}

#[tokio::test(start_paused = true)]
async fn an_envoy_that_never_answers_is_left_out_after_the_deadline_and_counted_again_once_it_does() {
    let fleet = fleet();
    let (sender, current) = watch::channel(Some(stamped(&[("a", 1)])));
    let (healthy, _healthy, node) = joined(&fleet, &[(ROUTES, &current)], "edge-1");
    handle(&healthy, first_request(ROUTES, &node)).unwrap();
    let (silent, _silent, node) = joined(&fleet, &[(ROUTES, &current)], "edge-silent");
    handle(&silent, first_request(ROUTES, &node)).unwrap();
    let to_healthy = next(&healthy).unwrap();
    handle(&healthy, ack(&to_healthy)).unwrap();
    let to_silent = next(&silent).unwrap();
    let needs = [need(ROUTES, &current, "a")];
    let pending = Applied::Pending {
        waiting: vec!["edge-silent".into()],
        envoys: 2,
        left_out: vec![],
    };
    assert_eq!(fleet.applied(&needs), pending);

    let mut changes = fleet.changes();
    changes.borrow_and_update();
    tokio::time::advance(DEADLINE - Duration::from_secs(1)).await;
    assert!(!told(&mut changes).await);
    assert_eq!(fleet.applied(&needs), pending, "waited for within the deadline");
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(told(&mut changes).await, "the fleet tells the deadline passed");
    let left_out = Applied::All {
        envoys: 1,
        left_out: vec!["edge-silent (not answering)".into()],
    };
    assert_eq!(fleet.applied(&needs), left_out);

    // A new edit: the healthy one takes it; the silent one is still left out.
    sender.send_replace(Some(stamped(&[("a", 2)])));
    let to_healthy = next(&healthy).unwrap();
    handle(&healthy, ack(&to_healthy)).unwrap();
    assert_eq!(fleet.applied(&[need(ROUTES, &current, "a")]), left_out);

    // It answers at last: counted again, and waited for as any Envoy.
    handle(&silent, ack(&to_silent)).unwrap();
    assert_eq!(
        fleet.applied(&[need(ROUTES, &current, "a")]),
        Applied::Pending {
            waiting: vec!["edge-silent".into()],
            envoys: 2,
            left_out: vec![]
        }
    );
    let to_silent = next(&silent).unwrap();
    handle(&silent, ack(&to_silent)).unwrap();
    assert_eq!(
        fleet.applied(&[need(ROUTES, &current, "a")]),
        Applied::All {
            envoys: 2,
            left_out: vec![]
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_never_asks_for_a_type_or_never_reads_is_left_out_after_the_deadline() {
    let fleet = fleet();
    let (_routes, routes) = watch::channel(Some(stamped(&[("a", 1)])));
    let (secrets_sender, secrets) = watch::channel(Some(stamped(&[("s", 1)])));
    let types = [(ROUTES, &routes), (SECRETS, &secrets)];
    let (healthy, _healthy, node) = joined(&fleet, &types, "edge-1");
    for type_url in [ROUTES, SECRETS] {
        handle(&healthy, first_request(type_url, &node)).unwrap();
    }
    while let Some(response) = next(&healthy) {
        handle(&healthy, ack(&response)).unwrap();
    }
    // Asks for routes, never for secrets.
    let (routes_only, _routes_only, node) = joined(&fleet, &types, "edge-routes-only");
    handle(&routes_only, first_request(ROUTES, &node)).unwrap();
    let response = next(&routes_only).unwrap();
    handle(&routes_only, ack(&response)).unwrap();
    // Asks for both, takes the first sync, then never reads again.
    let (unread, _unread, node) = joined(&fleet, &types, "edge-unread");
    for type_url in [ROUTES, SECRETS] {
        handle(&unread, first_request(type_url, &node)).unwrap();
    }
    while let Some(response) = next(&unread) {
        handle(&unread, ack(&response)).unwrap();
    }
    let mut changes = fleet.changes();
    changes.borrow_and_update();
    tokio::time::advance(DEADLINE / 2).await;

    // A secret's rotation: told to every stream (as their request task
    // does), read by the healthy one alone.
    secrets_sender.send_replace(Some(stamped(&[("s", 2)])));
    for outbox in [&healthy, &routes_only, &unread] {
        outbox.published();
    }
    let response = next(&healthy).unwrap();
    handle(&healthy, ack(&response)).unwrap();
    let needs = [need(ROUTES, &routes, "a"), need(SECRETS, &secrets, "s")];
    assert_eq!(
        fleet.applied(&needs),
        Applied::Pending {
            waiting: vec!["edge-routes-only".into(), "edge-unread".into()],
            envoys: 3,
            left_out: vec![]
        }
    );
    // The one that never asked for secrets is waited for from its start.
    changes.borrow_and_update();
    tokio::time::advance(DEADLINE / 2).await;
    assert!(told(&mut changes).await);
    assert_eq!(
        fleet.applied(&needs),
        Applied::Pending {
            waiting: vec!["edge-unread".into()],
            envoys: 2,
            left_out: vec!["edge-routes-only (not answering)".into()]
        }
    );
    // The one that does not read, from the rotation.
    tokio::time::advance(DEADLINE / 2).await;
    assert!(told(&mut changes).await);
    assert_eq!(
        fleet.applied(&needs),
        Applied::All {
            envoys: 1,
            left_out: vec![
                "edge-routes-only (not answering)".into(),
                "edge-unread (not answering)".into()
            ]
        }
    );
}

#[tokio::test(start_paused = true)]
async fn an_envoy_alone_that_never_answers_stays_waited_for_named_so() {
    let fleet = fleet();
    let (_sender, current) = watch::channel(Some(stamped(&[("a", 1)])));
    let (silent, _silent, node) = joined(&fleet, &[(ROUTES, &current)], "edge-silent");
    handle(&silent, first_request(ROUTES, &node)).unwrap();
    next(&silent).unwrap();
    tokio::time::advance(DEADLINE).await;
    assert_eq!(
        fleet.applied(&[need(ROUTES, &current, "a")]),
        Applied::Pending {
            waiting: vec!["edge-silent (not answering)".into()],
            envoys: 1,
            left_out: vec![]
        }
    );
}
