//! Streams sharing one quarantine: one Envoy's refusal of an object's
//! configuration serves every Envoy, new ones too, the last version taken.

use super::*;
use crate::quarantine::Quarantine;

const A: &str = "aether-edge/default/a";
const B: &str = "aether-edge/default/b";

/// A stream serving RDS from what `quarantine` serves (`current`).
fn stream(quarantine: &Quarantine, current: &Current) -> Arc<Outbox> {
    let served = Served {
        kind: Kind {
            type_url: ROUTES,
            by_name: false,
            on_names: Arc::new(|_, _| {}),
        },
        current: current.clone(),
        quarantine: Some(quarantine.clone()),
    };
    Arc::new(Outbox {
        types: vec![served],
        state: Mutex::new(State::new(1)),
        metrics: Arc::new(Counts::default()),
        signals: Signals::default(),
        fleet: crate::fleet::Fleet::default(),
    })
}

fn want(quarantine: &Quarantine, items: &[(&str, u8)]) {
    let mut wanted = quarantine.wanted();
    for (name, fill) in items {
        wanted.put(*name, body(*fill));
    }
    quarantine.publish(wanted);
}

#[test]
fn a_refused_configuration_is_served_as_last_taken_to_every_stream_and_new_ones() {
    let (sender, current) = watch::channel(None);
    let quarantine = Quarantine::new(
        Arc::new(crate::quarantine::tests::UnderBase),
        Arc::new(sender),
        Arc::new(Counts::default()),
    );
    want(&quarantine, &[(A, 1), (B, 1)]);
    let first = stream(&quarantine, &current);
    let second = stream(&quarantine, &current);
    for outbox in [&first, &second] {
        handle(outbox, subscribe(ROUTES, &[])).unwrap();
        let response = next(outbox).unwrap();
        handle(outbox, ack(&response)).unwrap();
    }

    // a's edit: the first Envoy refuses it alone in its response.
    want(&quarantine, &[(A, 2)]);
    let refused = next(&first).unwrap();
    assert_eq!(sent(&refused), (vec![(A.into(), version(2))], vec![]));
    handle(&first, nack(&refused)).unwrap();
    assert_eq!(
        quarantine.refusal(A).map(|refusal| refusal.error),
        Some("rejected".to_owned())
    );
    // The first is sent a's version taken again; the second, not sent
    // the refused one yet, never is: it holds the version served.
    assert_eq!(sent(&next(&first).unwrap()), (vec![(A.into(), version(1))], vec![]));
    assert!(next(&second).is_none());

    // b's edit is served as ever.
    want(&quarantine, &[(B, 3)]);
    assert_eq!(sent(&next(&first).unwrap()), (vec![(B.into(), version(3))], vec![]));
    // An Envoy that starts now gets a as last taken, and b's edit.
    let late = stream(&quarantine, &current);
    handle(&late, subscribe(ROUTES, &[])).unwrap();
    assert_eq!(
        sent(&next(&late).unwrap()),
        (vec![(A.into(), version(1)), (B.into(), version(3))], vec![])
    );

    // a's next edit is tried again.
    want(&quarantine, &[(A, 4)]);
    assert_eq!(sent(&next(&late).unwrap()), (vec![(A.into(), version(4))], vec![]));
    assert_eq!(quarantine.refusal(A), None);
}

/// A stream serving RDS from what `quarantine` serves, a member of `fleet`
/// while the membership lasts, its Envoy `node`.
fn member(
    quarantine: &Quarantine,
    current: &Current,
    fleet: &crate::fleet::Fleet,
    node: &str,
) -> (Arc<Outbox>, crate::fleet::Membership) {
    let outbox = stream(quarantine, current);
    let membership = fleet.join(outbox.clone());
    let mut first = subscribe(ROUTES, &[]);
    first.node = Some(envoy_types::pb::envoy::config::core::v3::Node {
        id: node.to_owned(),
        ..Default::default()
    });
    handle(&outbox, first).unwrap();
    (outbox, membership)
}

/// Answers every response `outbox` owes now: ACKs them, or NACKs them.
fn answer_all(outbox: &Outbox, refuse: bool) {
    while let Some(response) = one(outbox) {
        let answer = if refuse { nack(&response) } else { ack(&response) };
        handle(outbox, answer).unwrap();
    }
}

