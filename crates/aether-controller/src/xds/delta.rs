//! Delta (incremental) xDS streams: Envoy is sent only what changed and
//! what was removed, over one aggregated stream for listeners, routes and
//! secrets (`AggregatedDiscoveryService/DeltaAggregatedResources`), or over
//! a stream per type (`DeltaListeners`, `DeltaRoutes`, `DeltaSecrets`).
//!
//! Per stream and type, a subscription (`subscription.rs`): the wildcard
//! (a first request naming nothing, or `*`) or a set of names, changed by
//! `resource_names_subscribe`/`_unsubscribe`, and the publication it last
//! synced with, which is what Envoy holds by our account. A reconnecting
//! Envoy's `initial_resource_versions` are not sent again at the same
//! version, and those gone are removed. A publication costs the stream
//! O(changes) ([`super::resources::Resources::changes_since`]); a resource
//! that goes is removed (`removed_resources`) from the streams that hold
//! it.
//!
//! Each response has its own nonce; a request naming the last nonce of its
//! type is an ACK, or a NACK (`error_detail`): logged with Envoy's message
//! and counted, and its versions are not sent again (the next change is).
//! A request with an older nonce still changes the subscription.
//!
//! As for state of the world ([`super::sotw`]), responses are built when
//! the body is polled, one at a time: an unread stream holds its
//! subscriptions and the latest publication, never a queue of versions.
//! When several types are owed, listeners go first, then routes, then
//! secrets: Envoy asks for the route configuration and the secrets a new
//! listener names once it has the listener, and warms the listener until
//! they arrive.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
use futures_util::StreamExt;
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tracing::{debug, warn};

use super::body::{Owes, ResponseBody, Signals};
use super::sotw::{Current, Kind};
use crate::metrics::Metrics;

mod subscription;
pub(crate) mod wire;

use subscription::Subscription;

/// The request messages of a delta stream.
pub type DeltaRequests = super::requests::Requests<Incoming, DeltaDiscoveryRequest>;

/// One type a stream serves: its kind and its publications.
#[derive(Clone)]
pub struct Served {
    /// The type URL and what to do with new names.
    pub kind: Kind,
    /// The latest publication.
    pub current: Current,
}

/// What one stream owes its client, shared by its request task and its
/// response body.
struct Outbox {
    /// In the order responses go out when several are owed.
    types: Vec<Served>,
    state: Mutex<State>,
    metrics: Arc<Metrics>,
    signals: Signals,
}

#[derive(Default)]
struct State {
    /// One per type, as `Outbox::types`.
    subscriptions: Vec<Subscription>,
    /// The nonce of the last response (a counter per stream).
    nonce: u64,
    /// Per type, the nonce of its last response.
    last_nonces: Vec<u64>,
    /// Type URLs asked for that this stream does not serve, warned about once.
    unknown: Vec<String>,
    /// Per type, the resources of the last sync not sent yet: their names
    /// (sent at the version current when their turn comes).
    pending: Vec<std::collections::VecDeque<String>>,
}

impl State {
    /// The state of a stream serving `types` types, before any request.
    fn new(types: usize) -> Self {
        Self {
            subscriptions: (0..types).map(|_| Subscription::default()).collect(),
            last_nonces: vec![0; types],
            pending: (0..types).map(|_| Default::default()).collect(),
            ..Self::default()
        }
    }
}

impl Outbox {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Each update is one step: the state is consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index of `type_url` among the types served.
    fn index(&self, type_url: &str) -> Option<usize> {
        self.types.iter().position(|served| served.kind.type_url == type_url)
    }
}

impl Owes for Outbox {
    fn signals(&self) -> &Signals {
        &self.signals
    }

    /// The first type, in order, that owes something: one resource (and
    /// the removals) per response. Envoy refuses a whole response for one
    /// resource it refuses, so resources sent together would share their
    /// fate: one per response costs a tenant's refused configuration that
    /// tenant alone.
    fn next(&self) -> Option<Vec<Bytes>> {
        let mut guard = self.lock();
        let state = &mut *guard;
        for (index, served) in self.types.iter().enumerate() {
            let Some(current) = served.current.borrow().clone() else {
                continue;
            };
            let subscription = &mut state.subscriptions[index];
            let mut put: Vec<(String, super::Item)> = Vec::new();
            let mut removed: Vec<String> = Vec::new();
            while let Some(name) = state.pending[index].pop_front() {
                if let Some(item) = current.get(&name).filter(|_| subscription.wants(&name)) {
                    put.push((name, item.clone()));
                    break;
                }
            }
            if put.is_empty() {
                let Some(changes) = subscription.next(&current) else {
                    continue;
                };
                let mut changes_put = changes.put.into_iter();
                put.extend(changes_put.next());
                state.pending[index].extend(changes_put.map(|(name, _)| name));
                removed = changes.removed;
            }
            state.nonce += 1;
            let nonce = state.nonce;
            state.last_nonces[index] = nonce;
            self.metrics.xds_responses.inc();
            let put: Vec<(&str, &super::Item)> = put.iter().map(|(name, item)| (name.as_str(), item)).collect();
            let removed: Vec<&str> = removed.iter().map(String::as_str).collect();
            debug!(
                type_url = served.kind.type_url,
                put = put.len(),
                removed = removed.len(),
                nonce,
                "xds: delta response"
            );
            return Some(wire::response(served.kind.type_url, &put, &removed, &nonce.to_string()));
        }
        None
    }
}

