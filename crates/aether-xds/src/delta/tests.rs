//! Delta subscriptions through a stream's outbox, without a socket: what
//! each request and publication makes the body send.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryResponse;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use prost::Message;
use tokio::sync::watch;

use super::*;
use crate::metrics::Counts;
use crate::resources::{Encoded, Resources};

const LISTENERS: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
const ROUTES: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
const SECRETS: &str = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";

/// One type's publisher.
struct Type {
    sender: watch::Sender<Option<Arc<Resources>>>,
    /// How many times the stream told its names.
    names_told: Arc<AtomicUsize>,
}

impl Type {
    fn publish(&self, resources: Resources) {
        self.sender.send_replace(Some(Arc::new(resources)));
    }

    /// Publishes the last publication changed by `change`.
    fn change(&self, change: impl FnOnce(&mut Resources)) {
        let mut next = self.sender.borrow().as_deref().cloned().unwrap_or_default();
        change(&mut next);
        self.publish(next);
    }
}

/// An outbox serving `type_urls`, in that order, and their publishers.
fn open(type_urls: &[&'static str]) -> (Arc<Outbox>, Vec<Type>, Arc<Counts>) {
    let metrics = Arc::new(Counts::default());
    let mut types = Vec::new();
    let mut served = Vec::new();
    for type_url in type_urls {
        let (sender, current) = watch::channel(None);
        let names_told = Arc::new(AtomicUsize::new(0));
        let told = names_told.clone();
        let kind = Kind {
            type_url,
            by_name: false,
            on_names: Arc::new(move |_, _| {
                told.fetch_add(1, Ordering::Relaxed);
            }),
        };
        served.push(Served {
            kind,
            current,
            quarantine: None,
        });
        types.push(Type { sender, names_told });
    }
    let state = State::new(served.len());
    let outbox = Arc::new(Outbox {
        types: served,
        state: Mutex::new(state),
        metrics: metrics.clone(),
        signals: Signals::default(),
        fleet: crate::fleet::Fleet::default(),
    });
    (outbox, types, metrics)
}

/// `(name, fill)` each a 1 kB buffer.
fn resources(items: &[(&str, u8)]) -> Resources {
    Resources::new(
        items
            .iter()
            .map(|(name, fill)| ((*name).to_owned(), body(*fill)))
            .collect(),
    )
}

fn body(fill: u8) -> Encoded {
    Encoded::Buffer(Bytes::from(vec![fill; 1000]))
}

fn subscribe(type_url: &str, names: &[&str]) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: type_url.to_owned(),
        resource_names_subscribe: names.iter().map(|name| (*name).to_owned()).collect(),
        ..DeltaDiscoveryRequest::default()
    }
}

fn unsubscribe(type_url: &str, names: &[&str]) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: type_url.to_owned(),
        resource_names_unsubscribe: names.iter().map(|name| (*name).to_owned()).collect(),
        ..DeltaDiscoveryRequest::default()
    }
}

fn ack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: response.type_url.clone(),
        response_nonce: response.nonce.clone(),
        ..DeltaDiscoveryRequest::default()
    }
}

fn nack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        error_detail: Some(RpcStatus {
            code: 3,
            message: "rejected".into(),
            details: Vec::new(),
        }),
        ..ack(response)
    }
}

/// The next response the body would send, decoded.
fn one(outbox: &Outbox) -> Option<DeltaDiscoveryResponse> {
    let pieces = outbox.next()?;
    let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
    Some(DeltaDiscoveryResponse::decode(&bytes[5..]).expect("a DeltaDiscoveryResponse"))
}

/// The next responses of one sync (a large one is several) as one, with
/// the last one's nonce.
fn next(outbox: &Outbox) -> Option<DeltaDiscoveryResponse> {
    let mut response = one(outbox)?;
    let index = outbox.index(&response.type_url)?;
    while !outbox.lock().pending[index].is_empty() {
        let Some(more) = one(outbox) else { break };
        response.resources.extend(more.resources);
        response.removed_resources.extend(more.removed_resources);
        response.nonce = more.nonce;
    }
    Some(response)
}

/// `(name, version)` of what `response` puts, and the names it removes.
fn sent(response: &DeltaDiscoveryResponse) -> (Vec<(String, String)>, Vec<String>) {
    let put = response
        .resources
        .iter()
        .map(|resource| (resource.name.clone(), resource.version.clone()))
        .collect();
    (put, response.removed_resources.clone())
}

