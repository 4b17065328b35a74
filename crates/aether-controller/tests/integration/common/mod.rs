//! Helpers shared by the tests; `serving` holds the binary with `--xds-addr`
//! and the xDS clients of the serving tests.

pub mod serving;

use std::time::Duration;

use aether_controller::TlsSettings;
use aether_controller::local::Options;
use aether_controller::outputs::{ROUTE_CONFIGURATION_TYPE, ROUTES_FILE};
use aether_edge_envoy::descriptors;
use aether_projection::{ProjectionConfig, VirtualHostObject};
use aether_testing::objects;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;
use prost::Message;
use prost_reflect::DynamicMessage;
use serde_json::Value;

/// Decodes `routes.json` strictly (Envoy's descriptors, unknown fields
/// rejected) and returns the RouteConfiguration as binary protobuf.
pub fn decode_routes(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|err| format!("not JSON: {err}"))?;
    let resources = value["resources"].as_array().ok_or("no resources")?;
    if resources.len() != 1 {
        return Err(format!("{} resources", resources.len()));
    }
    let mut resource = resources[0].clone();
    let fields = resource.as_object_mut().ok_or("resource is not an object")?;
    if fields.remove("@type") != Some(Value::from(ROUTE_CONFIGURATION_TYPE)) {
        return Err("wrong or missing @type".into());
    }
    let options = prost_reflect::DeserializeOptions::new().deny_unknown_fields(true);
    let message = DynamicMessage::deserialize_with_options(descriptors::route_configuration(), resource, &options)
        .map_err(|err| format!("not a RouteConfiguration: {err}"))?;
    Ok(message.encode_to_vec())
}

/// A VirtualHost object with `hosts`, one route per service, created at `created`.
pub fn object(
    namespace: &str,
    name: &str,
    created: Option<&str>,
    hosts: &[&str],
    services: &[&str],
) -> VirtualHostObject {
    let object = objects::object(namespace, name).hosts(hosts);
    let object = match created {
        Some(created) => object.created(created),
        None => object,
    };
    let routes = services.iter().enumerate();
    routes
        .fold(object, |object, (i, service)| object.route(&format!("/p{i}"), service))
        .build()
}

/// Object `vh-NAME` of namespace `team` with `spec`, its hosts replaced by
/// `hosts` (a small pool, so that objects take each other's), created on `day`.
pub fn pooled(spec: &Value, name: usize, hosts: &[usize], day: u8) -> objects::ObjectBuilder {
    objects::object("team", &format!("vh-{name}"))
        .created(&format!("2026-01-{:02}T00:00:00Z", day % 28 + 1))
        .spec(spec.clone())
        .hosts(hosts.iter().map(|host| format!("h{host}.example.com")))
}

/// Runs the real binary once in local mode: its exit code and stderr.
pub fn run_once(manifests: &std::path::Path, out: &std::path::Path) -> (i32, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_aether-controller"))
        .arg("--once")
        .arg("--manifests")
        .arg(manifests)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    (output.status.code().unwrap(), String::from_utf8(output.stderr).unwrap())
}

/// `default/api`, serving api.example.com with one route to svc-web.
pub const GOOD: &str = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: api, namespace: default}\n\
                    spec: {hosts: [api.example.com], routes: [{match: {prefix: /}, backend: {service: svc-web}}]}\n";

/// A manifest of `default/NAME`, serving NAME.example.com.
pub fn named(name: &str) -> String {
    GOOD.replace("name: api", &format!("name: {name}"))
        .replace("api.example.com", &format!("{name}.example.com"))
}

/// Local mode's options for a test: one pass at a time, no waiting.
pub fn options(manifests: &std::path::Path, out: &std::path::Path) -> Options {
    Options {
        manifests: manifests.to_owned(),
        out: out.to_owned(),
        poll: Duration::from_millis(10),
        quiet: Duration::ZERO,
        max_delay: Duration::ZERO,
        once: true,
        projection: ProjectionConfig::default(),
        secrets: None,
        tls: TlsSettings::new(out.to_string_lossy()),
    }
}

/// The hosts `routes.json` serves.
pub fn served_hosts(out: &std::path::Path) -> Vec<String> {
    let binary = decode_routes(&std::fs::read(out.join(ROUTES_FILE)).unwrap()).unwrap();
    RouteConfiguration::decode(binary.as_slice())
        .unwrap()
        .virtual_hosts
        .into_iter()
        .flat_map(|host| host.domains)
        .collect()
}

/// The JSON file at `path`.
pub fn json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))).unwrap()
}

/// The `ResolvedRefs` condition of `key` (`namespace/name`) in local mode's
/// `status.json` under `out`: status, reason and message (empty when absent).
pub fn resolved_refs(out: &std::path::Path, key: &str) -> (String, String, String) {
    let status = json(&out.join(aether_controller::outputs::STATUS_FILE));
    let condition = status[key]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "ResolvedRefs")
        .cloned()
        .unwrap_or(Value::Null);
    let text = |field: &str| condition[field].as_str().unwrap_or("").to_owned();
    (text("status"), text("reason"), text("message"))
}
