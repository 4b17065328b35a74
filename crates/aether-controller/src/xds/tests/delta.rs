//! Delta xDS against envoy-types' tonic clients on 127.0.0.1: the
//! aggregated stream, a stream of one type, and state-of-the-world ADS
//! refused.

use std::collections::HashMap;

use aether_testing::pki::TestCa;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};

use super::*;
use crate::xds::listeners_secrets::tests::{ready, snapshot as tls_snapshot, tls};
use crate::xds::listeners_secrets::{LISTENER_TYPE, SECRET_TYPE};

const A: &str = "kubernetes://shop/a-tls";
const B: &str = "kubernetes://shop/b-tls";

pub(super) async fn serve() -> (Publisher, Arc<Metrics>, std::net::SocketAddr) {
    logs::init();
    let metrics = Arc::new(Metrics::new());
    let (publisher, service) = channel("aether-edge", metrics.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve(listener));
    (publisher, metrics, addr)
}

pub(super) type Delta = (mpsc::Sender<DeltaDiscoveryRequest>, Streaming<DeltaDiscoveryResponse>);

pub(super) async fn aggregated(addr: std::net::SocketAddr) -> Delta {
    let mut client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(8);
    let responses = client
        .delta_aggregated_resources(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    (requests, responses)
}

pub(super) fn subscribe(type_url: &str, names: &[&str]) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: type_url.to_owned(),
        resource_names_subscribe: names.iter().map(|name| (*name).to_owned()).collect(),
        ..DeltaDiscoveryRequest::default()
    }
}

pub(super) fn ack(response: &DeltaDiscoveryResponse) -> DeltaDiscoveryRequest {
    DeltaDiscoveryRequest {
        type_url: response.type_url.clone(),
        response_nonce: response.nonce.clone(),
        ..DeltaDiscoveryRequest::default()
    }
}

pub(super) async fn next_delta(responses: &mut Streaming<DeltaDiscoveryResponse>) -> DeltaDiscoveryResponse {
    tokio::time::timeout(Duration::from_secs(10), responses.message())
        .await
        .expect("a response within 10 s")
        .unwrap()
        .expect("the stream is open")
}

async fn silent_delta(responses: &mut Streaming<DeltaDiscoveryResponse>) {
    if let Ok(message) = tokio::time::timeout(Duration::from_millis(300), responses.message()).await {
        panic!("expected no response, got {message:?}");
    }
}

pub(super) fn names(response: &DeltaDiscoveryResponse) -> Vec<&str> {
    response
        .resources
        .iter()
        .map(|resource| resource.name.as_str())
        .collect()
}