fn names(response: &DeltaDiscoveryResponse) -> Vec<&str> {
    response
        .resources
        .iter()
        .map(|resource| resource.name.as_str())
        .collect()
}

fn version(fill: u8) -> String {
    crate::resources::version_of(&[fill; 1000])
}

#[test]
fn a_wildcard_gets_everything_then_only_what_changed_and_what_went() {
    let (outbox, types, _) = open(&[SECRETS]);
    types[0].publish(resources(&[("a", 1), ("b", 2), ("c", 3)]));
    assert!(next(&outbox).is_none(), "nothing before the first request");
    handle(&outbox, subscribe(SECRETS, &[])).unwrap();
    let first = next(&outbox).unwrap();
    assert_eq!(first.type_url, SECRETS);
    assert_eq!(
        sent(&first),
        (
            vec![
                ("a".into(), version(1)),
                ("b".into(), version(2)),
                ("c".into(), version(3))
            ],
            vec![]
        )
    );
    // The bodies are the published ones.
    assert_eq!(first.resources[1].resource.as_ref().unwrap().value, vec![2; 1000]);
    assert_eq!(first.resources[1].resource.as_ref().unwrap().type_url, SECRETS);
    assert!(next(&outbox).is_none());
    handle(&outbox, ack(&first)).unwrap();
    assert!(next(&outbox).is_none());

    types[0].change(|resources| {
        resources.put("b", body(20));
        resources.remove("c");
        resources.put("d", body(4));
    });
    let second = next(&outbox).unwrap();
    assert_eq!(
        sent(&second),
        (
            vec![("b".into(), version(20)), ("d".into(), version(4))],
            vec!["c".into()]
        )
    );
    assert_ne!(second.nonce, first.nonce);
    // The same publication again owes nothing.
    types[0].change(|_| {});
    assert!(next(&outbox).is_none());
}

#[test]
fn named_subscriptions_get_their_names_and_removals_of_what_they_hold() {
    let (outbox, types, _) = open(&[SECRETS]);
    types[0].publish(resources(&[("a", 1), ("b", 2), ("c", 3)]));
    handle(&outbox, subscribe(SECRETS, &["a", "c", "missing"])).unwrap();
    assert_eq!(names(&next(&outbox).unwrap()), ["a", "c"]);

    // Another's change: nothing; its own: that.
    types[0].change(|resources| {
        resources.put("b", body(20));
    });
    assert!(next(&outbox).is_none());
    types[0].change(|resources| {
        resources.put("a", body(10));
    });
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![("a".into(), version(10))], vec![]));

    // Unsubscribed: its changes and its removal are no longer sent.
    handle(&outbox, unsubscribe(SECRETS, &["a"])).unwrap();
    types[0].change(|resources| {
        resources.put("a", body(11));
    });
    assert!(next(&outbox).is_none());
    types[0].change(|resources| {
        resources.remove("a");
        resources.remove("c");
    });
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![], vec!["c".into()]));

    // A name subscribed later is sent at once; one published later, when it is.
    handle(&outbox, subscribe(SECRETS, &["b"])).unwrap();
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![("b".into(), version(20))], vec![]));
    types[0].change(|resources| {
        resources.put("missing", body(5));
    });
    assert_eq!(names(&next(&outbox).unwrap()), ["missing"]);
    // What is removed and was never sent is not told.
    handle(&outbox, subscribe(SECRETS, &["never"])).unwrap();
    assert!(next(&outbox).is_none());
}