/// Decrements `xds_streams` when dropped.
struct OpenStream<'a>(&'a Metrics);

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.0.xds_streams.dec();
    }
}

/// Serves one delta stream of `types` (their order is the order responses
/// go out in) on `requests`: its response body, whose request task runs
/// until Envoy closes the stream, the body is dropped, or `closing`.
pub fn stream(
    types: Vec<Served>,
    requests: DeltaRequests,
    metrics: Arc<Metrics>,
    closing: CancellationToken,
) -> ResponseBody {
    let state = State::new(types.len());
    let outbox = Arc::new(Outbox {
        types,
        state: Mutex::new(state),
        metrics,
        signals: Signals::default(),
    });
    tokio::spawn(read_requests(requests, outbox.clone(), closing));
    ResponseBody::stream(outbox)
}

/// Resolves when any of `currents` has a new publication; `Err` when a
/// publisher is gone.
async fn any_changed(currents: &mut [Current]) -> Result<(), tokio::sync::watch::error::RecvError> {
    let changes = currents.iter_mut().map(|current| Box::pin(current.changed()));
    futures_util::future::select_all(changes).await.0
}

/// Reads one stream's requests; tells its body what is owed.
async fn read_requests(mut requests: DeltaRequests, outbox: Arc<Outbox>, closing: CancellationToken) {
    let metrics = outbox.metrics.clone();
    let mut currents: Vec<Current> = outbox.types.iter().map(|served| served.current.clone()).collect();
    metrics.xds_streams.inc();
    // Counted down however the stream ends.
    let _open = OpenStream(&metrics);
    loop {
        let request = tokio::select! {
            () = outbox.signals.closed() => return,
            () = closing.cancelled() => {
                outbox.signals.end(Status::unavailable("the controller is shutting down"));
                return;
            }
            changed = any_changed(&mut currents) => {
                if changed.is_err() {
                    outbox.signals.end(Status::unavailable("the controller is shutting down"));
                    return;
                }
                // The body sends what is new to each subscription.
                for current in &mut currents {
                    current.mark_unchanged();
                }
                outbox.signals.wake();
                continue;
            }
            request = requests.next() => request,
        };
        let request = match request {
            Some(Ok(request)) => request,
            Some(Err(status)) => {
                debug!(%status, "xds: delta stream ended by an error");
                outbox.signals.end(status);
                return;
            }
            None => {
                outbox.signals.end(Status::ok(""));
                return;
            }
        };
        if let Err(status) = handle(&outbox, request) {
            outbox.signals.end(status);
            return;
        }
        outbox.signals.wake();
    }
}

/// Applies one request: its ACK or NACK, and its subscription changes.
fn handle(outbox: &Outbox, request: DeltaDiscoveryRequest) -> Result<(), Status> {
    let index = match outbox.index(&request.type_url) {
        Some(index) => index,
        // A stream of one type takes requests that do not say theirs.
        None if request.type_url.is_empty() && outbox.types.len() == 1 => 0,
        None if outbox.types.len() == 1 => {
            return Err(Status::invalid_argument(format!(
                "this stream serves only {}, not {}",
                outbox.types[0].kind.type_url, request.type_url
            )));
        }
        None => {
            // The aggregated stream serves what it serves; Envoy's other
            // subscriptions (clusters, endpoints) are not ours to end it for.
            let mut state = outbox.lock();
            if !state.unknown.contains(&request.type_url) && state.unknown.len() < 16 {
                warn!(type_url = %request.type_url, node = ?request.node.as_ref().map(|node| &node.id),
                    "xds: Envoy asked the aggregated stream for a type this server does not serve; ignored");
                state.unknown.push(request.type_url);
            }
            return Ok(());
        }
    };
    let kind = &outbox.types[index].kind;
    let mut state = outbox.lock();
    if !request.response_nonce.is_empty() {
        if request.response_nonce != state.last_nonces[index].to_string() {
            debug!(nonce = %request.response_nonce, "xds: a stale ACK or NACK ignored");
        } else if let Some(error) = &request.error_detail {
            outbox.metrics.xds_nacks.inc();
            warn!(type_url = kind.type_url, nonce = %request.response_nonce, message = %error.message,
                node = ?request.node.as_ref().map(|node| &node.id),
                "xds: Envoy rejected a configuration");
        } else {
            debug!(type_url = kind.type_url, nonce = %request.response_nonce, "xds: acknowledged");
        }
    }
    let subscription = &mut state.subscriptions[index];
    if subscription.apply(&request) {
        let names = subscription.names();
        drop(state);
        (kind.on_names)(&names, request.node.as_ref());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
