//! HTTP/1.1 over TCP: timeouts, the bound and eviction, writes that make
//! no progress, shutdown.

use std::time::Duration;

use aether_http_server::CloseReason;
use tokio::io::AsyncWriteExt;

use crate::common::{HTTP1, closed_within, config, connect, get, start};

#[tokio::test]
async fn a_silent_connection_and_a_trickling_head_are_closed_but_an_idle_keep_alive_lasts_its_idle_timeout() {
    let mut config = config(HTTP1);
    config.idle_timeout = Duration::from_secs(3);
    let server = start(config, None).await;

    let mut silent = connect(server.addr).await;
    let mut trickling = connect(server.addr).await;
    trickling.write_all(b"GET / HTTP/1.1\r\nhost:").await.unwrap();
    let mut kept = connect(server.addr).await;
    assert!(get(&mut kept, "/").await.ends_with("ok"));

    assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
    assert!(closed_within(&mut trickling, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::FirstRequestTimeout), 2);
    // Idle past the header timeout (300 ms): still open, still served.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(get(&mut kept, "/").await.ends_with("ok"));
    // A head that starts on a connection that has served one is timed
    // from its first byte.
    kept.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    assert!(closed_within(&mut kept, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::HeaderTimeout), 1);

    let mut idle = connect(server.addr).await;
    assert!(get(&mut idle, "/").await.ends_with("ok"));
    assert!(closed_within(&mut idle, Duration::from_secs(10)).await);
    assert_eq!(server.metrics.closed(CloseReason::IdleTimeout), 1);
}

#[tokio::test]
async fn at_the_bound_idle_connections_make_room_silent_ones_first_and_busy_ones_are_kept() {
    let mut config = config(HTTP1);
    config.max_connections = 3;
    config.first_request_timeout = Duration::from_secs(30);
    config.idle_timeout = Duration::from_secs(30);
    let server = start(config, None).await;

    let mut busy = connect(server.addr).await;
    busy.write_all(b"GET /hold HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    let mut served = connect(server.addr).await;
    assert!(get(&mut served, "/").await.ends_with("ok"));
    let mut silent = connect(server.addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A fourth: the silent connection makes room, although it is the newest
    // (once it has had its second to speak), and the served one is kept.
    let mut fourth = connect(server.addr).await;
    assert!(get(&mut fourth, "/").await.ends_with("ok"));
    assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
    // A fifth: no silent one left; the one idle the longest goes.
    let mut fifth = connect(server.addr).await;
    assert!(get(&mut fifth, "/").await.ends_with("ok"));
    assert!(closed_within(&mut served, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::Evicted), 2);

    // Every connection busy: a newcomer waits (unanswered), and is served
    // as soon as one of them finishes.
    fourth
        .write_all(b"GET /hold HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    fifth
        .write_all(b"GET /hold HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let addr = server.addr;
    let waiting = tokio::spawn(async move {
        let mut sixth = connect(addr).await;
        get(&mut sixth, "/").await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "served beyond the bound with every connection busy"
    );
    assert_eq!(server.metrics.closed(CloseReason::Evicted), 2);
    // One /hold answers: its connection is idle, and makes room.
    server.release();
    let response = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("served once a connection went idle")
        .unwrap();
    assert!(response.ends_with("ok"));
    assert!(closed_within(&mut busy, Duration::from_secs(5)).await);
    assert_eq!(server.metrics.closed(CloseReason::Evicted), 3);
}

#[tokio::test]
async fn a_client_that_does_not_read_is_closed_after_the_write_timeout() {
    let mut config = config(HTTP1);
    config.write_timeout = Duration::from_millis(500);
    let server = start(config, None).await;
    let mut reader = connect(server.addr).await;
    reader
        .write_all(b"GET /big HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    // Never reads: the socket buffers fill, the server's writes wait, and
    // the connection is closed although a request is in flight.
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        while server.metrics.closed(CloseReason::WriteTimeout) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "a connection whose client does not read is still open after 20 s"
    );
}

#[tokio::test]
async fn shutdown_finishes_the_request_in_flight_closes_idle_connections_and_refuses_new_ones() {
    let mut server = start(config(HTTP1), None).await;
    let mut idle = connect(server.addr).await;
    assert!(get(&mut idle, "/").await.ends_with("ok"));
    let mut busy = connect(server.addr).await;
    busy.write_all(b"GET /hold HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;

    server.stop();
    assert!(closed_within(&mut idle, Duration::from_secs(5)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
    server.release();
    let mut response = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_end(&mut busy, &mut response),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(String::from_utf8_lossy(&response).ends_with("held"));
    tokio::time::timeout(Duration::from_secs(5), server.task)
        .await
        .expect("the server stops once its last request is done")
        .unwrap();
}

#[tokio::test]
async fn shutdown_drops_what_is_still_open_after_the_grace_period() {
    let mut config = config(HTTP1);
    config.shutdown_grace = Duration::from_millis(300);
    let mut server = start(config, None).await;
    let mut busy = connect(server.addr).await;
    busy.write_all(b"GET /hold HTTP/1.1\r\nhost: test\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.stop();
    tokio::time::timeout(Duration::from_secs(5), server.task)
        .await
        .expect("the server stops after its grace period")
        .unwrap();
    assert!(closed_within(&mut busy, Duration::from_secs(1)).await);
}

/// Sends `head` in one write and reads the response's status line.
async fn status_of_head(addr: std::net::SocketAddr, head: &[u8]) -> String {
    use tokio::io::AsyncReadExt;
    let mut stream = connect(addr).await;
    stream.write_all(head).await.unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !response.windows(2).any(|w| w == b"\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("an answer within 10 s");
    let text = String::from_utf8_lossy(&response).into_owned();
    text.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_head_above_the_limit_is_refused_even_when_it_arrives_in_one_burst() {
    // The webhook's limit.
    let server = start(
        config(aether_http_server::Protocol::Http1 {
            max_header_bytes: 64 * 1024,
        }),
        None,
    )
    .await;
    let head_of = |filler: usize| {
        let mut head = b"GET / HTTP/1.1\r\nhost: test\r\n".to_vec();
        // Headers of 1,000 bytes each: within hyper's 100 headers (each
        // at most 100 KiB: a head of few large ones is no different).
        for i in 0..filler.div_ceil(1_000) {
            head.extend_from_slice(format!("x-fill-{i:03}: {}\r\n", "a".repeat(985)).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        head
    };
    let within = head_of(60 * 1_000);
    assert!(within.len() < 64 * 1024);
    assert_eq!(status_of_head(server.addr, &within).await, "HTTP/1.1 200 OK");
    // About 100 KB, in one write.
    let above = head_of(99 * 1_000);
    assert!(above.len() > 64 * 1024);
    assert_eq!(
        status_of_head(server.addr, &above).await,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
}

#[tokio::test]
async fn a_transfer_coding_other_than_chunked_is_refused_not_read_as_plain() {
    let server = start(config(HTTP1), None).await;
    let chunked = b"POST / HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert_eq!(status_of_head(server.addr, chunked).await, "HTTP/1.1 200 OK");
    for coding in [
        "gzip, chunked",
        "deflate,chunked",
        "chunked, chunked",
        "x-custom , chunked",
    ] {
        let request =
            format!("POST / HTTP/1.1\r\nhost: test\r\ntransfer-encoding: {coding}\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n");
        assert_eq!(
            status_of_head(server.addr, request.as_bytes()).await,
            "HTTP/1.1 501 Not Implemented",
            "{coding}"
        );
    }
}