#[test]
fn a_reconnecting_envoy_is_not_sent_what_it_has_and_is_told_what_went() {
    let (outbox, types, _) = open(&[LISTENERS]);
    types[0].publish(resources(&[("a", 1), ("b", 2), ("c", 3)]));
    let mut request = subscribe(LISTENERS, &[]);
    request.initial_resource_versions = HashMap::from([
        ("a".to_owned(), version(1)),
        ("b".to_owned(), "an-old-version".to_owned()),
        ("gone".to_owned(), "v".to_owned()),
    ]);
    handle(&outbox, request).unwrap();
    assert_eq!(
        sent(&next(&outbox).unwrap()),
        (
            vec![("b".into(), version(2)), ("c".into(), version(3))],
            vec!["gone".into()]
        )
    );

    // Named: the same, among the names it asks for.
    let (outbox, types, _) = open(&[SECRETS]);
    types[0].publish(resources(&[("a", 1), ("b", 2)]));
    let mut request = subscribe(SECRETS, &["a", "b", "gone"]);
    request.initial_resource_versions = HashMap::from([
        ("a".to_owned(), version(1)),
        ("b".to_owned(), version(2)),
        ("gone".to_owned(), "v".to_owned()),
        ("not-asked".to_owned(), "v".to_owned()),
    ]);
    handle(&outbox, request).unwrap();
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![], vec!["gone".into()]));
    // Holding everything at the current versions: an empty first answer,
    // then nothing until a change.
    let (outbox, types, _) = open(&[SECRETS]);
    types[0].publish(resources(&[("a", 1)]));
    let mut request = subscribe(SECRETS, &["a"]);
    request.initial_resource_versions = HashMap::from([("a".to_owned(), version(1))]);
    handle(&outbox, request).unwrap();
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![], vec![]));
    assert!(next(&outbox).is_none());
    types[0].change(|resources| {
        resources.put("a", body(9));
    });
    assert_eq!(names(&next(&outbox).unwrap()), ["a"]);
}

#[test]
fn a_nack_is_counted_and_its_versions_are_not_sent_again() {
    let (outbox, types, metrics) = open(&[ROUTES]);
    types[0].publish(resources(&[("aether-edge", 1)]));
    handle(&outbox, subscribe(ROUTES, &["aether-edge"])).unwrap();
    let first = next(&outbox).unwrap();
    // An older nonce is stale: not counted.
    let mut stale = nack(&first);
    stale.response_nonce = "0".into();
    handle(&outbox, stale).unwrap();
    assert_eq!(metrics.refused(), 0);
    handle(&outbox, nack(&first)).unwrap();
    assert_eq!(metrics.refused(), 1);
    assert!(next(&outbox).is_none(), "the rejected version is not sent again");
    types[0].change(|resources| {
        resources.put("aether-edge", body(2));
    });
    assert_eq!(
        sent(&next(&outbox).unwrap()),
        (vec![("aether-edge".into(), version(2))], vec![])
    );
    assert_eq!(metrics.responses(), 2);
}

#[test]
fn an_unread_stream_holds_only_the_latest_publication() {
    let (outbox, types, metrics) = open(&[SECRETS]);
    types[0].publish(resources(&[("a", 0)]));
    handle(&outbox, subscribe(SECRETS, &[])).unwrap();
    next(&outbox).unwrap();
    // A hundred publications while the body is not polled.
    for fill in 1..=100u8 {
        types[0].change(|resources| {
            resources.put(format!("r{fill:03}"), body(fill));
            resources.put("a", body(fill));
        });
    }
    let response = next(&outbox).unwrap();
    assert_eq!(response.resources.len(), 101);
    let a = response.resources.iter().find(|resource| resource.name == "a").unwrap();
    assert_eq!(a.version, version(100));
    assert!(next(&outbox).is_none());
    assert_eq!(metrics.responses(), 2);
    // What the stream keeps is the one publication it synced with.
    let state = outbox.lock();
    let current = types[0].sender.borrow().clone().unwrap();
    assert!(state.subscriptions[0].synced_with(&current));
}

