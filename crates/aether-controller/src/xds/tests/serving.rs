//! The xDS server on the shared listener: its bound, timeouts, shutdown
//! and request size, against envoy-types' tonic client on 127.0.0.1.

use aether_http_server::{CloseReason, ListenerMetrics};
use aether_xds::listener_config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

#[tokio::test]
async fn a_connection_beyond_the_bound_waits_until_one_closes() {
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = channel("aether-edge", metrics.clone());
    publisher.publish(&snapshot(&["a.example.com"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve_with(
        listener,
        listener_config(1),
        ListenerMetrics::default(),
        std::future::pending(),
    ));

    let (first_requests, mut first) = open(addr).await;
    first_requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    assert_eq!(domains(&next(&mut first).await), ["a.example.com"]);

    // The second connection is not served while the first is open...
    let second = tokio::spawn(async move {
        let (requests, mut responses) = open(addr).await;
        requests.send(request(&["aether-edge"], "", "")).await.unwrap();
        let response = next(&mut responses).await;
        (requests, response)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "a second connection was served beyond the bound of 1"
    );
    assert_eq!(metrics.xds_streams.get(), 1);

    // ...and is once it closes.
    drop((first_requests, first));
    let (_requests, response) = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("served within 10 s of the first closing")
        .unwrap();
    assert_eq!(domains(&response), ["a.example.com"]);
}

#[tokio::test]
async fn on_shutdown_every_stream_ends_with_unavailable_and_the_server_returns() {
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = channel("aether-edge", metrics.clone());
    publisher.publish(&snapshot(&["a.example.com"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server =
        tokio::spawn(
            service.serve_with(listener, listener_config(8), metrics.xds_listener.clone(), async move {
                let _ = stopped.await;
            }),
        );
    let (requests, mut responses) = open(addr).await;
    requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    assert_eq!(domains(&next(&mut responses).await), ["a.example.com"]);

    stop.send(()).unwrap();
    // Envoy sees its stream end and goes to another replica at once,
    // rather than waiting for the connection to be dropped.
    let status = tokio::time::timeout(Duration::from_secs(10), responses.message())
        .await
        .expect("the stream ends within 10 s")
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status}");
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server returns within 10 s")
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert_eq!(metrics.xds_streams.get(), 0);
}

/// A connection that sends nothing, or only the HTTP/2 preface, is closed
/// once its time for a first stream runs out; one whose streams have ended
/// is closed once idle. (The binary's defaults: 10 s and 300 s;
/// tests/xds_floods.rs meets them with 1,100 silent connections.)
#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = channel("aether-edge", metrics.clone());
    publisher.publish(&snapshot(&["a.example.com"]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = listener_config(8);
    config.first_request_timeout = Duration::from_millis(300);
    config.idle_timeout = Duration::from_millis(300);
    tokio::spawn(service.serve_with(listener, config, metrics.xds_listener.clone(), std::future::pending()));

    let silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut preface_only = tokio::net::TcpStream::connect(addr).await.unwrap();
    // The preface and an empty SETTINGS frame, then nothing.
    preface_only
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    for mut connection in [silent, preface_only] {
        let mut buf = [0u8; 256];
        tokio::time::timeout(Duration::from_secs(10), async {
            // The server's SETTINGS and GOAWAY may come before the end.
            while !matches!(connection.read(&mut buf).await, Ok(0) | Err(_)) {}
        })
        .await
        .expect("closed within 10 s");
    }
    assert_eq!(metrics.xds_listener.closed(CloseReason::FirstRequestTimeout), 2);

    // A client keeps its connection after its stream ends.
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(1);
    requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    let mut responses = client
        .stream_routes(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    next(&mut responses).await;
    drop((requests, responses));
    tokio::time::timeout(Duration::from_secs(10), async {
        while metrics.xds_listener.closed(CloseReason::IdleTimeout) != 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the idle connection is closed within 10 s");
    drop(client);
}

/// A request message over 1 MiB ends its stream (Envoy's carry its node,
/// tens of KB): what one stream makes the server buffer stays small.
#[tokio::test]
async fn a_request_over_the_limit_ends_the_stream() {
    let mut session = start().await;
    session.publisher.publish(&snapshot(&["a.example.com"]));
    let mut huge = request(&["aether-edge"], "", "");
    let count = aether_xds::MAX_REQUEST_BYTES / 1000 + 100;
    huge.resource_names = (0..count).map(|i| format!("{i:01000}")).collect();
    session.requests.send(huge).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), session.responses.message())
        .await
        .expect("an answer within 10 s")
        .unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status}");
    let text = session.metrics.encode();
    assert!(
        text.contains("aether_controller_xds_streams_refused_total{reason=\"request_too_large\"} 1")
            && text.contains("aether_controller_xds_streams_refused_total{reason=\"request_budget\"} 0"),
        "counted by reason in\n{text}"
    );
    // The server serves on.
    let (requests, mut responses) = open(session.addr).await;
    requests.send(request(&["aether-edge"], "", "")).await.unwrap();
    assert_eq!(domains(&next(&mut responses).await), ["a.example.com"]);
}
