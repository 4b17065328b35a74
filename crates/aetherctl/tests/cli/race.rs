//! Where the webhook and the projection meet: two objects that raced past
//! the webhook's replicas, and the edge's dedup of what they both claim.

use aether_projection::{ProjectionConfig, Projector};
use aether_testing::objects::object;
use aether_webhook::admission;
use aether_webhook::index::HostIndex;

/// Two replicas, neither yet indexing the other's object, both admit;
/// the projection's run-time dedup then keeps the host for the older
/// object, and exactly one owner remains in the Envoy output.
#[test]
fn two_objects_admitted_in_a_race_leave_one_owner_at_the_edge() {
    let claim = |namespace: &str, name: &str, created: &str| {
        object(namespace, name)
            .created(created)
            .hosts(["race.example.com"])
            .route_value(serde_json::json!({"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": 8080}}))
    };
    let (second, first) = (
        claim("team-b", "second", "2026-01-01T00:00:00.5Z"),
        claim("team-a", "first", "2026-01-01T00:00:01Z"),
    );
    for (uid, racer) in [("r1", &first), ("r2", &second)] {
        let body = serde_json::to_vec(&admission::review_for(uid, &racer.document(), None)).unwrap();
        let (answer, _) = admission::review(&body, &HostIndex::new()).unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["response"]["allowed"], true, "{answer}");
    }

    let projector = Projector::from_objects(vec![second.build(), first.build()], ProjectionConfig::default()).unwrap();
    let snapshot = projector.snapshot();
    let conflicts = &snapshot.report.conflicts;
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(conflicts[0].host, "race.example.com");
    assert_eq!(conflicts[0].winner.to_string(), "team-b/second");
    assert_eq!(conflicts[0].loser.to_string(), "team-a/first");
    let routes = snapshot.route_configuration().unwrap();
    let owners: Vec<&str> = routes
        .virtual_hosts
        .iter()
        .filter(|vh| vh.domains.iter().any(|d| d == "race.example.com"))
        .map(|vh| vh.name.as_str())
        .collect();
    assert_eq!(owners, ["team-b/second"]);
}
