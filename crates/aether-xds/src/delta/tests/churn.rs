//! Node ids that come and go: what the fleet keeps of them is bounded,
//! and forgotten once they are no longer expected.

use std::time::Duration;

use super::silent::{first_request, joined, stamped, told};
use super::*;
use crate::fleet::{Applied, Fleet, MAX_ABSENT_ENVOYS, MAX_NODE_ID_BYTES, MAX_REPORTED_NODES, OTHER_NODES};

const GRACE: Duration = Duration::from_secs(120);

#[tokio::test(start_paused = true)]
async fn two_thousand_node_ids_one_after_another_leave_a_bounded_fleet_forgotten_after_the_grace() {
    let fleet = Fleet::with_answer_deadline(GRACE, Duration::from_secs(60));
    let (_sender, current) = watch::channel(Some(stamped(&[("a", 1)])));
    let tasks = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    for i in 0..2_000 {
        let (outbox, membership, node) = joined(&fleet, &[(ROUTES, &current)], &format!("edge-{i:04}"));
        handle(&outbox, first_request(ROUTES, &node)).unwrap();
        let response = next(&outbox).unwrap();
        handle(&outbox, ack(&response)).unwrap();
        assert_eq!(fleet.reports_by_node().len(), 1);
        drop(membership);
        assert!(
            fleet.envoys() <= MAX_ABSENT_ENVOYS,
            "{} Envoys expected after {} came and went",
            fleet.envoys(),
            i + 1
        );
    }
    assert_eq!(fleet.envoys(), MAX_ABSENT_ENVOYS, "the latest ones are expected");
    let need = Need {
        type_url: ROUTES,
        name: "a".into(),
        seq: current.borrow().as_ref().unwrap().get("a").unwrap().seq,
    };
    match fleet.applied(std::slice::from_ref(&need)) {
        Applied::Pending { waiting, envoys, .. } => {
            assert_eq!((waiting.len(), envoys), (MAX_ABSENT_ENVOYS, MAX_ABSENT_ENVOYS));
            assert_eq!(waiting.last().map(String::as_str), Some("edge-1999 (disconnected)"));
        }
        other => panic!("{other:?}"),
    }
    assert!(fleet.reports_by_node().is_empty(), "no series for an Envoy gone");
    // One timer for the fleet, not one per Envoy gone.
    let now = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    assert!(now <= tasks + 2, "{now} tasks alive, {tasks} before");

    // Past the grace every one is forgotten, and the fleet says so.
    let mut changes = fleet.changes();
    changes.borrow_and_update();
    tokio::time::advance(GRACE).await;
    assert!(told(&mut changes).await);
    assert_eq!(fleet.envoys(), 0);
    assert_eq!(fleet.applied(&[need]), Applied::NoEnvoy);
}

#[tokio::test]
async fn the_reports_by_node_are_capped_and_a_node_id_is_kept_short() {
    let fleet = Fleet::default();
    let (_sender, current) = watch::channel(Some(stamped(&[("a", 1)])));
    let mut streams = Vec::new();
    for i in 0..2_000 {
        let (outbox, membership, node) = joined(&fleet, &[(ROUTES, &current)], &format!("edge-{i:04}"));
        handle(&outbox, first_request(ROUTES, &node)).unwrap();
        streams.push((outbox, membership));
    }
    let reports = fleet.reports_by_node();
    assert_eq!(reports.len(), MAX_REPORTED_NODES + 1);
    assert_eq!(reports[0].0, "edge-0000");
    let (other, merged) = reports.last().unwrap();
    assert_eq!(other, OTHER_NODES);
    assert_eq!(merged.streams, 2_000 - MAX_REPORTED_NODES);
    streams.clear();
    assert!(fleet.reports_by_node().is_empty());

    // A node id of 1 MiB is kept as its first bytes.
    let (outbox, _membership, node) = joined(&fleet, &[(ROUTES, &current)], &"é".repeat(512 * 1024));
    handle(&outbox, first_request(ROUTES, &node)).unwrap();
    let reports = fleet.reports_by_node();
    assert!(reports[0].0.len() <= MAX_NODE_ID_BYTES);
    assert!(reports[0].0.starts_with("éé"));
}
