//! `listeners.json`: a `DiscoveryResponse` holding the one HTTPS
//! `Listener` ([`crate::listener`]), as Envoy's LDS from a file
//! (`lds_config.path_config_source`) reads it, its chains taking the routes
//! from `routes.json` and each certificate from its SDS file, by path.

use aether_projection::{RenderError, Snapshot};
use prost::bytes::Bytes;

use super::Written;
use crate::listener;
use crate::tls::EdgeTls;

/// The HTTPS listener's file.
pub const LISTENERS_FILE: &str = "listeners.json";

/// `listeners.json` of `snapshot` when it differs from what `written`
/// holds; rendered again only when the listener would change.
pub fn render_change(
    snapshot: &Snapshot,
    tls: &EdgeTls,
    written: &Written,
) -> Result<Option<(&'static str, Bytes)>, RenderError> {
    let listeners = written.listeners_json.get(
        snapshot,
        tls,
        listener::files_source(tls),
        snapshot.routes().name(),
        |listener| {
            let bytes = super::discovery_response(listener)?;
            Ok(written.reuse(LISTENERS_FILE, bytes.into()))
        },
    )?;
    Ok(written
        .differs(LISTENERS_FILE, &listeners)
        .then_some((LISTENERS_FILE, listeners)))
}
