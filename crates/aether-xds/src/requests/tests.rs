//! The budget and the decoder, on bodies fed by the test.

use std::convert::Infallible;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use http_body::Frame;
use http_body_util::StreamBody;
use tonic::Code;

use super::*;
use crate::metrics::Counts;

/// A budget of `limit` bytes and what it counts.
fn budget(limit: usize) -> (Arc<RequestBudget>, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    (RequestBudget::new(limit, counts.clone()), counts)
}

type TestBody = StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// A body that sends `bytes` in 16 KiB frames, then stays open.
fn body(bytes: Vec<u8>) -> TestBody {
    let bytes = Bytes::from(bytes);
    let frames: Vec<Result<Frame<Bytes>, Infallible>> = (0..bytes.len())
        .step_by(16 * 1024)
        .map(|at| Ok(Frame::data(bytes.slice(at..(at + 16 * 1024).min(bytes.len())))))
        .collect();
    StreamBody::new(
        futures_util::stream::iter(frames)
            .chain(futures_util::stream::pending())
            .boxed(),
    )
}

/// `length`'s prefix and `sent` bytes of a message that long.
fn unfinished(length: usize, sent: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; PREFIX + sent];
    bytes[1..5].copy_from_slice(&(length as u32).to_be_bytes());
    bytes
}

fn whole(request: &DiscoveryRequest) -> Vec<u8> {
    let message = request.encode_to_vec();
    let mut bytes = vec![0u8];
    bytes.extend_from_slice(&(message.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&message);
    bytes
}

/// What one poll gives: `None` while it waits.
fn poll(requests: &mut Requests<TestBody>) -> Option<Option<Result<DiscoveryRequest, Status>>> {
    requests.next().now_or_never()
}

#[test]
fn unfinished_requests_on_many_streams_never_take_the_total_past_the_budget() {
    const LIMIT: usize = 256 * 1024;
    let (budget, counts) = budget(LIMIT);
    let mut streams: Vec<Requests<TestBody>> = (0..40)
        .map(|_| Requests::new(body(unfinished(MAX_REQUEST_BYTES, 100 * 1024)), budget.clone()))
        .collect();
    for stream in &mut streams {
        assert!(poll(stream).is_none() || budget.buffered() <= LIMIT);
        assert!(budget.buffered() <= LIMIT, "{} bytes buffered", budget.buffered());
    }
    // The streams that held the most were ended, each told why.
    let mut ended = 0;
    for stream in &mut streams {
        if let Some(Some(Err(status))) = poll(stream) {
            assert_eq!(status.code(), Code::ResourceExhausted, "{status}");
            ended += 1;
        }
    }
    assert!(ended >= 37, "only {ended} of 40 streams ended");
    assert!(counts.streams_refused(Refused::RequestBudget) >= ended, "each counted");
    assert!(budget.buffered() <= LIMIT);

    // With the budget full, a whole request is still decoded: it holds the
    // least, so the largest holder pays.
    let request = DiscoveryRequest {
        resource_names: vec!["aether-edge".to_owned()],
        ..DiscoveryRequest::default()
    };
    let mut envoy = Requests::new(body([whole(&request), whole(&request)].concat()), budget.clone());
    for _ in 0..2 {
        match poll(&mut envoy) {
            Some(Some(Ok(got))) => assert_eq!(got, request),
            other => panic!("{other:?}"),
        }
    }
    assert!(poll(&mut envoy).is_none());

    // Every stream dropped: nothing is counted any more.
    drop((streams, envoy));
    assert_eq!(budget.buffered(), 0);
}

#[test]
fn a_stream_that_alone_holds_the_most_is_the_one_refused() {
    let (budget, counts) = budget(64 * 1024);
    let mut small = Requests::new(body(unfinished(MAX_REQUEST_BYTES, 8 * 1024)), budget.clone());
    assert!(poll(&mut small).is_none());
    let mut large = Requests::new(body(unfinished(MAX_REQUEST_BYTES, 200 * 1024)), budget.clone());
    match poll(&mut large) {
        Some(Some(Err(status))) => assert_eq!(status.code(), Code::ResourceExhausted, "{status}"),
        other => panic!("{other:?}"),
    }
    assert!(poll(&mut large).unwrap().is_none(), "ended");
    assert_eq!(counts.streams_refused(Refused::RequestBudget), 1, "counted");
    // The small one holds its bytes, unharmed.
    assert!(poll(&mut small).is_none());
    assert_eq!(budget.buffered(), PREFIX + 8 * 1024);
}

#[test]
fn a_message_over_the_limit_or_compressed_ends_its_stream() {
    let (budget, counts) = budget(MAX_BUFFERED_REQUEST_BYTES);
    let mut over = Requests::new(body(unfinished(MAX_REQUEST_BYTES + 1, 10)), budget.clone());
    assert_eq!(poll(&mut over).unwrap().unwrap().unwrap_err().code(), Code::OutOfRange);
    assert_eq!(counts.streams_refused(Refused::RequestTooLarge), 1, "counted");
    let mut compressed = unfinished(3, 3);
    compressed[0] = 1;
    let mut compressed = Requests::new(body(compressed), budget.clone());
    assert_eq!(
        poll(&mut compressed).unwrap().unwrap().unwrap_err().code(),
        Code::Internal
    );
    assert_eq!(budget.buffered(), 0);
}

#[test]
fn requests_split_across_frames_anywhere_are_decoded_whole() {
    let (budget, counts) = budget(MAX_BUFFERED_REQUEST_BYTES);
    let requests: Vec<DiscoveryRequest> = (0..3)
        .map(|i| DiscoveryRequest {
            version_info: format!("v{i}"),
            resource_names: vec!["aether-edge".to_owned(); i + 1],
            ..DiscoveryRequest::default()
        })
        .collect();
    let bytes = Bytes::from(requests.iter().flat_map(whole).collect::<Vec<u8>>());
    for size in [1, 3, 7, 40, bytes.len()] {
        let frames: Vec<Result<Frame<Bytes>, Infallible>> = (0..bytes.len())
            .step_by(size)
            .map(|at| Ok(Frame::data(bytes.slice(at..(at + size).min(bytes.len())))))
            .collect();
        let body = StreamBody::new(futures_util::stream::iter(frames).boxed());
        let mut stream = Requests::new(body, budget.clone());
        for request in &requests {
            assert_eq!(
                &poll(&mut stream).unwrap().unwrap().unwrap(),
                request,
                "frames of {size}"
            );
        }
        assert!(poll(&mut stream).unwrap().is_none(), "frames of {size}: the end");
    }
    assert_eq!(budget.buffered(), 0);
    assert!(
        Refused::ALL.iter().all(|why| counts.streams_refused(*why) == 0),
        "none refused"
    );
}
