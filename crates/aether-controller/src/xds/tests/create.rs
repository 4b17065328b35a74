//! A created object sends an Envoy that holds the fleet (a delta stream,
//! every resource acknowledged) the created object's resources and what
//! must change with it, and nothing of the other objects: the plain route
//! configuration (it holds every host), the HTTPS listener (a chain more),
//! the configuration of a wildcard's chain that now answers the new host
//! `421`; then, once Envoy names them, the new chain's configuration and
//! secret.

use std::collections::BTreeMap;
use std::time::Duration;

use aether_manifests::parse_manifests;
use aether_projection::listener::{HTTPS_LISTENER, sds_secret_name};
use aether_projection::{ProjectionConfig, project};
use aether_testing::pki::TestCa;
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DeltaDiscoveryResponse};
use prost::Message;
use tokio::sync::mpsc;
use tonic::Streaming;

use super::delta::{Delta, ack, aggregated, next_delta, serve, subscribe};
use crate::outputs::ROUTE_CONFIGURATION_TYPE;
use crate::tls::{EdgeTls, Resolution, Resolutions, TlsSettings};
use crate::xds::Publisher;
use crate::xds::listeners_secrets::tests::{ready, secret};
use crate::xds::listeners_secrets::{LISTENER_TYPE, SECRET_TYPE};

/// The fleet before the creates: objects served over TLS, one of them a
/// wildcard's, and one served over plain HTTP alone.
const TLS_OBJECTS: [(&str, &str); 11] = [
    ("o0", "o0.example.com"),
    ("o1", "o1.example.com"),
    ("o2", "o2.example.com"),
    ("o3", "o3.example.com"),
    ("o4", "o4.example.com"),
    ("o5", "o5.example.com"),
    ("o6", "o6.example.com"),
    ("o7", "o7.example.com"),
    ("o8", "o8.example.com"),
    ("o9", "o9.example.com"),
    ("wild", "*.wild.example.com"),
];
const PLAIN_OBJECTS: [(&str, &str); 1] = [("p0", "p0.example.com")];

/// `shop/NAME` serving `host`, over TLS with the secret `NAME-tls` when `tls`.
fn manifest(name: &str, host: &str, tls: bool) -> String {
    let tls = if tls {
        format!("  tls: {{secretName: {name}-tls, provider: KUBERNETES}}\n")
    } else {
        String::new()
    };
    format!(
        "---\napiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}, namespace: shop}}\n\
         spec:\n  hosts: [\"{host}\"]\n  routes:\n  - match: {{prefix: /}}\n    backend: {{service: web}}\n{tls}"
    )
}

/// The fleet's certificates, one per secret, issued once: a secret's
/// certificate is the same in every publication.
struct Certificates {
    ca: TestCa,
    issued: BTreeMap<String, Resolution>,
}

impl Certificates {
    fn new() -> Self {
        Self {
            ca: TestCa::new(),
            issued: BTreeMap::new(),
        }
    }

    /// Publishes the fleet of objects `tls` (served over TLS, their
    /// secrets ready) and `plain`.
    fn publish(&mut self, publisher: &Publisher, tls: &[(&str, &str)], plain: &[(&str, &str)]) {
        let mut text: String = tls.iter().map(|(name, host)| manifest(name, host, true)).collect();
        text.extend(plain.iter().map(|(name, host)| manifest(name, host, false)));
        let snapshot = project(parse_manifests(&text).unwrap(), &ProjectionConfig::default()).unwrap();
        let mut resolutions = Resolutions::default();
        for (name, host) in tls {
            let serial = self.issued.len() as u64 + 1;
            let ready = self
                .issued
                .entry((*name).to_owned())
                .or_insert_with(|| ready(&self.ca, host, serial));
            resolutions.insert(secret(&format!("{name}-tls")), ready.clone());
        }
        let edge_tls = EdgeTls {
            settings: TlsSettings::new("/unused"),
            resolutions,
        };
        publisher.publish(&snapshot);
        publisher.publish_tls(&snapshot, &edge_tls);
    }
}

/// The SDS name of `NAME-tls`.
fn secret_of(name: &str) -> String {
    sds_secret_name(&secret(&format!("{name}-tls")))
}

/// Every response until the stream is quiet for 300 ms, each acknowledged:
/// `(type, name)` of each resource sent, sorted (a resource sent twice is
/// there twice), and the responses themselves.
async fn sent(
    requests: &mpsc::Sender<DeltaDiscoveryRequest>,
    responses: &mut Streaming<DeltaDiscoveryResponse>,
) -> (Vec<(String, String)>, Vec<DeltaDiscoveryResponse>) {
    let mut names = Vec::new();
    let mut all = Vec::new();
    while let Ok(message) = tokio::time::timeout(Duration::from_millis(300), responses.message()).await {
        let response = message.unwrap().expect("the stream is open");
        assert!(response.removed_resources.is_empty(), "{response:?}");
        requests.send(ack(&response)).await.unwrap();
        names.extend(
            response
                .resources
                .iter()
                .map(|resource| (response.type_url.clone(), resource.name.clone())),
        );
        all.push(response);
    }
    names.sort();
    (names, all)
}

