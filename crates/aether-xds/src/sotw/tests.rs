//! What a stream holds: nothing per version published while it does not
//! read, and responses that share their version's buffers.

use std::pin::Pin;
use std::task::{Context, Poll};

use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
use http_body::Body;
use prost::Message;

use super::*;
use crate::metrics::Counts;

const ROUTES: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

fn kind(type_url: &'static str, by_name: bool) -> Kind {
    Kind {
        type_url,
        by_name,
        on_names: Arc::new(|_, _| {}),
    }
}

/// A version of `items`, each `(name, fill byte)` a 100 kB resource.
fn resources(items: &[(&str, u8)]) -> Arc<Resources> {
    Arc::new(Resources::new(
        items
            .iter()
            .map(|(name, fill)| ((*name).to_owned(), Bytes::from(vec![*fill; 100_000]).into()))
            .collect(),
    ))
}

/// The one buffer of a resource published as one.
fn buffer(encoded: &Encoded) -> &Bytes {
    match encoded {
        Encoded::Buffer(bytes) => bytes,
        Encoded::Pieces(_) => panic!("pieces, not a buffer"),
    }
}

/// The body of the `index`th item, by name.
fn nth(resources: &Resources, index: usize) -> &Encoded {
    &resources.iter().nth(index).expect("an item at index").1.body
}

/// A stream's body whose client has asked for `names`.
fn asked(kind: Kind, current: &Current, metrics: &Arc<Counts>, names: &[&str]) -> ResponseBody {
    let outbox = Outbox::new(kind, current.clone(), metrics.clone(), Default::default());
    {
        let mut owed = outbox.lock();
        owed.asked = true;
        owed.again = true;
        owed.names = names.iter().map(|name| (*name).to_owned()).collect();
    }
    ResponseBody::stream(outbox)
}

/// The data the body gives now, as hyper would take it when the client's
/// window has room, until it would wait.
fn take(body: &mut ResponseBody) -> Vec<Bytes> {
    let waker = futures_util::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut pieces = Vec::new();
    while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut *body).poll_frame(&mut cx) {
        match frame.into_data() {
            Ok(data) => pieces.push(data),
            Err(_) => break,
        }
    }
    pieces
}

fn decode(pieces: &[Bytes]) -> DiscoveryResponse {
    let bytes: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
    DiscoveryResponse::decode(&bytes[5..]).unwrap()
}

fn shares(pieces: &[Bytes], buffer: &Bytes) -> bool {
    pieces.iter().any(|piece| piece.as_ptr() == buffer.as_ptr())
}

#[test]
fn a_stream_that_does_not_read_owes_only_the_latest_version() {
    let metrics = Arc::new(Counts::default());
    let first = resources(&[("aether-edge", 0)]);
    let (sender, current) = watch::channel(Some(first.clone()));
    let mut body = asked(kind(ROUTES, false), &current, &metrics, &["aether-edge"]);
    let sent = take(&mut body);
    assert!(shares(&sent, buffer(nth(&first, 0))));
    assert_eq!(decode(&sent).nonce, "1");
    assert_eq!(metrics.responses(), 1);
    assert!(take(&mut body).is_empty(), "nothing more is owed");

    // 50 versions while the client does not read (hyper does not poll its
    // body): none is built, none is kept.
    let mut skipped = Vec::new();
    for fill in 1..=50 {
        let version = resources(&[("aether-edge", fill)]);
        skipped.push(Arc::downgrade(&version));
        sender.send(Some(version)).unwrap();
    }
    let latest = skipped.pop().unwrap().upgrade().unwrap();
    assert_eq!(metrics.responses(), 1);
    assert!(
        skipped.iter().all(|version| version.upgrade().is_none()),
        "a version the stream was never sent is still held"
    );

    // When it reads again, it is sent the latest, once.
    let sent = take(&mut body);
    assert!(shares(&sent, buffer(nth(&latest, 0))));
    let response = decode(&sent);
    assert_eq!(response.version_info, latest.version());
    assert_eq!(response.nonce, "2");
    assert_eq!(metrics.responses(), 2);
    assert!(take(&mut body).is_empty());
}

#[test]
fn responses_of_one_version_share_its_buffers() {
    let metrics = Arc::new(Counts::default());
    let routes = resources(&[("aether-edge", 7)]);
    let (_routes_sender, current) = watch::channel(Some(routes.clone()));
    let mut streams: Vec<ResponseBody> = (0..3)
        .map(|_| asked(kind(ROUTES, false), &current, &metrics, &["aether-edge"]))
        .collect();
    for body in &mut streams {
        let sent = take(body);
        assert!(
            shares(&sent, buffer(nth(&routes, 0))),
            "a response copied the configuration"
        );
        // The configuration is most of the response; the rest is small.
        let own: usize = sent
            .iter()
            .filter(|piece| piece.as_ptr() != buffer(nth(&routes, 0)).as_ptr())
            .map(Bytes::len)
            .sum();
        assert!(own < 200, "{own} bytes of a response are its own");
    }

    // SDS: each stream shares the buffers of the secrets it names, only those.
    let secrets = resources(&[("a", 1), ("b", 2), ("c", 3)]);
    let (_secrets_sender, current) = watch::channel(Some(secrets.clone()));
    let by_name = kind(
        "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
        true,
    );
    let mut a_and_c = asked(by_name.clone(), &current, &metrics, &["a", "c"]);
    let mut b = asked(by_name, &current, &metrics, &["b"]);
    let sent = take(&mut a_and_c);
    assert!(shares(&sent, buffer(nth(&secrets, 0))) && shares(&sent, buffer(nth(&secrets, 2))));
    assert!(!shares(&sent, buffer(nth(&secrets, 1))));
    assert_eq!(decode(&sent).resources.len(), 2);
    let sent = take(&mut b);
    assert!(shares(&sent, buffer(nth(&secrets, 1))));
    assert_eq!(decode(&sent).resources.len(), 1);
}

#[test]
fn small_pieces_go_out_gathered_and_large_ones_shared() {
    let small: Vec<Bytes> = (0..100u8).map(|i| Bytes::from(vec![i; 700])).collect();
    let large = Bytes::from(vec![9u8; 100_000]);
    let mut pieces = small.clone();
    pieces.push(large.clone());
    pieces.extend(small.iter().take(3).cloned());
    let mut body = ResponseBody::once(pieces.clone());
    let sent = take(&mut body);
    let expected: Vec<u8> = pieces.iter().flat_map(|piece| piece.iter().copied()).collect();
    let got: Vec<u8> = sent.iter().flat_map(|piece| piece.iter().copied()).collect();
    assert_eq!(got, expected);
    // 100 pieces of 700 bytes fit in 5 frames of at most 16 KiB; the large
    // piece goes alone, as itself; the last three together.
    assert_eq!(
        sent.len(),
        5 + 1 + 1,
        "{:?}",
        sent.iter().map(Bytes::len).collect::<Vec<_>>()
    );
    assert!(
        sent.iter()
            .all(|data| data.len() <= 16 * 1024 || data.as_ptr() == large.as_ptr())
    );
    assert!(shares(&sent, &large));
}
