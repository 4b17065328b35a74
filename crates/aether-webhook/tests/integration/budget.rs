//! Request bodies share one memory budget: with 4,096 connections allowed,
//! each able to send 3.5 MiB, the bodies read at once must be bounded by
//! something other than the connection count.

use std::sync::Arc;
use std::time::Duration;

use aether_webhook::index::HostIndex;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{review, spec, start, test_limits};

/// A valid review padded (with a top-level field the handler ignores) to
/// about `size` bytes of JSON.
fn padded(size: usize) -> Vec<u8> {
    let mut body = serde_json::to_vec(&review("CREATE", "u", "team", "big", spec(&["big.example.com"]))).unwrap();
    let padding = format!("\"note\":\"{}\",", "x".repeat(size - body.len() - 10));
    body.splice(1..1, padding.into_bytes());
    body
}

fn head(length: usize) -> String {
    format!(
        "POST /validate-virtualhost HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn a_body_waits_for_its_share_of_the_budget_while_small_ones_pass() {
    let mut limits = test_limits();
    // Two bodies of the largest size (64 KiB here) and a small one.
    limits.body_budget_bytes = 160 * 1024;
    let server = start(Arc::new(HostIndex::new()), limits).await;
    let largest = limits.max_body_bytes;

    // Two uploads declare the largest body and send one byte of it.
    let connector = tokio_rustls::TlsConnector::from(Arc::new(server.pki.client_config()));
    let mut slow = Vec::new();
    for _ in 0..2 {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let mut tls = connector
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        tls.write_all(format!("{}{{", head(largest)).as_bytes()).await.unwrap();
        tls.flush().await.unwrap();
        slow.push(tls);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A third as large, sent whole, waits for room: not answered while
    // the two hold their shares (without the budget it is answered in
    // milliseconds).
    let client = server.pki.client();
    let url = server.url("/validate-virtualhost");
    let large = tokio::spawn(
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(padded(largest - 100))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!large.is_finished(), "a body was read beyond the budget");

    // A small review fits in what is left, past the large one waiting.
    let out = server
        .ask(&client, "CREATE", "small", "team", "small", &["small.example.com"])
        .await;
    assert_eq!(out["response"]["allowed"], true, "{out}");

    // The slow ones run out of time (408) and give their shares back: the
    // large body is read.
    for mut tls in slow {
        let mut answer = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(5), tls.read(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 408"));
    }
    let read = tokio::time::timeout(Duration::from_secs(5), large)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(read.status(), 200);
    let out: serde_json::Value = read.json().await.unwrap();
    assert_eq!(out["response"]["allowed"], true, "{out}");
    server.stop().await;
}
