//! xDS clients that never read hold no queue of versions: however many
//! versions are published while they do not read, each unread stream is
//! built at most the response it is being written and the latest version
//! (state of the world skips the rest; a delta stream syncs with the
//! latest publication when it is next built). `benches/slow_readers.rs` measures
//! what this bounds, the resident memory, at 5,000 objects.

use std::sync::Arc;
use std::time::Duration;

use aether_controller::metrics::Metrics;
use aether_controller::outputs::ROUTE_CONFIGURATION_TYPE;
use aether_controller::xds;
use aether_manifests::parse_manifests;
use aether_projection::{ProjectionConfig, Snapshot, project};
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::route::v3::route_discovery_service_client::RouteDiscoveryServiceClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

/// Objects in the configuration: its encoding (about 200 KB) is larger
/// than a slow client's receive window (64 KiB), so none can take a
/// whole response.
const OBJECTS: usize = 2000;
/// Streams that ask for the configuration and never read a byte of it.
const SLOW_STREAMS: usize = 8;
/// New versions published while they do not read.
const VERSIONS: usize = 5;

fn snapshot(version: usize) -> Snapshot {
    let text: String = (0..OBJECTS)
        .map(|i| {
            format!(
                "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: o{i}, namespace: shop}}\n\
                 spec:\n  hosts: [\"o{i}.v{version}.example.com\"]\n  routes:\n  - match: {{prefix: /}}\n    backend: {{service: web-{i}}}\n"
            )
        })
        .collect();
    project(parse_manifests(&text).unwrap(), &ProjectionConfig::default()).unwrap()
}

fn request(version: &str, nonce: &str) -> DiscoveryRequest {
    DiscoveryRequest {
        type_url: ROUTE_CONFIGURATION_TYPE.into(),
        resource_names: vec!["aether-edge".into()],
        version_info: version.into(),
        response_nonce: nonce.into(),
        ..DiscoveryRequest::default()
    }
}

async fn next(responses: &mut Streaming<DiscoveryResponse>) -> DiscoveryResponse {
    tokio::time::timeout(Duration::from_secs(30), responses.message())
        .await
        .expect("a response within 30 s")
        .unwrap()
        .expect("the stream is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_does_not_read_is_built_no_response_per_version() {
    unread_streams_are_built_no_response_per_version(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_stream_that_does_not_read_is_built_no_response_per_version() {
    unread_streams_are_built_no_response_per_version(true).await;
}

/// Slow streams of state of the world, or of the aggregated delta stream
/// (`delta`), against a reader of every version.
async fn unread_streams_are_built_no_response_per_version(delta: bool) {
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = xds::channel("aether-edge", metrics.clone());
    publisher.publish(&snapshot(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve(listener));

    // The slow streams, on one connection with 64 KiB stream windows.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(4 << 20)
        .connect()
        .await
        .unwrap();
    let mut slow = Vec::new();
    let mut slow_delta = Vec::new();
    for _ in 0..SLOW_STREAMS {
        if delta {
            let mut client = AggregatedDiscoveryServiceClient::new(channel.clone());
            let (requests, outbound) = mpsc::channel(1);
            requests
                .send(DeltaDiscoveryRequest {
                    type_url: ROUTE_CONFIGURATION_TYPE.into(),
                    resource_names_subscribe: vec!["aether-edge".into()],
                    ..DeltaDiscoveryRequest::default()
                })
                .await
                .unwrap();
            let responses = client
                .delta_aggregated_resources(ReceiverStream::new(outbound))
                .await
                .unwrap();
            slow_delta.push((requests, responses));
            continue;
        }
        let mut client = RouteDiscoveryServiceClient::new(channel.clone());
        let (requests, outbound) = mpsc::channel(1);
        requests.send(request("", "")).await.unwrap();
        let responses = client.stream_routes(ReceiverStream::new(outbound)).await.unwrap();
        slow.push((requests, responses));
    }
    // Each has been answered (its response is on its way, unread).
    tokio::time::timeout(Duration::from_secs(30), async {
        while metrics.xds_responses.get() < SLOW_STREAMS as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the slow streams are answered within 30 s");

    // A client that reads sees every new version.
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
        .max_decoding_message_size(64 << 20);
    let (requests, outbound) = mpsc::channel(4);
    requests.send(request("", "")).await.unwrap();
    let mut reader = client
        .stream_routes(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    let mut response = next(&mut reader).await;
    for version in 1..=VERSIONS {
        requests
            .send(request(&response.version_info, &response.nonce))
            .await
            .unwrap();
        publisher.publish(&snapshot(version));
        response = next(&mut reader).await;
        assert_eq!(
            Some(response.version_info.clone()),
            publisher.current().map(|current| current.version().to_owned())
        );
    }
    // Room for responses the server would still build (none should come).
    tokio::time::sleep(Duration::from_millis(500)).await;

    let read = 1 + VERSIONS as u64;
    let built_for_slow = metrics.xds_responses.get() - read;
    // Each slow stream: the response it is being written, and at most the
    // latest version after it. A queue of versions would be one response
    // per stream and version, each a copy of the configuration.
    assert!(
        built_for_slow <= 2 * SLOW_STREAMS as u64,
        "{built_for_slow} responses built for {SLOW_STREAMS} streams that never read \
         ({VERSIONS} new versions; at most {} allowed)",
        2 * SLOW_STREAMS
    );
    assert_eq!(metrics.xds_streams.get(), SLOW_STREAMS as i64 + 1);
    drop((slow, slow_delta));
}
