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
    let quarantine = Quarantine::new(Arc::new(crate::quarantine::tests::UnderBase), Arc::new(sender));
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