fn refs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// `(type, name)` pairs, sorted, for comparing with [`sent`].
fn expected(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(type_url, name)| ((*type_url).to_owned(), (*name).to_owned()))
        .collect();
    pairs.sort();
    pairs
}

/// The listener among `responses`, decoded.
fn listener(responses: &[DeltaDiscoveryResponse]) -> Listener {
    let resource = responses
        .iter()
        .filter(|response| response.type_url == LISTENER_TYPE)
        .flat_map(|response| &response.resources)
        .next()
        .expect("a listener sent");
    Listener::decode(resource.resource.as_ref().unwrap().value.as_slice()).unwrap()
}

/// A stream that subscribed as Envoy does (the listeners, then every route
/// configuration and secret the listener names) and holds all of them.
async fn synced(publisher: &Publisher, addr: std::net::SocketAddr) -> Delta {
    let (requests, mut responses) = aggregated(addr).await;
    requests.send(subscribe(LISTENER_TYPE, &[])).await.unwrap();
    let listeners = next_delta(&mut responses).await;
    assert_eq!(listeners.type_url, LISTENER_TYPE);
    requests.send(ack(&listeners)).await.unwrap();
    let routes: Vec<String> = publisher
        .current()
        .unwrap()
        .iter()
        .map(|(name, _)| name.to_owned())
        .collect();
    assert_eq!(routes.len(), 1 + TLS_OBJECTS.len(), "{routes:?}");
    let secrets: Vec<String> = TLS_OBJECTS.iter().map(|(name, _)| secret_of(name)).collect();
    requests
        .send(subscribe(ROUTE_CONFIGURATION_TYPE, &refs(&routes)))
        .await
        .unwrap();
    requests.send(subscribe(SECRET_TYPE, &refs(&secrets))).await.unwrap();
    let (got, _) = sent(&requests, &mut responses).await;
    assert_eq!(got.len(), routes.len() + secrets.len(), "{got:?}");
    (requests, responses)
}

#[tokio::test]
async fn a_created_https_object_sends_envoy_its_own_resources_and_what_must_change_with_it() {
    let (publisher, metrics, addr) = serve().await;
    let mut certificates = Certificates::new();
    certificates.publish(&publisher, &TLS_OBJECTS, &PLAIN_OBJECTS);
    let (requests, mut responses) = synced(&publisher, addr).await;

    // A host under the wildcard: the wildcard's chain answers it 421 now.
    let mut tls = TLS_OBJECTS.to_vec();
    tls.push(("new", "new.wild.example.com"));
    certificates.publish(&publisher, &tls, &PLAIN_OBJECTS);
    let (got, all) = sent(&requests, &mut responses).await;
    assert_eq!(
        got,
        expected(&[
            (ROUTE_CONFIGURATION_TYPE, "aether-edge"),
            (ROUTE_CONFIGURATION_TYPE, "aether-edge/shop/wild"),
            (LISTENER_TYPE, HTTPS_LISTENER),
        ])
    );
    let chains: Vec<String> = listener(&all)
        .filter_chains
        .iter()
        .map(|chain| chain.name.clone())
        .collect();
    assert_eq!(chains.len(), tls.len(), "{chains:?}");
    assert!(chains.contains(&"shop/new".to_owned()), "{chains:?}");

    // Envoy names what the new chain needs: that alone comes.
    requests
        .send(subscribe(ROUTE_CONFIGURATION_TYPE, &["aether-edge/shop/new"]))
        .await
        .unwrap();
    requests
        .send(subscribe(SECRET_TYPE, &[&secret_of("new")]))
        .await
        .unwrap();
    let (got, _) = sent(&requests, &mut responses).await;
    assert_eq!(
        got,
        expected(&[
            (ROUTE_CONFIGURATION_TYPE, "aether-edge/shop/new"),
            (SECRET_TYPE, &secret_of("new")),
        ])
    );

    // A host no wildcard covers: the plain configuration and the listener.
    tls.push(("o10", "o10.example.com"));
    certificates.publish(&publisher, &tls, &PLAIN_OBJECTS);
    let (got, _) = sent(&requests, &mut responses).await;
    assert_eq!(
        got,
        expected(&[
            (ROUTE_CONFIGURATION_TYPE, "aether-edge"),
            (LISTENER_TYPE, HTTPS_LISTENER),
        ])
    );
    assert_eq!(metrics.xds_nacks.get(), 0);
}

#[tokio::test]
async fn a_created_plain_object_sends_envoy_the_plain_route_configuration_alone() {
    let (publisher, _, addr) = serve().await;
    let mut certificates = Certificates::new();
    certificates.publish(&publisher, &TLS_OBJECTS, &PLAIN_OBJECTS);
    let (requests, mut responses) = synced(&publisher, addr).await;

    let mut plain = PLAIN_OBJECTS.to_vec();
    plain.push(("p1", "p1.example.com"));
    certificates.publish(&publisher, &TLS_OBJECTS, &plain);
    let (got, _) = sent(&requests, &mut responses).await;
    assert_eq!(got, expected(&[(ROUTE_CONFIGURATION_TYPE, "aether-edge")]));
}