#[test]
fn a_change_of_one_of_ten_thousand_sends_one() {
    let (outbox, types, _) = open(&[ROUTES]);
    let all: Vec<(String, Encoded)> = (0..10_000)
        .map(|i| (format!("aether-edge/shop/vh{i:05}"), body((i % 250) as u8)))
        .collect();
    types[0].publish(Resources::new(all));
    let names: Vec<String> = (0..10_000).map(|i| format!("aether-edge/shop/vh{i:05}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    handle(&outbox, subscribe(ROUTES, &names)).unwrap();
    assert_eq!(next(&outbox).unwrap().resources.len(), 10_000);
    types[0].change(|resources| {
        resources.put("aether-edge/shop/vh04321", body(251));
    });
    assert_eq!(
        sent(&next(&outbox).unwrap()),
        (vec![("aether-edge/shop/vh04321".into(), version(251))], vec![])
    );
    types[0].change(|resources| {
        resources.remove("aether-edge/shop/vh00000");
    });
    assert_eq!(
        sent(&next(&outbox).unwrap()),
        (vec![], vec!["aether-edge/shop/vh00000".into()])
    );
}

#[test]
fn listeners_go_before_routes_before_secrets_and_nonces_are_per_response() {
    let (outbox, types, metrics) = open(&[LISTENERS, ROUTES, SECRETS]);
    for (index, type_url) in [SECRETS, ROUTES, LISTENERS].into_iter().enumerate() {
        handle(&outbox, subscribe(type_url, &[])).unwrap();
        types[2 - index].publish(resources(&[("x", index as u8)]));
    }
    let order: Vec<(String, String)> = std::iter::from_fn(|| next(&outbox))
        .map(|response| (response.type_url, response.nonce))
        .collect();
    assert_eq!(
        order,
        [
            (LISTENERS.to_owned(), "1".to_owned()),
            (ROUTES.to_owned(), "2".to_owned()),
            (SECRETS.to_owned(), "3".to_owned())
        ]
    );
    // An ACK names its type's nonce: one of another type's is stale.
    let mut nack_of_routes = subscribe(ROUTES, &[]);
    nack_of_routes.response_nonce = "3".into();
    nack_of_routes.error_detail = Some(RpcStatus::default());
    handle(&outbox, nack_of_routes).unwrap();
    assert_eq!(metrics.refused(), 0);
}

#[test]
fn types_not_served_are_ignored_on_the_aggregated_stream_and_end_a_stream_of_one_type() {
    let (outbox, types, _) = open(&[LISTENERS, ROUTES, SECRETS]);
    let clusters = subscribe("type.googleapis.com/envoy.config.cluster.v3.Cluster", &[]);
    handle(&outbox, clusters.clone()).unwrap();
    handle(&outbox, clusters.clone()).unwrap();
    assert_eq!(outbox.lock().unknown.len(), 1, "warned about once");
    types[1].publish(resources(&[("aether-edge", 1)]));
    handle(&outbox, subscribe(ROUTES, &["aether-edge"])).unwrap();
    assert_eq!(names(&next(&outbox).unwrap()), ["aether-edge"]);

    let (one, _, _) = open(&[ROUTES]);
    let status = handle(&one, clusters).unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    // A request that says no type is the stream's.
    handle(&one, subscribe("", &["aether-edge"])).unwrap();
}

#[test]
fn names_are_told_once_per_distinct_subscription() {
    let (outbox, types, _) = open(&[ROUTES]);
    types[0].publish(resources(&[("aether-edge", 1)]));
    handle(&outbox, subscribe(ROUTES, &["aether-edge"])).unwrap();
    let first = next(&outbox).unwrap();
    for _ in 0..3 {
        handle(&outbox, ack(&first)).unwrap();
    }
    handle(&outbox, subscribe(ROUTES, &["aether-edge"])).unwrap();
    assert_eq!(types[0].names_told.load(Ordering::Relaxed), 1);
    handle(&outbox, subscribe(ROUTES, &["other"])).unwrap();
    handle(&outbox, unsubscribe(ROUTES, &["other"])).unwrap();
    assert_eq!(types[0].names_told.load(Ordering::Relaxed), 3);
}

#[test]
fn the_wildcard_can_be_asked_for_and_dropped_by_name() {
    let (outbox, types, _) = open(&[LISTENERS]);
    types[0].publish(resources(&[("a", 1), ("b", 2)]));
    handle(&outbox, subscribe(LISTENERS, &["a"])).unwrap();
    assert_eq!(names(&next(&outbox).unwrap()), ["a"]);
    // Asked for while one it never had goes and one comes: that one, and
    // no removal of what it never had.
    types[0].change(|resources| {
        resources.put("c", body(5));
        resources.put("gone", body(6));
    });
    assert!(next(&outbox).is_none());
    handle(&outbox, subscribe(LISTENERS, &["*"])).unwrap();
    types[0].change(|resources| {
        resources.remove("gone");
        resources.put("d", body(7));
    });
    assert_eq!(
        sent(&next(&outbox).unwrap()),
        (
            vec![
                ("b".into(), version(2)),
                ("c".into(), version(5)),
                ("d".into(), version(7))
            ],
            vec![]
        )
    );
    handle(&outbox, unsubscribe(LISTENERS, &["*"])).unwrap();
    types[0].change(|resources| {
        resources.put("b", body(3));
        resources.put("a", body(4));
        resources.remove("c");
    });
    assert_eq!(sent(&next(&outbox).unwrap()), (vec![("a".into(), version(4))], vec![]));
}

#[test]
fn a_large_sync_goes_in_batches_and_a_refused_batch_again_a_resource_at_a_time() {
    let (outbox, types, metrics) = open(&[SECRETS]);
    let items: Vec<(String, u8)> = (0..1200).map(|i| (format!("r{i:04}"), (i % 200) as u8)).collect();
    let items: Vec<(&str, u8)> = items.iter().map(|(name, fill)| (name.as_str(), *fill)).collect();
    types[0].publish(resources(&items));
    handle(&outbox, subscribe(SECRETS, &[])).unwrap();
    // 1,200 resources of 1 kB: batches of at most 500 and 1 MiB.
    let batches: Vec<DeltaDiscoveryResponse> = std::iter::from_fn(|| one(&outbox)).collect();
    let sizes: Vec<usize> = batches.iter().map(|batch| batch.resources.len()).collect();
    assert_eq!(sizes, [500, 500, 200]);
    // Envoy refuses the second: its 500 come again, one per response.
    handle(&outbox, ack(&batches[0])).unwrap();
    handle(&outbox, nack(&batches[1])).unwrap();
    handle(&outbox, ack(&batches[2])).unwrap();
    assert_eq!(metrics.refused(), 1);
    let again: Vec<DeltaDiscoveryResponse> = std::iter::from_fn(|| one(&outbox)).collect();
    assert_eq!(again.len(), 500);
    assert!(again.iter().all(|response| response.resources.len() == 1));
    let names: Vec<&str> = again
        .iter()
        .map(|response| response.resources[0].name.as_str())
        .collect();
    let refused: Vec<&str> = batches[1]
        .resources
        .iter()
        .map(|resource| resource.name.as_str())
        .collect();
    assert_eq!(names, refused);
    // One alone refused stays refused until it changes.
    handle(&outbox, nack(&again[7])).unwrap();
    assert!(one(&outbox).is_none());
}

#[test]
fn what_envoy_holds_follows_its_answers() {
    let (outbox, types, _) = open(&[ROUTES]);
    let item_seq = |name: &str| types[0].sender.borrow().as_ref().unwrap().get(name).unwrap().seq;
    let need = |name: &str, seq: u64| Need {
        type_url: ROUTES,
        name: name.to_owned(),
        seq,
    };
    let mut first = resources(&[("a", 1), ("b", 2)]);
    first.stamp();
    types[0].publish(first);
    assert_eq!(outbox.holds(&need("a", item_seq("a"))), Holds::NotYet, "not asked yet");
    handle(&outbox, subscribe(ROUTES, &[])).unwrap();
    let response = next(&outbox).unwrap();
    assert_eq!(
        outbox.holds(&need("a", item_seq("a"))),
        Holds::NotYet,
        "not answered yet"
    );
    handle(&outbox, ack(&response)).unwrap();
    assert_eq!(outbox.holds(&need("a", item_seq("a"))), Holds::Yes);
    assert_eq!(outbox.holds(&need("b", item_seq("b"))), Holds::Yes);

    // b's edit, refused: b is refused, a still held.
    types[0].change(|next| {
        next.put("b", body(3));
        next.stamp();
    });
    let response = next(&outbox).unwrap();
    assert_eq!(outbox.holds(&need("b", item_seq("b"))), Holds::NotYet);
    handle(&outbox, nack(&response)).unwrap();
    assert_eq!(
        outbox.holds(&need("b", item_seq("b"))),
        Holds::Refused("rejected".into())
    );
    assert_eq!(outbox.holds(&need("a", item_seq("a"))), Holds::Yes);

    // b again, taken.
    types[0].change(|next| {
        next.put("b", body(4));
        next.stamp();
    });
    let response = next(&outbox).unwrap();
    handle(&outbox, ack(&response)).unwrap();
    assert_eq!(outbox.holds(&need("b", item_seq("b"))), Holds::Yes);

    // A type the stream does not serve.
    let listener = Need {
        type_url: LISTENERS,
        name: "l".into(),
        seq: 1,
    };
    assert_eq!(outbox.holds(&listener), Holds::NotServed);
}

mod churn;
mod quarantine;
mod silent;
mod subscriptions;
