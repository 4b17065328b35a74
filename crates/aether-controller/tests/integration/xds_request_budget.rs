//! The binary's xDS server against clients that hold unfinished requests
//! on every stream they may open: the bytes buffered across all streams
//! stay within one budget (`aether_xds::MAX_BUFFERED_REQUEST_BYTES`), and a
//! client sending whole requests is served meanwhile.
//!
//! `AETHER_CONTROLLER_BINARY=PATH` runs another build of the binary (to
//! measure an older one), `XDS_BUDGET_CONNECTIONS=N` with N connections
//! (up to the bound, 1,024); the numbers are printed either way.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use aether_xds::{MAX_BUFFERED_REQUEST_BYTES, MAX_REQUEST_BYTES, MAX_STREAMS_PER_CONNECTION};
use bytes::Bytes;
use futures_util::StreamExt;
use http_body::Frame;
use tonic::codegen::Service;

use crate::common::serving::{Controller, domains, manifest, served_within, wait_until_served};

/// Connections holding unfinished requests (the 40 added 470 MiB).
const CONNECTIONS: usize = 40;
/// The length each stream's request declares: 1 MiB (within
/// `MAX_REQUEST_BYTES`), as the clients did.
const DECLARED: usize = 1 << 20;
/// What each stream sends: the request, one byte short, so it never
/// completes.
const HELD: usize = 5 + DECLARED - 1;
/// An HTTP/2 DATA frame's default largest payload.
const FRAME: usize = 16 * 1024;

/// A stream's request body: the held request (`bytes`) in frames, then
/// nothing, open.
fn held_body(bytes: &Bytes) -> tonic::body::Body {
    let frames: Vec<Result<Frame<Bytes>, Infallible>> = (0..HELD)
        .step_by(FRAME)
        .map(|at| Ok(Frame::data(bytes.slice(at..(at + FRAME).min(HELD)))))
        .collect();
    let stream = futures_util::stream::iter(frames).chain(futures_util::stream::pending());
    tonic::body::Body::new(http_body_util::StreamBody::new(stream))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_requests_on_every_stream_stay_within_the_budget_and_envoy_is_served() {
    let files = [("a.yaml", manifest("a", 2))];
    let controller = match std::env::var_os("AETHER_CONTROLLER_BINARY") {
        Some(binary) => Controller::start_binary(binary.as_ref(), &files, None),
        None => Controller::start(&files, None),
    };
    // The first pass may come before the manifest has settled.
    let deadline = Instant::now() + Duration::from_secs(60);
    while domains(&wait_until_served(controller.addr).await) != ["a.example.com"] {
        assert!(Instant::now() < deadline, "a.yaml not served within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let idle_kb = controller.memory_kb("VmRSS");

    let connections = std::env::var("XDS_BUDGET_CONNECTIONS").map_or(CONNECTIONS, |n| n.parse().unwrap());
    let mut bytes = vec![0u8; HELD];
    const { assert!(DECLARED <= MAX_REQUEST_BYTES) };
    bytes[1..5].copy_from_slice(&(DECLARED as u32).to_be_bytes());
    let bytes = Bytes::from(bytes);
    let started = Instant::now();
    let mut held = Vec::new();
    for _ in 0..connections {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", controller.addr))
            .unwrap()
            .connect()
            .await
            .unwrap();
        for _ in 0..MAX_STREAMS_PER_CONNECTION {
            let mut channel = channel.clone();
            let request = http::Request::post(format!(
                "http://{}/envoy.service.route.v3.RouteDiscoveryService/StreamRoutes",
                controller.addr
            ))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(held_body(&bytes))
            .unwrap();
            held.push(tokio::spawn(async move {
                std::future::poll_fn(|cx| channel.poll_ready(cx)).await.unwrap();
                // The response (headers at once, then the end) is kept: the
                // stream stays open on this side.
                let response = channel.call(request).await;
                std::future::pending::<()>().await;
                drop(response);
            }));
        }
    }
    // Until the server has taken what it will take: its memory stops growing.
    let mut last = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = controller.memory_kb("VmRSS");
        if now <= last + 1024 || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        last = now;
    }
    // A client sending whole requests is served meanwhile.
    let response = served_within(controller.addr, Duration::from_secs(10))
        .await
        .expect("a whole request is answered while the others hold theirs");
    assert_eq!(domains(&response), ["a.example.com"]);

    let peak_kb = controller.memory_kb("VmHWM");
    let added_mib = (peak_kb.saturating_sub(idle_kb)) as f64 / 1024.0;
    eprintln!(
        "{connections} connections x {MAX_STREAMS_PER_CONNECTION} streams holding {HELD} bytes each: \
         idle {:.0} MiB, peak {:.0} MiB, added {added_mib:.0} MiB, in {:.1} s",
        idle_kb as f64 / 1024.0,
        peak_kb as f64 / 1024.0,
        started.elapsed().as_secs_f64()
    );
    // The budget, plus what HTTP/2 may hold unread per connection (its
    // 1 MiB connection window) and 32 MiB of slack for the allocator: 665
    // MiB were added at 40 connections before (and 16 GiB allowed at
    // 1,024); now about 100 MiB at 40, 294 MiB at 1,024.
    let bound_mib = (MAX_BUFFERED_REQUEST_BYTES >> 20) as f64 + connections as f64 + 32.0;
    assert!(
        added_mib < bound_mib,
        "the server took {added_mib:.0} MiB for unfinished requests (bound {bound_mib:.0} MiB)"
    );
    for task in held {
        task.abort();
    }
}
