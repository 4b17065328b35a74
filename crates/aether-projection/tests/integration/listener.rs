//! The HTTPS listener of a snapshot: its chains, what it refuses, and its
//! JSON through Envoy's own descriptors.

use aether_edge_envoy::descriptors;
use aether_projection::listener::{
    CHAIN_ROUTES_FILE, EdgeSource, ListenerConfig, REFUSED_CHAIN, chain_routes_dir, config_source,
    http_connection_manager, https_listener, sds_secret, sds_secret_name, secret_file, watched_config_source,
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
    snapshot(fixture_objects())
}

fn fixture_objects() -> Vec<VirtualHostObject> {
    vec![
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
    ]
}

fn kubernetes(namespace: &str, name: &str) -> TlsSecret {
    TlsSecret {
        provider: aether_api::config::v1::SecretProvider::Kubernetes,
        namespace: Some(namespace.into()),
        secret_name: name.into(),
    }
}

#[test]
fn chains_follow_the_host_dedup_one_per_object() {
    let snapshot = fixture();
    let chains: Vec<(String, String, Vec<String>)> = snapshot
        .tls_chains
        .iter()
        .map(|chain| (chain.name(), sds_secret_name(&chain.secret), chain.server_names.clone()))
        .collect();
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        chains,
        [
            (
                "default/api".to_owned(),
                "kubernetes://default/example-tls".to_owned(),
                strings(&["api.example.com"])
            ),
            // Shares default/api's secret, not its chain.
            (
                "default/www".to_owned(),
                "kubernetes://default/example-tls".to_owned(),
                strings(&["www.example.com"])
            ),
            (
                "legacy/api".to_owned(),
                "kubernetes://legacy/legacy-tls".to_owned(),
                strings(&["legacy.example.com"])
            ),
            (
                "platform/tenants".to_owned(),
                "wildcard-example-com".to_owned(),
                strings(&["*.example.com"])
            ),
        ]
    );
    // The wildcard names every other object's host it covers.
    assert_eq!(
        snapshot.tls_chains[3].misdirected,
        strings(&[
            "api.example.com",
            "legacy.example.com",
            "plain.example.com",
            "www.example.com"
        ])
    );
    assert_eq!(*snapshot.plain_hosts_under_tls_wildcards, ["plain.example.com"]);
    assert_eq!(
        snapshot.tls_chain_of(&aether_projection::ObjectKey::new("legacy", "api")),
        Some(&snapshot.tls_chains[2])
    );
    assert_eq!(
        snapshot.tls_chain_of(&aether_projection::ObjectKey::new("default", "plain")),
        None
    );
}