#[tokio::test]
async fn one_aggregated_stream_serves_listeners_routes_and_secrets_by_change() {
    let (publisher, metrics, addr) = serve().await;
    let ca = TestCa::new();
    let (a1, a4, b2) = (
        ready(&ca, "a.example.com", 1),
        ready(&ca, "a.example.com", 4),
        ready(&ca, "b.example.com", 2),
    );
    let snapshot = tls_snapshot();
    publisher.publish(&snapshot);
    publisher.publish_tls(&snapshot, &tls(&a1, &b2));

    // Envoy's order: the listeners (wildcard), then what the listener names.
    let (requests, mut responses) = aggregated(addr).await;
    requests.send(subscribe(LISTENER_TYPE, &[])).await.unwrap();
    let listeners = next_delta(&mut responses).await;
    assert_eq!(listeners.type_url, LISTENER_TYPE);
    assert_eq!(listeners.resources.len(), 1);
    let listener = &listeners.resources[0];
    let decoded = Listener::decode(listener.resource.as_ref().unwrap().value.as_slice()).unwrap();
    assert_eq!(decoded.name, listener.name);
    assert_eq!(listener.version.len(), 16);
    requests.send(ack(&listeners)).await.unwrap();
    requests
        .send(subscribe(ROUTE_CONFIGURATION_TYPE, &["aether-edge"]))
        .await
        .unwrap();
    requests.send(subscribe(SECRET_TYPE, &[A, B])).await.unwrap();
    let routes = next_delta(&mut responses).await;
    assert_eq!(
        (routes.type_url.as_str(), names(&routes)),
        (ROUTE_CONFIGURATION_TYPE, vec!["aether-edge"])
    );
    assert_eq!(routes.resources[0].version, snapshot.routes().version());
    let secrets = next_delta(&mut responses).await;
    assert_eq!((secrets.type_url.as_str(), names(&secrets)), (SECRET_TYPE, vec![A, B]));
    let decoded = Secret::decode(secrets.resources[0].resource.as_ref().unwrap().value.as_slice()).unwrap();
    assert_eq!(decoded.name, A);
    let secrets = &secrets;
    let nonces = [&listeners.nonce, &routes.nonce, &secrets.nonce];
    assert!(nonces[0] != nonces[1] && nonces[1] != nonces[2]);
    requests.send(ack(&routes)).await.unwrap();
    requests.send(ack(secrets)).await.unwrap();
    silent_delta(&mut responses).await;

    // One certificate rotates: that secret alone, nothing else.
    publisher.publish_tls(&snapshot, &tls(&a4, &b2));
    let rotated = next_delta(&mut responses).await;
    assert_eq!((rotated.type_url.as_str(), names(&rotated)), (SECRET_TYPE, vec![A]));
    assert_ne!(rotated.resources[0].version, secrets.resources[0].version);
    requests.send(ack(&rotated)).await.unwrap();
    silent_delta(&mut responses).await;
    assert_eq!(metrics.xds_nacks.get(), 0);

    // A reconnecting Envoy that has everything is sent an empty answer per type.
    let (again, mut answers) = aggregated(addr).await;
    let mut request = subscribe(SECRET_TYPE, &[A, B]);
    request.initial_resource_versions = HashMap::from([
        (A.to_owned(), rotated.resources[0].version.clone()),
        (B.to_owned(), secrets.resources[1].version.clone()),
    ]);
    again.send(request).await.unwrap();
    let answer = next_delta(&mut answers).await;
    assert_eq!(answer.type_url, SECRET_TYPE);
    assert!(
        answer.resources.is_empty() && answer.removed_resources.is_empty(),
        "{answer:?}"
    );
    silent_delta(&mut answers).await;

    // A type this server does not serve is ignored; the stream goes on.
    again
        .send(subscribe("type.googleapis.com/envoy.config.cluster.v3.Cluster", &[]))
        .await
        .unwrap();
    silent_delta(&mut answers).await;
    publisher.publish(&super::snapshot(&["z.example.com"]));
    let routes_for_first = next_delta(&mut responses).await;
    assert_eq!(names(&routes_for_first), ["aether-edge"]);
    silent_delta(&mut answers).await;
}

#[tokio::test]
async fn a_delta_stream_of_one_type_and_no_state_of_the_world_ads() {
    let (publisher, _, addr) = serve().await;
    publisher.publish(&snapshot(&["a.example.com"]));
    let mut client = RouteDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(8);
    let mut responses = client
        .delta_routes(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    requests.send(subscribe("", &["aether-edge"])).await.unwrap();
    let first = next_delta(&mut responses).await;
    assert_eq!(names(&first), ["aether-edge"]);
    let config = RouteConfiguration::decode(first.resources[0].resource.as_ref().unwrap().value.as_slice()).unwrap();
    assert_eq!(config.virtual_hosts[0].domains, ["a.example.com"]);
    requests.send(ack(&first)).await.unwrap();
    publisher.publish(&snapshot(&["b.example.com"]));
    let second = next_delta(&mut responses).await;
    assert_ne!(second.resources[0].version, first.resources[0].version);
    // Another type on it ends it.
    requests.send(subscribe(SECRET_TYPE, &[A])).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), responses.message())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);

    let mut ads = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (_requests, outbound) = mpsc::channel(1);
    let status = ads
        .stream_aggregated_resources(ReceiverStream::new(outbound))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    assert!(
        status.message().contains("DeltaAggregatedResources"),
        "{}",
        status.message()
    );
}

