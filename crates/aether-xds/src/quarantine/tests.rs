//! What is served of the wanted publications as Envoys take and refuse
//! versions.

use bytes::Bytes;

use super::*;
use crate::resources::Encoded;

const BASE: &str = "aether-edge";

/// The names under [`BASE`], withdrawn to an empty resource.
#[derive(Debug)]
pub(crate) struct UnderBase;

impl QuarantineScope for UnderBase {
    fn quarantines(&self, name: &str) -> bool {
        name.strip_prefix(BASE).is_some_and(|rest| rest.starts_with('/'))
    }

    fn withdrawn(&self, _: &str) -> Item {
        Item::new(Encoded::Buffer(Bytes::new()))
    }
}

fn body(fill: u8) -> Encoded {
    Encoded::Buffer(Bytes::from(vec![fill; 100]))
}

fn version(fill: u8) -> Arc<str> {
    crate::resources::version_of(&[fill; 100]).into()
}

/// What a quarantine serves.
type Receiver = watch::Receiver<Option<Arc<Resources>>>;

/// A quarantine and what it serves.
fn quarantine() -> (Quarantine, Receiver) {
    counted().0
}

/// A quarantine, what it serves, and what it counts.
fn counted() -> ((Quarantine, Receiver), Arc<crate::metrics::Counts>) {
    let (sender, receiver) = watch::channel(None);
    let counts = Arc::new(crate::metrics::Counts::default());
    let quarantine = Quarantine::new(Arc::new(UnderBase), Arc::new(sender), counts.clone());
    ((quarantine, receiver), counts)
}

/// Publishes the wanted resources changed by `change`.
fn want(quarantine: &Quarantine, change: impl FnOnce(&mut Resources)) -> bool {
    let mut wanted = quarantine.wanted();
    change(&mut wanted);
    quarantine.publish(wanted)
}

/// The version served as `name`, if any.
fn served(receiver: &Receiver, name: &str) -> Option<Arc<str>> {
    receiver.borrow().as_ref()?.get(name).map(|item| item.version.clone())
}

/// The item wanted as `name` now.
fn wanted(quarantine: &Quarantine, name: &str) -> Item {
    quarantine.wanted().get(name).unwrap().clone()
}

const A: &str = "aether-edge/default/a";
const B: &str = "aether-edge/default/b";

#[test]
fn a_refused_version_is_replaced_by_the_last_taken_for_every_stream_until_an_edit() {
    let ((quarantine, receiver), counts) = counted();
    assert!(want(&quarantine, |wanted| {
        wanted.put(A, body(1));
        wanted.put(B, body(1));
    }));
    quarantine.taken(
        &[
            (A.to_owned(), wanted(&quarantine, A)),
            (B.to_owned(), wanted(&quarantine, B)),
        ],
        &Overruled::default(),
    );

    want(&quarantine, |wanted| {
        wanted.put(A, body(2));
    });
    assert_eq!(served(&receiver, A), Some(version(2)));
    let refused = wanted(&quarantine, A);
    quarantine.refused(A, &refused, "edge-1", "duplicate domain *", &Overruled::default());
    // Every stream now reads the version taken, under a new publication.
    assert_eq!(served(&receiver, A), Some(version(1)));
    assert_eq!(counts.quarantined(), 1, "counted");
    let refusal = quarantine.refusal(A).expect("a refusal holds");
    assert_eq!(
        (refusal.version, refusal.envoy.as_str(), refusal.error.as_str()),
        (version(2), "edge-1", "duplicate domain *")
    );

    // Others' edits go on being served; the refused version stays out.
    want(&quarantine, |wanted| {
        wanted.put(B, body(3));
    });
    assert_eq!(served(&receiver, B), Some(version(3)));
    assert_eq!(served(&receiver, A), Some(version(1)));
    // Another Envoy refusing the same version changes nothing.
    let before = receiver.borrow().clone().unwrap();
    quarantine.refused(A, &refused, "edge-2", "duplicate domain *", &Overruled::default());
    assert!(Arc::ptr_eq(&before, &receiver.borrow().clone().unwrap()));
    assert_eq!(quarantine.refusal(A).unwrap().envoy, "edge-1");
    assert_eq!(counts.quarantined(), 1, "counted once");

    // An edit of the object lifts it: the new version is served.
    want(&quarantine, |wanted| {
        wanted.put(A, body(4));
    });
    assert_eq!(served(&receiver, A), Some(version(4)));
    assert_eq!(quarantine.refusal(A), None);
}

