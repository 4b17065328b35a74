//! The controller binary's xDS server under connection floods: idle
//! connections that never send the HTTP/2 preface, and more connections
//! than the process has file descriptors for.

use std::time::Duration;

use crate::common::serving::{
    self, Controller, closed_within, domains, idle_connections, manifest, served_within, wait_until_served,
};

/// 1,100 idle TCP connections that never send the HTTP/2 preface used to
/// fill the 1,024 connections served and lock every real client out
/// (DEADLINE_EXCEEDED), with no timeout. A real client is still served at
/// once, and the silent connections are closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_send_the_preface_lock_no_client_out_and_are_closed() {
    let controller = Controller::start(&[("a.yaml", manifest("a", 2))], None);
    wait_until_served(controller.addr).await;

    let idle = idle_connections(controller.addr, 1100).await;
    // Give the server time to take them all in.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for attempt in 0..3 {
        let response = served_within(controller.addr, Duration::from_secs(5))
            .await
            .unwrap_or_else(|err| panic!("client {attempt}, with 1,100 idle connections open: {err}"));
        assert_eq!(domains(&response), ["a.example.com"]);
    }
    // Every silent connection is closed: evicted for the clients above, or
    // when its time to send the preface and a first request runs out.
    let closed = closed_within(idle, Duration::from_secs(30)).await;
    assert_eq!(closed, 1100, "silent connections still open after 30 s");
}

/// Under a file-descriptor limit of 1,024, 1,100 connections used to make
/// accept fail with EMFILE in a loop that spun a whole core (730 error lines
/// in 30 s), and the manifest listing then failed too. Now: no spinning, no
/// accept errors, the manifests are still read (a new object is served),
/// and clients are served during the flood and after it. (The bound is
/// fitted under the limit, 1,024 less 256 for the rest of the process, so
/// connections alone no longer exhaust it; accept's back-off itself meets
/// a real EMFILE in `aether-http-server`'s tests/emfile.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_descriptor_limit_a_flood_neither_spins_nor_stops_the_manifest_listing() {
    let controller = Controller::start(&[("a.yaml", manifest("a", 2))], Some(1024));
    wait_until_served(controller.addr).await;

    let idle = idle_connections(controller.addr, 1100).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // CPU over a 3 s window: a loop retrying accept without pause takes a
    // whole core (3 s); waiting takes next to nothing.
    let ticks_per_second = serving::clock_ticks_per_second();
    let before = controller.cpu_ticks();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let used = (controller.cpu_ticks() - before) as f64 / ticks_per_second as f64;
    assert!(used < 0.6, "{used:.2} s of CPU in 3 s with 1,100 connections open");

    // The manifest directory is still listed and read: a new object is served.
    controller.write("b.yaml", &manifest("b", 2));
    let mut stream = tokio::time::timeout(Duration::from_secs(10), serving::open(controller.addr))
        .await
        .expect("a client connects within 10 s during the flood")
        .unwrap();
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let response = stream.next().await.unwrap();
            if domains(&response).contains(&"b.example.com".to_owned()) {
                return response;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "the new manifest was not served within 20 s");
    // The bound was fitted under the limit, said once at start.
    let fitted = controller.log_lines_with("the file descriptor limit leaves room");
    assert_eq!(fitted.len(), 1, "{fitted:?}");
    assert!(fitted[0].contains("bound=768"), "{fitted:?}");
    // Nothing ran out of descriptors: not accept, not the manifest listing
    // (before: "cannot list: Too many open files").
    let errors = controller.log_lines_with("Too many open files");
    assert!(
        errors.is_empty(),
        "{} log lines about running out of descriptors, the first: {:?}",
        errors.len(),
        errors.first()
    );

    // After the flood: served again.
    drop(idle);
    drop(stream);
    let response = served_within(controller.addr, Duration::from_secs(10)).await.unwrap();
    assert_eq!(domains(&response), ["a.example.com", "b.example.com"]);
}