/// Each chain's route configuration: its object's virtual host, byte for
/// byte as in the plain configuration, then the misdirected one.
#[test]
fn a_chain_routes_on_its_objects_virtual_host_and_answers_every_other_host_421() {
    use aether_projection::envoy_route::{RouteConfiguration, VirtualHost, route::Action};
    use aether_projection::{MISDIRECTED_STATUS, MISDIRECTED_VIRTUAL_HOST};
    let snapshot = fixture();
    let plain = snapshot.route_configuration().unwrap();
    for chain in snapshot.tls_chains.iter() {
        let bytes = snapshot.chain_route_configuration(chain).unwrap();
        let config = RouteConfiguration::decode(bytes).unwrap();
        assert_eq!(config.name, format!("aether-edge/{}", chain.object));
        assert_eq!(config.ignore_port_in_host_matching, plain.ignore_port_in_host_matching);
        let own: &VirtualHost = plain
            .virtual_hosts
            .iter()
            .find(|host| host.name == chain.object.to_string())
            .unwrap();
        assert_eq!(config.virtual_hosts.len(), 2);
        assert_eq!(&config.virtual_hosts[0], own);
        let misdirected = &config.virtual_hosts[1];
        assert_eq!(misdirected.name, MISDIRECTED_VIRTUAL_HOST);
        let mut domains = chain.misdirected.clone();
        domains.push("*".to_owned());
        assert_eq!(misdirected.domains, domains);
        let Some(Action::DirectResponse(response)) = &misdirected.routes[0].action else {
            panic!("a direct response")
        };
        assert_eq!(response.status, MISDIRECTED_STATUS);
    }
    // A chain of an object that is not served has none.
    let mut stray = snapshot.tls_chains[0].clone();
    stray.object = aether_projection::ObjectKey::new("default", "gone");
    assert_eq!(snapshot.chain_route_configuration(&stray), None);
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
    assert_eq!(names, ["default/api", "default/www", REFUSED_CHAIN]);
    assert_eq!(server_names(&listener.filter_chains[0]), ["api.example.com"]);
    assert_eq!(server_names(&listener.filter_chains[1]), ["www.example.com"]);
    assert_eq!(
        server_names(&listener.filter_chains[2]),
        ["*.example.com", "legacy.example.com", "plain.example.com"]
    );
    assert!(listener.filter_chains[2].transport_socket.is_none());
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
    // The edge's connection manager, on the chain's own routes, in a
    // directory of their own that Envoy watches.
    let chain = &snapshot.tls_chains[0];
    assert_eq!(chain_routes_dir(chain), "chains/default.api");
    assert_eq!(
        connection_manager(&listener.filter_chains[0]),
        http_connection_manager(
            "aether-edge/default/api",
            watched_config_source(&config.source, "chains/default.api", CHAIN_ROUTES_FILE)
        )
    );
    let source = watched_config_source(&config.source, "chains/default.api", CHAIN_ROUTES_FILE);
    assert!(format!("{source:?}").contains("/var/run/aether/chains/default.api/routes.json"));
    assert!(format!("{source:?}").contains("path: \"/var/run/aether/chains/default.api\""));

    // With the mesh's SDS, the AWS chain is served from it, by its name.
    let with_mesh = ListenerConfig {
        mesh_sds_cluster: Some("mesh-sds".into()),
        ..config
    };
    let listener = https_listener(&snapshot.tls_chains, &[], |_| true, &with_mesh);
    let aws = listener
        .filter_chains
        .iter()
        .find(|chain| chain.name == "platform/tenants")
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
        "/out/chains/default.api/routes.json"
    );
    assert_eq!(
        json["filterChains"][0]["filters"][0]["typedConfig"]["rds"]["configSource"]["pathConfigSource"]["watchedDirectory"]
            ["path"],
        "/out/chains/default.api"
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

/// Redirecting TLS hosts over plain HTTP: the plain configuration names
/// their domains alone, so an edit of their routes leaves it as it was and
/// changes only the chain's.
#[test]
fn with_tls_hosts_redirected_a_route_edit_changes_only_the_chains_configuration() {
    use aether_projection::envoy_route::{RouteConfiguration, virtual_host::TlsRequirementType};
    use aether_projection::{PlainHttp, Projector};
    let config = ProjectionConfig {
        tls_hosts_over_plain_http: PlainHttp::Redirect,
        ..ProjectionConfig::default()
    };
    let mut projector = Projector::new(config);
    for object in fixture_objects() {
        projector.upsert(object);
    }
    let before = projector.snapshot();
    let plain = before.route_configuration().unwrap();
    let host = |name: &str| {
        plain
            .virtual_hosts
            .iter()
            .find(|host| host.name == name)
            .unwrap()
            .clone()
    };
    let api = host("default/api");
    assert_eq!(api.require_tls, TlsRequirementType::All as i32);
    assert!(api.routes.is_empty());
    assert_eq!(api.domains, ["api.example.com"]);
    let unredirected = host("default/plain");
    assert_eq!(unredirected.require_tls, TlsRequirementType::None as i32);
    assert!(!unredirected.routes.is_empty());
    // The chain routes with the whole virtual host, as without redirects.
    let served = fixture();
    let chain = before
        .tls_chain_of(&aether_projection::ObjectKey::new("default", "api"))
        .unwrap();
    assert_eq!(
        RouteConfiguration::decode(before.chain_route_configuration(chain).unwrap()).unwrap(),
        RouteConfiguration::decode(served.chain_route_configuration(chain).unwrap()).unwrap()
    );

    projector.upsert(
        objects::object("default", "api")
            .created("2026-01-01T00:00:00Z")
            .hosts(["api.example.com"])
            .route("/v2", "svc-api")
            .tls("example-tls")
            .build(),
    );
    let after = projector.snapshot();
    assert!(
        after.routes().shares(before.routes()),
        "the plain configuration is unchanged"
    );
    assert_eq!(
        after.tls_routes().changed_since(before.tls_routes()),
        [aether_projection::ObjectKey::new("default", "api")]
    );
}
