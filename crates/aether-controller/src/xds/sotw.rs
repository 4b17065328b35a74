//! One state-of-the-world xDS stream, for any resource type: RDS, LDS and
//! SDS all serve through [`serve_stream`] (see the parent module for the
//! protocol as served).
//!
//! What a stream is sent is the published [`Resources`] filtered by the
//! names its Envoy asked for (all of them when it names none, as Envoy's
//! LDS does). A response goes out when the filtered set differs from what
//! the stream last sent (or last NACKed): a change of one secret is pushed
//! to the SDS stream that asked for it, not to the streams of the others.

use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};
use envoy_types::pb::google::protobuf::Any;
use futures_util::StreamExt;
use tokio::sync::{mpsc, watch};
use tonic::{Status, Streaming};
use tracing::{debug, warn};

use crate::metrics::Metrics;
use crate::outputs;

/// One version of a type's resources.
#[derive(Debug, Clone, PartialEq)]
pub struct Resources {
    /// Digest of every resource ([`outputs::version_of`] of their names and
    /// encodings; for one resource, of its encoding alone, which is
    /// `routes.json`'s `versionInfo` for the route configuration).
    pub version: String,
    /// `(name, encoded message)`, sorted by name.
    pub items: Vec<(String, Vec<u8>)>,
}

impl Resources {
    /// `items` (any order) and their version.
    pub fn new(mut items: Vec<(String, Vec<u8>)>) -> Self {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        Self {
            version: version(&items),
            items,
        }
    }

    /// The items `names` asks for (all when empty).
    fn filtered(&self, names: &[String]) -> Vec<&(String, Vec<u8>)> {
        self.items
            .iter()
            .filter(|(name, _)| names.is_empty() || names.contains(name))
            .collect()
    }
}

fn version<'a>(items: impl IntoIterator<Item = &'a (String, Vec<u8>)>) -> String {
    let items: Vec<&(String, Vec<u8>)> = items.into_iter().collect();
    match items.as_slice() {
        [(_, body)] => outputs::version_of(body),
        _ => {
            let mut all = Vec::new();
            for (name, body) in items {
                all.extend_from_slice(&(name.len() as u64).to_be_bytes());
                all.extend_from_slice(name.as_bytes());
                all.extend_from_slice(&(body.len() as u64).to_be_bytes());
                all.extend_from_slice(body);
            }
            outputs::version_of(&all)
        }
    }
}

/// What a stream does with a new list of names (and the asking node).
pub type OnNames = dyn Fn(&[String], Option<&Node>) + Send + Sync;

/// What a stream serves: its type, and what to do with a new list of
/// names (RDS warns about names it does not serve).
#[derive(Clone)]
pub struct Kind {
    /// The type URL of the resources (and of the requests accepted).
    pub type_url: &'static str,
    /// Whether a stream is pushed only what changes among the resources it
    /// names (SDS: one secret's rotation reaches only its streams), rather
    /// than every new version (RDS, LDS: one resource each).
    pub by_name: bool,
    /// Called once per stream and distinct list of names asked for.
    pub on_names: Arc<OnNames>,
}

/// What one stream has sent, and what its Envoy asked for.
pub(crate) struct StreamState {
    type_url: &'static str,
    by_name: bool,
    /// Resource names of the last request (empty: all).
    pub(crate) names: Vec<String>,
    /// Nonce of the last response (a counter per stream).
    nonce: u64,
    /// Digest of the filtered set last sent, or last NACKed: not sent again.
    sent: Option<String>,
}

impl StreamState {
    /// Nothing sent yet, `names` asked for.
    pub(crate) fn new(type_url: &'static str, by_name: bool, names: Vec<String>) -> Self {
        Self {
            type_url,
            by_name,
            names,
            nonce: 0,
            sent: None,
        }
    }

