//! LDS and SDS against envoy-types' tonic clients on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use aether_projection::TlsSecret;
use aether_testing::pki::{Leaf, TestCa};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::envoy::service::listener::v3::listener_discovery_service_client::ListenerDiscoveryServiceClient;
use envoy_types::pb::envoy::service::secret::v3::secret_discovery_service_client::SecretDiscoveryServiceClient;
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use super::{LISTENER_TYPE, SECRET_TYPE};
use crate::metrics::Metrics;
use crate::tls::certificate::check;
use crate::tls::{EdgeTls, Resolution, Resolutions, TlsSettings};
use crate::xds::{Publisher, channel};

pub(crate) fn snapshot() -> aether_projection::Snapshot {
    crate::listener::tests::snapshot(&["a", "b"])
}

pub(crate) fn secret(name: &str) -> TlsSecret {
    TlsSecret {
        provider: aether_api::config::v1::SecretProvider::Kubernetes,
        namespace: Some("shop".into()),
        secret_name: name.into(),
    }
}

/// A ready certificate for `host`.
pub(crate) fn ready(ca: &TestCa, host: &str, serial: u64) -> Resolution {
    let issued = ca.issue(&Leaf::new(&[host], serial));
    Resolution::Ready(Arc::new(
        check(issued.chain_pem.as_bytes(), issued.key_pem.as_bytes()).unwrap(),
    ))
}

/// Both secrets ready, with these certificates.
pub(crate) fn tls(a: &Resolution, b: &Resolution) -> EdgeTls {
    let mut resolutions = Resolutions::default();
    resolutions.insert(secret("a-tls"), a.clone());
    resolutions.insert(secret("b-tls"), b.clone());
    EdgeTls {
        settings: TlsSettings::new("/unused"),
        resolutions,
    }
}

async fn start() -> (Publisher, std::net::SocketAddr) {
    let (publisher, service) = channel("aether-edge", Arc::new(Metrics::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve(listener));
    (publisher, addr)
}

fn request(type_url: &str, names: &[&str], response: Option<&DiscoveryResponse>) -> DiscoveryRequest {
    DiscoveryRequest {
        type_url: type_url.to_owned(),
        resource_names: names.iter().map(|name| (*name).to_owned()).collect(),
        version_info: response.map(|r| r.version_info.clone()).unwrap_or_default(),
        response_nonce: response.map(|r| r.nonce.clone()).unwrap_or_default(),
        ..DiscoveryRequest::default()
    }
}

async fn next(responses: &mut Streaming<DiscoveryResponse>) -> DiscoveryResponse {
    tokio::time::timeout(Duration::from_secs(10), responses.message())
        .await
        .expect("a response within 10 s")
        .unwrap()
        .expect("the stream is open")
}

async fn silent(responses: &mut Streaming<DiscoveryResponse>) {
    if let Ok(message) = tokio::time::timeout(Duration::from_millis(300), responses.message()).await {
        panic!("expected no response, got {message:?}");
    }
}

fn secret_names(response: &DiscoveryResponse) -> Vec<String> {
    response
        .resources
        .iter()
        .map(|any| {
            assert_eq!(any.type_url, SECRET_TYPE);
            Secret::decode(any.value.as_slice()).unwrap().name
        })
        .collect()
}

#[tokio::test]
async fn a_secret_stream_gets_its_secret_and_only_its_rotations() {
    let (publisher, addr) = start().await;
    let ca = TestCa::new();
    let snapshot = snapshot();
    let (a1, a4) = (ready(&ca, "a.example.com", 1), ready(&ca, "a.example.com", 4));
    let (b2, b3) = (ready(&ca, "b.example.com", 2), ready(&ca, "b.example.com", 3));
    publisher.publish(&snapshot);
    publisher.publish_tls(&snapshot, &tls(&a1, &b2));

    let mut client = SecretDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(8);
    let mut responses = client
        .stream_secrets(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    requests
        .send(request(SECRET_TYPE, &["kubernetes://shop/a-tls"], None))
        .await
        .unwrap();
    let first = next(&mut responses).await;
    assert_eq!(secret_names(&first), ["kubernetes://shop/a-tls"]);
    requests
        .send(request(SECRET_TYPE, &["kubernetes://shop/a-tls"], Some(&first)))
        .await
        .unwrap();

    // b rotates: nothing for a's stream. a rotates: pushed once.
    publisher.publish_tls(&snapshot, &tls(&a1, &b3));
    silent(&mut responses).await;
    publisher.publish_tls(&snapshot, &tls(&a4, &b3));
    let second = next(&mut responses).await;
    assert_eq!(secret_names(&second), ["kubernetes://shop/a-tls"]);
    assert_ne!(second.version_info, first.version_info);
    // A NACK is not answered with the same secret again.
    let mut nack = request(SECRET_TYPE, &["kubernetes://shop/a-tls"], Some(&second));
    nack.error_detail = Some(envoy_types::pb::google::rpc::Status {
        message: "rejected".into(),
        ..Default::default()
    });
    requests.send(nack).await.unwrap();
    silent(&mut responses).await;
}

#[tokio::test]
async fn the_listener_is_served_to_a_wildcard_request_and_names_only_ready_secrets() {
    let (publisher, addr) = start().await;
    let ca = TestCa::new();
    let snapshot = snapshot();
    publisher.publish(&snapshot);
    let mut partial = tls(&ready(&ca, "a.example.com", 1), &ready(&ca, "b.example.com", 2));
    partial.resolutions.insert(
        secret("b-tls"),
        Resolution::Refused(crate::tls::certificate::Invalid::KeyMismatch),
    );
    publisher.publish_tls(&snapshot, &partial);

    let mut client = ListenerDiscoveryServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (requests, outbound) = mpsc::channel(8);
    let mut responses = client
        .stream_listeners(ReceiverStream::new(outbound))
        .await
        .unwrap()
        .into_inner();
    requests.send(request(LISTENER_TYPE, &[], None)).await.unwrap();
    let response = next(&mut responses).await;
    assert_eq!(response.resources.len(), 1);
    let listener = Listener::decode(response.resources[0].value.as_slice()).unwrap();
    let chains: Vec<&str> = listener.filter_chains.iter().map(|chain| chain.name.as_str()).collect();
    // A chain per object, on the object's own route configuration.
    assert_eq!(chains, ["shop/a", "refused"]);
    // Over xDS, the chains take their routes from the aggregated stream.
    let Some(envoy_types::pb::envoy::config::listener::v3::filter::ConfigType::TypedConfig(any)) =
        &listener.filter_chains[0].filters[0].config_type
    else {
        panic!("no connection manager")
    };
    let manager = envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager::decode(any.value.as_slice()).unwrap();
    let Some(envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager::RouteSpecifier::Rds(rds)) = manager.route_specifier else {
        panic!("no RDS")
    };
    assert_eq!(
        rds.config_source.and_then(|source| source.config_source_specifier),
        Some(envoy_types::pb::envoy::config::core::v3::config_source::ConfigSourceSpecifier::Ads(Default::default()))
    );
    assert_eq!(rds.route_config_name, "aether-edge/shop/a");
}
