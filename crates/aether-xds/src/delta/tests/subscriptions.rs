//! Clients that subscribe to too much, or again and again: each costs its
//! own stream, bounded, and the others are served meanwhile.

use super::silent::{first_request, joined_counted, stamped};
use super::*;
use crate::fleet::Fleet;
use subscription::{MAX_SUBSCRIBED_NAME_BYTES, MAX_SUBSCRIBED_NAMES};

/// A stream of `current`'s secrets that took its first sync: `names`.
fn subscribed(
    fleet: &Fleet,
    current: &Current,
    node: &str,
    names: &[&str],
) -> (Arc<Outbox>, crate::fleet::Membership, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let (outbox, membership, node) = joined_counted(fleet, &[(SECRETS, current)], node, counts.clone());
    let mut first = first_request(SECRETS, &node);
    first.resource_names_subscribe = names.iter().map(|name| (*name).to_owned()).collect();
    handle(&outbox, first).unwrap();
    let response = next(&outbox).unwrap();
    handle(&outbox, ack(&response)).unwrap();
    (outbox, membership, counts)
}

#[test]
fn a_subscription_past_its_bound_ends_its_own_stream_and_the_others_are_served() {
    let fleet = Fleet::default();
    let (sender, current) = watch::channel(Some(stamped(&[("a", 1), ("b", 1)])));
    let (other, _other, _) = subscribed(&fleet, &current, "edge-1", &["a"]);
    let (greedy, _greedy, counts) = subscribed(&fleet, &current, "edge-greedy", &["b"]);

    // 10,000 names at once are within the bound: served, to it alone.
    let many: Vec<String> = (0..10_000)
        .map(|i| format!("kubernetes://shop/secret-{i:05}"))
        .collect();
    let names: Vec<&str> = many.iter().map(String::as_str).collect();
    handle(&greedy, subscribe(SECRETS, &names)).unwrap();
    assert!(next(&greedy).is_none(), "none of them is published");
    assert!(next(&other).is_none());

    // Past the bound, in one request or many: its stream is refused,
    // saying why, and another's is served as ever.
    let past: Vec<String> = (0..=MAX_SUBSCRIBED_NAMES).map(|i| format!("n{i}")).collect();
    let mut refused = None;
    for chunk in past.chunks(50_000) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        if let Err(status) = handle(&greedy, subscribe(SECRETS, &chunk)) {
            refused = Some(status);
            break;
        }
    }
    let status = refused.expect("refused past the bound");
    assert_eq!(
        counts.streams_refused(crate::metrics::Refused::Subscription),
        1,
        "counted"
    );
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    assert!(
        status.message().contains(&MAX_SUBSCRIBED_NAMES.to_string()) && status.message().contains(SECRETS),
        "{}",
        status.message()
    );
    sender.send_replace(Some(stamped(&[("a", 2), ("b", 2)])));
    assert_eq!(sent(&next(&other).unwrap()), (vec![("a".into(), version(2))], vec![]));

    // Long names: bounded by their bytes too.
    let (long, _long, _) = subscribed(&fleet, &current, "edge-long", &["a"]);
    let name = "x".repeat(1 << 20);
    let mut refused = false;
    for i in 0..=(MAX_SUBSCRIBED_NAME_BYTES >> 20) {
        if let Err(status) = handle(&long, subscribe(SECRETS, &[&format!("{name}{i}")])) {
            assert_eq!(status.code(), tonic::Code::ResourceExhausted);
            assert!(status.message().contains("bytes"), "{}", status.message());
            refused = true;
            break;
        }
    }
    assert!(refused, "refused past the bytes bound");
}

#[test]
fn resubscribing_in_a_loop_keeps_the_subscription_its_size_and_the_others_are_served() {
    let fleet = Fleet::default();
    let (sender, current) = watch::channel(Some(stamped(&[("a", 1), ("b", 1)])));
    let (other, _other, _) = subscribed(&fleet, &current, "edge-1", &["a"]);
    let (looping, _looping, _) = subscribed(&fleet, &current, "edge-looping", &["b"]);
    for i in 0..20_000 {
        let name = format!("n{i}");
        handle(&looping, subscribe(SECRETS, &[&name, "b"])).unwrap();
        handle(&looping, unsubscribe(SECRETS, &[&name])).unwrap();
        // What it asks anew it is sent again: its own traffic.
        assert_eq!(names(&next(&looping).unwrap()), ["b"]);
    }
    assert_eq!(looping.lock().subscriptions[0].len(), 1, "the names asked for now: b");
    sender.send_replace(Some(stamped(&[("a", 2), ("b", 1)])));
    assert_eq!(sent(&next(&other).unwrap()), (vec![("a".into(), version(2))], vec![]));
}