/// Per node, what its Envoy answered, in the metrics: the publication it
/// holds, once it answered it, and its refusals.
#[tokio::test]
async fn each_envoys_answers_are_in_the_metrics_by_node() {
    use envoy_types::pb::envoy::config::core::v3::Node;
    use envoy_types::pb::google::rpc::Status as RpcStatus;

    let (publisher, metrics, addr) = serve().await;
    let snapshot = tls_snapshot();
    publisher.publish(&snapshot);
    let (requests, mut responses) = aggregated(addr).await;
    let first = DeltaDiscoveryRequest {
        node: Some(Node {
            id: "edge-7".into(),
            ..Node::default()
        }),
        ..subscribe(ROUTE_CONFIGURATION_TYPE, &["aether-edge"])
    };
    requests.send(first).await.unwrap();
    let routes = next_delta(&mut responses).await;
    let held = publisher.current().unwrap().seq();
    let series =
        format!("aether_controller_xds_envoy_held_publication{{node=\"edge-7\",type=\"RouteConfiguration\"}} {held}");
    assert!(!metrics.encode().contains(&series), "not answered yet");
    requests.send(ack(&routes)).await.unwrap();
    let metrics_text = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let text = metrics.encode();
            if text.contains(&series) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{series} in\n{}", metrics.encode()));
    assert!(
        metrics_text.contains("aether_controller_xds_envoy_nacks{node=\"edge-7\"} 0"),
        "{metrics_text}"
    );
    assert!(metrics_text.contains("aether_controller_xds_envoy_seconds_behind{node=\"edge-7\"} 0"));

    // A change refused.
    publisher.publish(&crate::listener::tests::snapshot(&["a", "b", "c"]));
    let refused = next_delta(&mut responses).await;
    let nack = DeltaDiscoveryRequest {
        error_detail: Some(RpcStatus {
            code: 3,
            message: "no".into(),
            details: Vec::new(),
        }),
        ..ack(&refused)
    };
    requests.send(nack).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !metrics
            .encode()
            .contains("aether_controller_xds_envoy_nacks{node=\"edge-7\"} 1")
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a NACK counted in\n{}", metrics.encode()));
}

/// Node ids that come and go make no series once gone: 2,000 of them, one
/// stream each, one after another over one connection.
#[tokio::test]
async fn node_ids_that_come_and_go_leave_no_series_behind() {
    use envoy_types::pb::envoy::config::core::v3::Node;

    let (publisher, metrics, addr) = serve().await;
    publisher.publish(&tls_snapshot());
    let series = |text: &str| {
        text.lines()
            .filter(|line| line.starts_with("aether_controller_xds_envoy_nacks{"))
            .count()
    };
    let client = AggregatedDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let mut most = 0;
    for i in 0..2_000 {
        let (requests, outbound) = mpsc::channel(2);
        let mut responses = client
            .clone()
            .delta_aggregated_resources(ReceiverStream::new(outbound))
            .await
            .unwrap()
            .into_inner();
        let first = DeltaDiscoveryRequest {
            node: Some(Node {
                id: format!("edge-{i:04}"),
                ..Node::default()
            }),
            ..subscribe(ROUTE_CONFIGURATION_TYPE, &["aether-edge"])
        };
        requests.send(first).await.unwrap();
        let routes = next_delta(&mut responses).await;
        requests.send(ack(&routes)).await.unwrap();
        drop(requests);
        // The stream ends once the server has read the end of its requests.
        while responses.message().await.is_ok_and(|message| message.is_some()) {}
        most = most.max(series(&metrics.encode()));
    }
    // A stream's member leaves when its request task sees the end: at most
    // the streams of one connection are still leaving at any time.
    assert!(most <= 16, "{most} series at once");
    tokio::time::timeout(Duration::from_secs(10), async {
        while series(&metrics.encode()) > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("series of nodes gone in\n{}", metrics.encode()));
}

/// A chain's configuration refused alone is quarantined, and counted
/// beside the log line.
#[tokio::test]
async fn a_quarantine_is_counted() {
    use envoy_types::pb::google::rpc::Status as RpcStatus;

    let (publisher, metrics, addr) = serve().await;
    publisher.publish(&tls_snapshot());
    let chain = publisher
        .current()
        .unwrap()
        .iter()
        .map(|(name, _)| name.to_owned())
        .find(|name| name.starts_with("aether-edge/"))
        .expect("a chain's route configuration");
    assert!(
        metrics
            .encode()
            .contains("aether_controller_xds_resources_quarantined_total 0")
    );
    let (requests, mut responses) = aggregated(addr).await;
    requests
        .send(subscribe(ROUTE_CONFIGURATION_TYPE, &[&chain]))
        .await
        .unwrap();
    let response = next_delta(&mut responses).await;
    assert_eq!(names(&response), [chain.as_str()]);
    let nack = DeltaDiscoveryRequest {
        error_detail: Some(RpcStatus {
            code: 3,
            message: "no".into(),
            details: Vec::new(),
        }),
        ..ack(&response)
    };
    requests.send(nack).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !metrics
            .encode()
            .contains("aether_controller_xds_resources_quarantined_total 1")
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the quarantine counted in\n{}", metrics.encode()));
}
