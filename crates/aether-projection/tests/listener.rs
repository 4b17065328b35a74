//! The HTTPS listener of a snapshot: its chains, what it refuses, and its
//! JSON through Envoy's own descriptors.

use aether_edge_envoy::descriptors;
use aether_projection::listener::{
    EdgeSource, ListenerConfig, REFUSED_CHAIN, config_source, http_connection_manager, https_listener, sds_secret,
    sds_secret_name, secret_file,
};
use aether_projection::{ProjectionConfig, Snapshot, TlsSecret, VirtualHostObject, project};
use aether_testing::objects;
use envoy_types::pb::envoy::config::listener::v3::FilterChain;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext;
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde_json::json;

/// `namespace/name` claiming `hosts`, one route to `svc-NAME`, with TLS
/// from `(secret, provider)`.
fn object(namespace: &str, name: &str, created: &str, hosts: &[&str], tls: Option<(&str, &str)>) -> VirtualHostObject {
    let object = objects::object(namespace, name)
        .created(created)
        .hosts(hosts)
        .route("/", &format!("svc-{name}"));
    match tls {
        Some((secret, provider)) => object.spec_field("tls", json!({"secretName": secret, "provider": provider})),
        None => object,
    }
    .build()
}

fn snapshot(objects: Vec<VirtualHostObject>) -> Snapshot {
    project(objects, &ProjectionConfig::default()).unwrap()
}

fn fixture() -> Snapshot {
    snapshot(vec![
        object(
            "default",
            "api",
            "2026-01-01T00:00:00Z",
            &["api.example.com"],
            Some(("example-tls", "KUBERNETES")),
        ),
        // Shares the secret of default/api (same namespace): one chain.
        object(
            "default",
            "www",
            "2026-01-02T00:00:00Z",
            &["www.example.com"],
            Some(("example-tls", "KUBERNETES")),
        ),
        // Loses api.example.com to default/api: its secret does not come along.
        object(
            "legacy",
            "api",
            "2026-01-03T00:00:00Z",
            &["api.example.com", "legacy.example.com"],
            Some(("legacy-tls", "KUBERNETES")),
        ),
        object(
            "platform",
            "tenants",
            "2026-01-04T00:00:00Z",
            &["*.example.com"],
            Some(("wildcard-example-com", "AWS_SECRETS_MANAGER")),
        ),
        // No tls, under the TLS wildcard.
        object(
            "default",
            "plain",
            "2026-01-05T00:00:00Z",
            &["plain.example.com", "plain.example.org"],
            None,
        ),
    ])
}

fn kubernetes(namespace: &str, name: &str) -> TlsSecret {
    TlsSecret {
        provider: aether_api::config::v1::SecretProvider::Kubernetes,
        namespace: Some(namespace.into()),
        secret_name: name.into(),
    }
}

