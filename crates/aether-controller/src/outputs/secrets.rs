//! `secrets/NAMESPACE.NAME.json`: a `DiscoveryResponse` holding one SDS
//! `Secret` (Envoy's SDS from a file) for each ready secret, owner-only
//! (0600, in a 0700 directory): it holds the private key. Envoy watches
//! each by its path: a rotation renames a new file over it, and Envoy swaps
//! the certificate without touching the listener.

use aether_projection::RenderError;

use crate::listener;
use crate::tls::EdgeTls;

/// The directory of the SDS files under the output directory.
pub use aether_projection::listener::SECRETS_DIR;

/// The files of the ready secrets: name relative to the output directory
/// → `DiscoveryResponse` JSON, sorted by name.
pub fn files(tls: &EdgeTls) -> Result<Vec<(String, Vec<u8>)>, RenderError> {
    listener::secrets(tls)
        .into_iter()
        .map(|(file, secret)| Ok((file, super::discovery_response(&secret)?)))
        .collect()
}
