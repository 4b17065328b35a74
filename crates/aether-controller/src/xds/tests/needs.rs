//! What an object needs of each Envoy moves with its own changes only: an
//! edit of another object, or one added, republishes the shared plain
//! route configuration and the listener, and must not make every other
//! object wait for that publication (its status would be written twice).

use aether_projection::ObjectKey;
use aether_xds::fleet::Need;

use crate::listener::tests::{snapshot as tls_snapshot, tls};
use crate::metrics::Metrics;
use crate::xds::{Publisher, channel};

fn publisher() -> Publisher {
    channel("aether-edge", std::sync::Arc::new(Metrics::new())).0
}

fn needs(publisher: &Publisher, snapshot: &aether_projection::Snapshot, name: &str) -> Vec<Need> {
    let tls = tls(&["a-tls", "b-tls", "c-tls"]);
    publisher.needs(snapshot, &tls.resolutions, &ObjectKey::new("shop", name))
}

/// The need of `type_url` among `needs`.
fn seq(needs: &[Need], name: &str) -> u64 {
    needs.iter().find(|need| need.name == name).expect(name).seq
}

#[test]
fn the_shared_configurations_are_needed_as_first_published_with_the_object() {
    let publisher = publisher();
    let tls = tls(&["a-tls", "b-tls", "c-tls"]);
    let first = tls_snapshot(&["a", "b"]);
    publisher.publish(&first);
    publisher.publish_tls(&first, &tls);
    let a = needs(&publisher, &first, "a");
    let b = needs(&publisher, &first, "b");
    assert_eq!(
        a.len(),
        3,
        "the plain table, the listener, a's chain (its secret is the mesh's): {a:?}"
    );

    // c joins: a new plain table and a new listener, but a and b as they were.
    let second = tls_snapshot(&["a", "b", "c"]);
    publisher.publish(&second);
    publisher.publish_tls(&second, &tls);
    assert_eq!(needs(&publisher, &second, "a"), a);
    assert_eq!(needs(&publisher, &second, "b"), b);
    let c = needs(&publisher, &second, "c");
    let listener = aether_projection::listener::HTTPS_LISTENER;
    assert!(seq(&c, listener) > seq(&a, listener), "{c:?} {a:?}");
    assert!(seq(&c, "aether-edge") > seq(&a, "aether-edge"), "{c:?} {a:?}");

    // b goes: a stays as it was.
    let third = tls_snapshot(&["a", "c"]);
    publisher.publish(&third);
    publisher.publish_tls(&third, &tls);
    assert_eq!(needs(&publisher, &third, "a"), a);
}

#[test]
fn an_objects_edit_moves_its_own_needs() {
    let publisher = publisher();
    let tls = tls(&["a-tls", "b-tls"]);
    let first = tls_snapshot(&["a", "b"]);
    publisher.publish(&first);
    publisher.publish_tls(&first, &tls);
    let a = needs(&publisher, &first, "a");
    let b = needs(&publisher, &first, "b");
    // b's secret no longer usable: its chain leaves the listener.
    let fewer = crate::listener::tests::tls(&["a-tls"]);
    publisher.publish_tls(&first, &fewer);
    let b_plain: Vec<Need> = publisher.needs(&first, &fewer.resolutions, &ObjectKey::new("shop", "b"));
    assert_eq!(b_plain.len(), 1, "the plain table alone: {b_plain:?}");
    // Back: the listener holding b's chain again is newer than the first.
    publisher.publish_tls(&first, &tls);
    let listener = aether_projection::listener::HTTPS_LISTENER;
    assert!(seq(&needs(&publisher, &first, "b"), listener) > seq(&b, listener));
    assert_eq!(needs(&publisher, &first, "a"), a, "a's chain never changed");
}