/// What `name` needs of each Envoy as `quarantine` serves it now.
fn need_of(current: &Current, name: &str) -> crate::fleet::Need {
    crate::fleet::Need {
        type_url: ROUTES,
        name: name.to_owned(),
        seq: current.borrow().as_ref().unwrap().get(name).unwrap().seq,
    }
}

#[test]
fn a_client_that_refuses_what_the_others_take_quarantines_nothing_and_is_left_out() {
    let (sender, current) = watch::channel(None);
    let quarantine = Quarantine::new(
        Arc::new(crate::quarantine::tests::UnderBase),
        Arc::new(sender),
        Arc::new(Counts::default()),
    );
    let fleet = crate::fleet::Fleet::default();
    want(&quarantine, &[(A, 1), (B, 1)]);
    let (first, _first) = member(&quarantine, &current, &fleet, "edge-1");
    let (second, _second) = member(&quarantine, &current, &fleet, "edge-2");
    let (broken, _broken) = member(&quarantine, &current, &fleet, "edge-broken");
    // The healthy Envoys answer first, then the broken one refuses it all
    // (its batch again one at a time, each refused too).
    answer_all(&first, false);
    answer_all(&second, false);
    answer_all(&broken, true);
    assert_eq!(
        quarantine.refusal(A),
        None,
        "a version two Envoys took is not quarantined"
    );
    assert_eq!(quarantine.refusal(B), None);
    let left_out = vec!["edge-broken (refused it)".to_owned()];
    assert_eq!(
        fleet.applied(&[need_of(&current, A)]),
        crate::fleet::Applied::All {
            envoys: 2,
            left_out: left_out.clone()
        }
    );

    // An edit, refused by the broken one before the others answer: it is
    // refusing what others take, so nothing is quarantined either.
    want(&quarantine, &[(A, 2)]);
    let to_first = next(&first).unwrap();
    answer_all(&broken, true);
    assert_eq!(quarantine.refusal(A), None);
    assert_eq!(
        fleet.applied(&[need_of(&current, A)]),
        crate::fleet::Applied::Pending {
            waiting: vec!["edge-1".into(), "edge-2".into()],
            envoys: 2,
            left_out: left_out.clone()
        },
        "not Rejected while the others have not answered"
    );
    handle(&first, ack(&to_first)).unwrap();
    let to_second = next(&second).unwrap();
    assert_eq!(sent(&to_second), (vec![(A.into(), version(2))], vec![]));
    handle(&second, ack(&to_second)).unwrap();
    assert_eq!(
        fleet.applied(&[need_of(&current, A)]),
        crate::fleet::Applied::All { envoys: 2, left_out }
    );
}

#[test]
fn a_refusal_another_envoy_overrules_by_taking_the_version_is_lifted() {
    let (sender, current) = watch::channel(None);
    let quarantine = Quarantine::new(
        Arc::new(crate::quarantine::tests::UnderBase),
        Arc::new(sender),
        Arc::new(Counts::default()),
    );
    let fleet = crate::fleet::Fleet::default();
    want(&quarantine, &[(A, 1)]);
    let (healthy, _healthy) = member(&quarantine, &current, &fleet, "edge-1");
    let (broken, _broken) = member(&quarantine, &current, &fleet, "edge-broken");
    let (late, _late) = member(&quarantine, &current, &fleet, "edge-2");
    answer_all(&healthy, false);
    answer_all(&late, false);
    // Only its first refusal comes before anyone took the edit: quarantined
    // then, while edge-1 holds the edit in flight and edge-2 is not sent it.
    let _ = next(&broken);
    want(&quarantine, &[(A, 2)]);
    let in_flight = next(&healthy).unwrap();
    answer_all(&broken, true);
    assert!(quarantine.refusal(A).is_some());
    assert!(next(&late).is_none(), "edge-2 holds the version served instead");
    // edge-1 takes the refused version: the refusal was edge-broken's alone.
    handle(&healthy, ack(&in_flight)).unwrap();
    assert_eq!(quarantine.refusal(A), None);
    assert_eq!(sent(&next(&late).unwrap()), (vec![(A.into(), version(2))], vec![]));
    answer_all(&late, false);
    // And its next refusal quarantines nothing, even first.
    answer_all(&broken, true);
    want(&quarantine, &[(A, 3)]);
    answer_all(&broken, true);
    assert_eq!(quarantine.refusal(A), None);
}