    /// What identifies what `resources` holds for this stream: the digest
    /// of its resources (by name), or the version of them all.
    fn digest(&self, resources: &Resources) -> String {
        if self.by_name {
            version(self.filtered_items(resources))
        } else {
            resources.version.clone()
        }
    }

    fn filtered_items<'a>(&self, resources: &'a Resources) -> Vec<&'a (String, Vec<u8>)> {
        resources.filtered(&self.names)
    }

    /// The response carrying what `resources` holds for this stream.
    pub(crate) fn response(&mut self, resources: &Resources) -> DiscoveryResponse {
        self.nonce += 1;
        self.sent = Some(self.digest(resources));
        let resources_sent = self
            .filtered_items(resources)
            .into_iter()
            .map(|(_, body)| Any {
                type_url: self.type_url.to_owned(),
                value: body.clone(),
            })
            .collect();
        DiscoveryResponse {
            version_info: resources.version.clone(),
            resources: resources_sent,
            type_url: self.type_url.to_owned(),
            nonce: self.nonce.to_string(),
            ..DiscoveryResponse::default()
        }
    }
}

/// Decrements `xds_streams` when dropped.
struct OpenStream<'a>(&'a Metrics);

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.0.xds_streams.dec();
    }
}

/// Serves one stream of `kind` until Envoy closes it or the response
/// channel closes.
pub async fn serve_stream(
    kind: Kind,
    mut requests: Streaming<DiscoveryRequest>,
    mut current: watch::Receiver<Option<Arc<Resources>>>,
    responses: mpsc::Sender<Result<DiscoveryResponse, Status>>,
    metrics: Arc<Metrics>,
) {
    let mut state = StreamState::new(kind.type_url, kind.by_name, Vec::new());
    metrics.xds_streams.inc();
    // Counted down however the stream ends.
    let _open = OpenStream(&metrics);
    // Nothing is sent before the first request says what is wanted.
    let mut asked = false;
    loop {
        let resources = tokio::select! {
            request = requests.next() => {
                let request = match request {
                    Some(Ok(request)) => request,
                    Some(Err(status)) => {
                        debug!(%status, "xds: stream ended by an error");
                        return;
                    }
                    None => return,
                };
                if !request.type_url.is_empty() && request.type_url != kind.type_url {
                    let message = format!("this stream serves only {}, not {}", kind.type_url, request.type_url);
                    let _ = responses.send(Err(Status::invalid_argument(message))).await;
                    return;
                }
                if !request.response_nonce.is_empty() && request.response_nonce != state.nonce.to_string() {
                    debug!(nonce = %request.response_nonce, "xds: stale request ignored");
                    continue;
                }
                if let Some(error) = &request.error_detail {
                    metrics.xds_nacks.inc();
                    warn!(type_url = kind.type_url, version = %request.version_info, message = %error.message,
                        node = ?request.node.as_ref().map(|node| &node.id),
                        "xds: Envoy rejected a configuration");
                } else if !request.response_nonce.is_empty() {
                    debug!(type_url = kind.type_url, version = %request.version_info, "xds: acknowledged");
                }
                let first = !asked;
                asked = true;
                let names_changed = request.resource_names != state.names;
                state.names = request.resource_names;
                if !(first || names_changed) {
                    continue;
                }
                (kind.on_names)(&state.names, request.node.as_ref());
                // Asked anew: the current resources, even if sent before.
                current.borrow_and_update().clone()
            }
            changed = current.changed() => {
                if changed.is_err() {
                    return;
                }
                let resources = current.borrow_and_update().clone();
                // What this stream has not been sent yet (nor NACKed), once Envoy has asked.
                resources.filter(|resources| asked && state.sent.as_deref() != Some(state.digest(resources).as_str()))
            }
        };
        let Some(resources) = resources else {
            continue;
        };
        metrics.xds_responses.inc();
        if responses.send(Ok(state.response(&resources))).await.is_err() {
            return;
        }
    }
}