#[test]
fn a_version_never_taken_is_withdrawn_and_the_object_served_no_host() {
    let (quarantine, receiver) = quarantine();
    want(&quarantine, |wanted| {
        wanted.put(A, body(1));
    });
    quarantine.refused(A, &wanted(&quarantine, A), "edge-1", "bad", &Overruled::default());
    let served = receiver.borrow().clone().unwrap();
    let item = served.get(A).unwrap();
    assert!(item.body.is_empty(), "withdrawn, as the scope says");
    // Removing the object forgets its refusal.
    want(&quarantine, |wanted| {
        wanted.remove(A);
    });
    assert_eq!(quarantine.refusal(A), None);
    assert!(receiver.borrow().as_ref().unwrap().get(A).is_none());
}

#[test]
fn stale_refusals_and_shared_configurations_are_not_quarantined() {
    let (quarantine, receiver) = quarantine();
    want(&quarantine, |wanted| {
        wanted.put(BASE, body(1));
        wanted.put(A, body(1));
    });
    // The plain listener's table carries every host: never held back.
    quarantine.refused(BASE, &wanted(&quarantine, BASE), "edge-1", "bad", &Overruled::default());
    assert_eq!(quarantine.refusal(BASE), None);
    // A refusal of a version an edit already replaced.
    let old = wanted(&quarantine, A);
    want(&quarantine, |wanted| {
        wanted.put(A, body(2));
    });
    quarantine.refused(A, &old, "edge-1", "bad", &Overruled::default());
    assert_eq!(quarantine.refusal(A), None);
    assert_eq!(served(&receiver, A), Some(version(2)));
}

#[test]
fn what_was_taken_of_an_object_gone_is_forgotten() {
    let (quarantine, receiver) = quarantine();
    want(&quarantine, |wanted| {
        wanted.put(A, body(1));
    });
    quarantine.taken(&[(A.to_owned(), wanted(&quarantine, A))], &Overruled::default());
    want(&quarantine, |wanted| {
        wanted.remove(A);
    });
    // Back with a version refused: nothing taken since, so withdrawn.
    want(&quarantine, |wanted| {
        wanted.put(A, body(2));
    });
    quarantine.refused(A, &wanted(&quarantine, A), "edge-1", "bad", &Overruled::default());
    assert_ne!(served(&receiver, A), Some(version(1)));
    assert_ne!(served(&receiver, A), Some(version(2)));
}

#[test]
fn a_version_an_envoy_took_is_not_quarantined_and_its_refuser_quarantines_nothing_more() {
    let (quarantine, receiver) = quarantine();
    let (healthy, broken) = (Overruled::default(), Overruled::default());
    want(&quarantine, |wanted| {
        wanted.put(A, body(1));
    });
    quarantine.taken(&[(A.to_owned(), wanted(&quarantine, A))], &healthy);
    quarantine.refused(A, &wanted(&quarantine, A), "edge-broken", "bad", &broken);
    assert_eq!(quarantine.refusal(A), None);
    assert!(broken.is_set() && !healthy.is_set());
    // Its refusal of an edit nobody took yet is not believed either.
    want(&quarantine, |wanted| {
        wanted.put(A, body(2));
    });
    quarantine.refused(A, &wanted(&quarantine, A), "edge-broken", "bad", &broken);
    assert_eq!(quarantine.refusal(A), None);
    assert_eq!(served(&receiver, A), Some(version(2)));
    // A healthy Envoy's refusal of it is, and the Envoy itself taking the
    // version it refused (a retry) lifts it without overruling it.
    quarantine.refused(A, &wanted(&quarantine, A), "edge-1", "bad", &healthy);
    assert_eq!(served(&receiver, A), Some(version(1)));
    quarantine.taken(&[(A.to_owned(), wanted(&quarantine, A))], &healthy);
    assert_eq!(quarantine.refusal(A), None);
    assert_eq!(served(&receiver, A), Some(version(2)));
    assert!(!healthy.is_set());
}