#[test]
fn chains_follow_the_host_dedup_and_shared_secrets_share_a_chain() {
    let snapshot = fixture();
    let chains: Vec<(String, Vec<String>, Vec<String>)> = snapshot
        .tls_chains
        .iter()
        .map(|chain| {
            (
                sds_secret_name(&chain.secret),
                chain.server_names.clone(),
                chain.objects.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    assert_eq!(
        chains,
        [
            (
                "kubernetes://default/example-tls".to_owned(),
                vec!["api.example.com".to_owned(), "www.example.com".to_owned()],
                vec!["default/api".to_owned(), "default/www".to_owned()],
            ),
            (
                "kubernetes://legacy/legacy-tls".to_owned(),
                vec!["legacy.example.com".to_owned()],
                vec!["legacy/api".to_owned()],
            ),
            (
                "wildcard-example-com".to_owned(),
                vec!["*.example.com".to_owned()],
                vec!["platform/tenants".to_owned()],
            ),
        ]
    );
    assert_eq!(*snapshot.plain_hosts_under_tls_wildcards, ["plain.example.com"]);
}

fn server_names(chain: &FilterChain) -> Vec<String> {
    chain.filter_chain_match.as_ref().unwrap().server_names.clone()
}

fn tls_context(chain: &FilterChain) -> DownstreamTlsContext {
    let socket = chain.transport_socket.as_ref().expect("a TLS chain");
    let Some(envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(any)) =
        &socket.config_type
    else {
        panic!("no typed config")
    };
    DownstreamTlsContext::decode(any.value.as_slice()).unwrap()
}

fn connection_manager(chain: &FilterChain) -> HttpConnectionManager {
    let Some(envoy_types::pb::envoy::config::listener::v3::filter::ConfigType::TypedConfig(any)) =
        &chain.filters[0].config_type
    else {
        panic!("no typed config")
    };
    HttpConnectionManager::decode(any.value.as_slice()).unwrap()
}

#[test]
fn usable_secrets_get_a_chain_and_the_rest_of_the_hosts_are_refused() {
    let snapshot = fixture();
    let config = ListenerConfig::new(EdgeSource::Files("/var/run/aether".into()));
    // legacy-tls is not usable (missing, say); no mesh SDS: the AWS chain is out too.
    let usable = |secret: &TlsSecret| *secret != kubernetes("legacy", "legacy-tls");
    let listener = https_listener(
        &snapshot.tls_chains,
        &snapshot.plain_hosts_under_tls_wildcards,
        usable,
        &config,
    );
    let names: Vec<&str> = listener.filter_chains.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["kubernetes://default/example-tls", REFUSED_CHAIN]);
    assert_eq!(
        server_names(&listener.filter_chains[0]),
        ["api.example.com", "www.example.com"]
    );
    assert_eq!(
        server_names(&listener.filter_chains[1]),
        ["*.example.com", "legacy.example.com", "plain.example.com"]
    );
    assert!(listener.filter_chains[1].transport_socket.is_none());
    assert!(
        listener
            .default_filter_chain
            .as_ref()
            .unwrap()
            .transport_socket
            .is_none()
    );

    let sds = &tls_context(&listener.filter_chains[0])
        .common_tls_context
        .unwrap()
        .tls_certificate_sds_secret_configs[0];
    assert_eq!(sds.name, "kubernetes://default/example-tls");
    assert_eq!(
        sds.sds_config,
        Some(config_source(&config.source, "secrets/default.example-tls.json"))
    );
    // The same connection manager as the plain listener, on the same routes.
    assert_eq!(
        connection_manager(&listener.filter_chains[0]),
        http_connection_manager("aether-edge", config_source(&config.source, "routes.json"))
    );

    // With the mesh's SDS, the AWS chain is served from it, by its name.
    let with_mesh = ListenerConfig {
        mesh_sds_cluster: Some("mesh-sds".into()),
        ..config
    };
    let listener = https_listener(&snapshot.tls_chains, &[], |_| true, &with_mesh);
    let aws = listener
        .filter_chains
        .iter()
        .find(|chain| chain.name == "wildcard-example-com")
        .unwrap();
    let sds = &tls_context(aws)
        .common_tls_context
        .unwrap()
        .tls_certificate_sds_secret_configs[0];
    assert!(format!("{:?}", sds.sds_config).contains("mesh-sds"));
}

#[test]
fn with_no_usable_secret_the_listener_still_has_its_default_chain() {
    let listener = https_listener(
        &fixture().tls_chains,
        &[],
        |_| false,
        &ListenerConfig::new(EdgeSource::Xds("aether-controller-xds".into())),
    );
    assert_eq!(listener.filter_chains.len(), 1);
    assert_eq!(listener.filter_chains[0].name, REFUSED_CHAIN);
    assert!(listener.default_filter_chain.is_some());
}

/// Envoy's JSON of the listener and of a secret, through Envoy's own
/// descriptors, decodes strictly back to the same messages (compared as
/// JSON: prost and prost-reflect order the fields of packed messages
/// differently, which changes the bytes, not the message).
#[test]
fn the_listener_and_a_secret_round_trip_through_envoys_json() {
    let snapshot = fixture();
    let listener = https_listener(
        &snapshot.tls_chains,
        &snapshot.plain_hosts_under_tls_wildcards,
        |_| true,
        &ListenerConfig::new(EdgeSource::Files("/out".into())),
    );
    let check = |name: &str, bytes: Vec<u8>| {
        let descriptor = descriptors::pool().get_message_by_name(name).unwrap();
        let message = DynamicMessage::decode(descriptor.clone(), bytes.as_slice()).unwrap();
        let json = serde_json::to_value(&message).unwrap();
        let back =
            DynamicMessage::deserialize_with_options(descriptor, json.clone(), &DeserializeOptions::new()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        json
    };
    let json = check("envoy.config.listener.v3.Listener", listener.encode_to_vec());
    // Packed messages are spelled out, so Envoy reads the file as written.
    assert_eq!(
        json["filterChains"][0]["filters"][0]["typedConfig"]["rds"]["configSource"]["pathConfigSource"]["path"],
        "/out/routes.json"
    );
    assert_eq!(
        json["filterChains"][0]["transportSocket"]["typedConfig"]["commonTlsContext"]["tlsCertificateSdsSecretConfigs"]
            [0]["sdsConfig"]["pathConfigSource"]["path"],
        "/out/secrets/default.example-tls.json"
    );
    let secret = sds_secret(&kubernetes("default", "example-tls"), b"CERT", b"KEY");
    check(
        "envoy.extensions.transport_sockets.tls.v3.Secret",
        secret.encode_to_vec(),
    );
    assert_eq!(
        secret_file(&kubernetes("default", "example-tls")).as_deref(),
        Some("secrets/default.example-tls.json")
    );
}
