//! The HTTPS listener and its secrets, as the edge's Envoy takes them:
//! files (`listeners.json`, `secrets/NAMESPACE.NAME.json`), or the
//! messages the xDS server sends.
//!
//! - `listeners.json`: a `DiscoveryResponse` holding the one `Listener`
//!   (Envoy's LDS from a file, `lds_config.path_config_source`), its chains
//!   taking the routes from `routes.json` and each certificate from its SDS
//!   file, by path.
//! - `secrets/NAMESPACE.NAME.json`: a `DiscoveryResponse` holding one
//!   `Secret` (SDS from a file), owner-only (0600, in a 0700 directory):
//!   it holds the private key. Only ready secrets have one, so Envoy never
//!   reads a certificate it would reject. Envoy watches each by its path: a
//!   rotation renames a new file over it, and Envoy swaps the certificate
//!   without touching the listener.
//!
//! The xDS variant is the same listener with routes and secrets from the
//! controller's xDS server.

use aether_projection::listener::{EdgeSource, SECRETS_DIR, https_listener, sds_secret, secret_file};
use aether_projection::{RenderError, Snapshot, descriptors};
use envoy_types::pb::envoy::config::listener::v3::Listener;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
use prost::bytes::Bytes;
use prost::{Message, Name};
use prost_reflect::{DynamicMessage, Value as ReflectValue};

use super::EdgeTls;
use crate::outputs;

/// The HTTPS listener's file.
pub const LISTENERS_FILE: &str = "listeners.json";

/// The HTTPS listener of `snapshot`, routes and secrets from `source`.
pub fn listener(snapshot: &Snapshot, tls: &EdgeTls, source: EdgeSource, route_configuration_name: &str) -> Listener {
    https_listener(
        &snapshot.tls_chains,
        &snapshot.plain_hosts_under_tls_wildcards,
        |secret| tls.resolutions.usable(secret),
        &tls.settings.listener(source, route_configuration_name),
    )
}

/// The listener as Envoy reads it from `listeners.json`.
pub fn files_listener(snapshot: &Snapshot, tls: &EdgeTls, route_configuration_name: &str) -> Listener {
    listener(
        snapshot,
        tls,
        EdgeSource::Files(tls.settings.envoy_dir.clone()),
        route_configuration_name,
    )
}

/// The listener as the xDS server sends it.
pub fn xds_listener(snapshot: &Snapshot, tls: &EdgeTls, route_configuration_name: &str) -> Listener {
    listener(
        snapshot,
        tls,
        EdgeSource::Xds(tls.settings.xds_cluster.clone()),
        route_configuration_name,
    )
}

/// The SDS resource of every ready `KUBERNETES` secret, with its file
/// name (relative to the output directory), sorted by file.
pub fn secrets(tls: &EdgeTls) -> Vec<(String, Secret)> {
    let mut secrets: Vec<(String, Secret)> = tls
        .resolutions
        .ready()
        .filter_map(|(secret, certificate)| {
            secret_file(secret).map(|file| (file, sds_secret(secret, &certificate.chain_pem, &certificate.key_pem)))
        })
        .collect();
    secrets.sort_by(|a, b| a.0.cmp(&b.0));
    secrets
}

/// `{"versionInfo": …, "resources": [message with "@type"]}` in Envoy's
/// JSON, the version [`outputs::version_of`] its bytes, as Envoy's
/// file-based subscriptions read it.
pub fn discovery_response<M: Message + Name>(message: &M) -> Result<Vec<u8>, RenderError> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct DiscoveryResponse<'a> {
        version_info: String,
        resources: [&'a DynamicMessage; 1],
    }
    let any = descriptors::pool()
        .get_message_by_name("google.protobuf.Any")
        .ok_or_else(|| RenderError::Descriptor("google.protobuf.Any is not in Envoy's descriptors".into()))?;
    let bytes = message.encode_to_vec();
    let mut resource = DynamicMessage::new(any);
    resource.set_field_by_name("type_url", ReflectValue::String(M::type_url()));
    resource.set_field_by_name("value", ReflectValue::Bytes(Bytes::copy_from_slice(&bytes)));
    // Checks the message fits Envoy's descriptors before a file holds it.
    DynamicMessage::decode(
        descriptors::pool()
            .get_message_by_name(&M::full_name())
            .ok_or_else(|| RenderError::Descriptor(format!("{} is not in Envoy's descriptors", M::full_name())))?,
        bytes.as_slice(),
    )
    .map_err(|err| RenderError::Descriptor(err.to_string()))?;
    outputs::pretty(&DiscoveryResponse {
        version_info: outputs::version_of(&bytes),
        resources: [&resource],
    })
}

/// The files of the secrets: relative name → `DiscoveryResponse` JSON.
pub fn secret_files(tls: &EdgeTls) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    secrets(tls)
        .into_iter()
        .map(|(file, secret)| Ok((file, discovery_response(&secret)?)))
        .collect()
}

/// The directory of the SDS files under the output directory.
pub fn secrets_dir() -> &'static str {
    SECRETS_DIR
}
