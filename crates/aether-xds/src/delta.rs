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
//! O(changes) ([`crate::resources::Resources::changes_since`]); a resource
//! that goes is removed (`removed_resources`) from the streams that hold
//! it.
//!
//! Each response has its own nonce; a request naming the last nonce of its
//! type is an ACK, or a NACK (`error_detail`): logged with Envoy's message
//! and counted, and its versions are not sent again (the next change is);
//! a route configuration refused alone is quarantined for every stream
//! ([`crate::quarantine`]), unless another Envoy took that version.
//! A request with an older nonce still changes the subscription.
//!
//! As for state of the world ([`crate::sotw`]), responses are built when
//! the body is polled, one at a time: an unread stream holds its
//! subscriptions and the latest publication, never a queue of versions.
//! When several types are owed, listeners go first, then routes, then
//! secrets: Envoy asks for the route configuration and the secrets a new
//! listener names once it has the listener, and warms the listener until
//! they arrive.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryRequest;
use futures_util::StreamExt;
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tracing::{debug, warn};

use crate::body::{Owes, ResponseBody, Signals};
use crate::fleet::{Acks, Fleet, Holds, Member, Need, Report};
use crate::metrics::{OpenStream, Refused, XdsMetrics};
use crate::quarantine::{Overruled, Quarantine};
use crate::resources::Item;
use crate::sotw::{Current, Kind};

mod subscription;
pub(crate) mod wire;

use subscription::Subscription;

/// The request messages of a delta stream.
pub type DeltaRequests = crate::requests::Requests<Incoming, DeltaDiscoveryRequest>;

/// One type a stream serves: its kind and its publications.
#[derive(Clone)]
pub struct Served {
    /// The type URL and what to do with new names.
    pub kind: Kind,
    /// The latest publication.
    pub current: Current,
    /// Told of what Envoy takes and refuses, when its refusals are
    /// quarantined.
    pub quarantine: Option<Quarantine>,
}

/// What one stream owes its client, shared by its request task and its
/// response body.
struct Outbox {
    /// In the order responses go out when several are owed.
    types: Vec<Served>,
    state: Mutex<State>,
    metrics: Arc<dyn XdsMetrics>,
    signals: Signals,
    /// Told of each answer.
    fleet: Fleet,
}

struct State {
    /// One per type, as `Outbox::types`.
    subscriptions: Vec<Subscription>,
    /// The nonce of the last response (a counter per stream).
    nonce: u64,
    /// Type URLs asked for that this stream does not serve, warned about once.
    unknown: Vec<String>,
    /// Per type, the resources of the last sync not sent yet: their names
    /// (sent at the version current when their turn comes).
    pending: Vec<VecDeque<String>>,
    /// Per type, resources of a refused response, sent again one per
    /// response, so that Envoy takes all but the one it refuses.
    singles: Vec<VecDeque<String>>,
    /// Per type, the resources each recent response carried, by nonce (at
    /// most [`RECENT`]), to tell which ones an ACK took or a NACK refused.
    sent: Vec<VecDeque<(u64, Carried)>>,
    /// Per type, what Envoy answered ([`Acks`]).
    acks: Vec<Acks>,
    /// Per type, the publication whose changes `pending` holds.
    syncing: Vec<Option<u64>>,
    /// The node id of the stream's first request that gave one.
    node: Option<String>,
    /// Whether its Envoy's refusals were overruled (it refused what
    /// another Envoy took): they quarantine nothing more.
    overruled: Overruled,
    /// When the stream opened: it waits for each type's first request since.
    opened: tokio::time::Instant,
}

/// The resources one response carried, by name.
type Carried = Vec<(String, Item)>;

/// Resources per response at most: Envoy applies a response whole or not at
/// all, so a refused one is sent again a resource at a time.
const BATCH_RESOURCES: usize = 500;
/// Bytes of resources per response at most (one larger resource goes alone).
const BATCH_BYTES: usize = 1 << 20;
/// Responses per type whose names are kept for their NACKs.
const RECENT: usize = 64;

impl State {
    /// The state of a stream serving `types` types, before any request.
    fn new(types: usize) -> Self {
        Self {
            subscriptions: (0..types).map(|_| Subscription::default()).collect(),
            pending: (0..types).map(|_| Default::default()).collect(),
            singles: (0..types).map(|_| Default::default()).collect(),
            sent: (0..types).map(|_| Default::default()).collect(),
            acks: (0..types).map(|_| Acks::default()).collect(),
            syncing: vec![None; types],
            nonce: 0,
            unknown: Vec::new(),
            node: None,
            overruled: Overruled::default(),
            opened: tokio::time::Instant::now(),
        }
    }
}

impl Outbox {
    /// A stream's outbox before any request; it waits for them from now.
    fn new(types: Vec<Served>, metrics: Arc<dyn XdsMetrics>, fleet: &Fleet) -> Arc<Self> {
        let state = State::new(types.len());
        fleet.waiting_from(state.opened);
        Arc::new(Outbox {
            types,
            state: Mutex::new(state),
            metrics,
            signals: Signals::default(),
            fleet: fleet.clone(),
        })
    }

    /// Publications came: each type whose stream is not synced with its
    /// latest waits until it is sent (a stream that does not read waits
    /// for ever).
    fn published(&self) {
        let mut state = self.lock();
        for (index, served) in self.types.iter().enumerate() {
            let Some(seq) = served.current.borrow().as_ref().map(|current| current.seq()) else {
                continue;
            };
            if let Some(since) = state.acks[index].published(seq) {
                self.fleet.waiting_from(since);
            }
        }
    }

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

    /// The first type, in order, that owes something: its changes, in
    /// responses of at most [`BATCH_RESOURCES`] resources and
    /// [`BATCH_BYTES`]. Envoy refuses a response whole for one resource it
    /// refuses, so the resources of a refused response are sent again one
    /// per response ([`State::singles`]): a tenant's refused configuration
    /// then costs that tenant alone, after one round trip.
    fn next(&self) -> Option<Vec<Bytes>> {
        let mut guard = self.lock();
        let state = &mut *guard;
        for (index, served) in self.types.iter().enumerate() {
            let Some(current) = served.current.borrow().clone() else {
                continue;
            };
            let wanted = |subscription: &Subscription, name: &String| {
                current.get(name).filter(|_| subscription.wants(name)).cloned()
            };
            let mut put: Vec<(String, Item)> = Vec::new();
            let mut removed: Vec<String> = Vec::new();
            while let Some(name) = state.singles[index].pop_front() {
                if let Some(item) = wanted(&state.subscriptions[index], &name) {
                    put.push((name, item));
                    break;
                }
            }
            if put.is_empty() {
                let mut owed = !state.pending[index].is_empty();
                if !owed {
                    match state.subscriptions[index].next(&current) {
                        Some(changes) => {
                            owed = true;
                            state.pending[index].extend(changes.put.into_iter().map(|(name, _)| name));
                            removed = changes.removed;
                            state.syncing[index] = Some(current.seq());
                        }
                        // Nothing new to this stream: it holds this one too
                        // once it answered what it was sent.
                        None if state.subscriptions[index].asked() => {
                            if let Some(since) = state.acks[index].synced(current.seq()) {
                                self.fleet.waiting_from(since);
                            }
                        }
                        None => {}
                    }
                }
                if !owed {
                    continue;
                }
                let mut bytes = 0;
                while put.len() < BATCH_RESOURCES
                    && let Some(name) = state.pending[index].front()
                {
                    let Some(item) = wanted(&state.subscriptions[index], name) else {
                        state.pending[index].pop_front();
                        continue;
                    };
                    if !put.is_empty() && bytes + item.body.len() > BATCH_BYTES {
                        break;
                    }
                    bytes += item.body.len();
                    let name = state.pending[index].pop_front().unwrap_or_default();
                    put.push((name, item));
                }
            }
            state.nonce += 1;
            let nonce = state.nonce;
            let recent = &mut state.sent[index];
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back((nonce, put.clone()));
            state.acks[index].sent(nonce);
            if state.pending[index].is_empty()
                && let Some(seq) = state.syncing[index].take()
                && let Some(since) = state.acks[index].synced(seq)
            {
                self.fleet.waiting_from(since);
            }
            self.metrics.response_sent();
            let put: Vec<(&str, &Item)> = put.iter().map(|(name, item)| (name.as_str(), item)).collect();
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

impl Member for Outbox {
    fn node(&self) -> Option<String> {
        self.lock().node.clone()
    }

    fn holds(&self, need: &Need) -> Holds {
        let Some(index) = self.index(need.type_url) else {
            return Holds::NotServed;
        };
        let state = self.lock();
        let subscription = &state.subscriptions[index];
        if !subscription.asked() {
            return Holds::NotYet;
        }
        state.acks[index].holds(subscription.wants(&need.name), need)
    }

    fn waiting_since(&self, type_url: &str) -> Option<tokio::time::Instant> {
        let index = self.index(type_url)?;
        let state = self.lock();
        if !state.subscriptions[index].asked() {
            return Some(state.opened);
        }
        state.acks[index].waiting_since()
    }

    fn oldest_wait(&self) -> Option<tokio::time::Instant> {
        let state = self.lock();
        (0..self.types.len())
            .filter_map(|index| {
                if state.subscriptions[index].asked() {
                    state.acks[index].waiting_since()
                } else {
                    Some(state.opened)
                }
            })
            .min()
    }

    fn report(&self) -> Report {
        let state = self.lock();
        let mut report = Report {
            streams: 1,
            node: state.node.clone(),
            ..Report::default()
        };
        for (index, served) in self.types.iter().enumerate() {
            if state.subscriptions[index].asked() {
                report.add(served.kind.type_url, &state.acks[index]);
            }
        }
        report
    }
}

/// Serves one delta stream of `types` (their order is the order responses
/// go out in) on `requests`, a member of `fleet` while it lasts: its
/// response body, whose request task runs until Envoy closes the stream,
/// the body is dropped, or `closing`.
pub fn stream(
    types: Vec<Served>,
    requests: DeltaRequests,
    metrics: Arc<dyn XdsMetrics>,
    fleet: &Fleet,
    closing: CancellationToken,
) -> ResponseBody {
    let outbox = Outbox::new(types, metrics, fleet);
    let membership = fleet.join(outbox.clone());
    tokio::spawn(read_requests(requests, outbox.clone(), membership, closing));
    ResponseBody::stream(outbox)
}

/// Resolves when any of `currents` has a new publication; `Err` when a
/// publisher is gone.
async fn any_changed(currents: &mut [Current]) -> Result<(), tokio::sync::watch::error::RecvError> {
    let changes = currents.iter_mut().map(|current| Box::pin(current.changed()));
    futures_util::future::select_all(changes).await.0
}

/// Reads one stream's requests; tells its body what is owed.
async fn read_requests(
    mut requests: DeltaRequests,
    outbox: Arc<Outbox>,
    membership: crate::fleet::Membership,
    closing: CancellationToken,
) {
    // In the fleet until the stream ends, however it does.
    let _membership = membership;
    let metrics = outbox.metrics.clone();
    let mut currents: Vec<Current> = outbox.types.iter().map(|served| served.current.clone()).collect();
    let _open = OpenStream::new(metrics.as_ref());
    loop {
        let request = tokio::select! {
            () = outbox.signals.closed() => return,
            () = closing.cancelled() => {
                outbox.signals.end(Status::unavailable("the server is shutting down"));
                return;
            }
            changed = any_changed(&mut currents) => {
                if changed.is_err() {
                    outbox.signals.end(Status::unavailable("the server is shutting down"));
                    return;
                }
                // The body sends what is new to each subscription.
                for current in &mut currents {
                    current.mark_unchanged();
                }
                outbox.published();
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
    if state.node.is_none() {
        state.node = request.node.as_ref().and_then(|node| crate::fleet::node_id(&node.id));
    }
    let mut retry = false;
    let mut answered = false;
    if !request.response_nonce.is_empty() {
        // Responses go out without waiting for ACKs: a NACK may name any
        // recent one.
        let nonce = request.response_nonce.parse::<u64>().ok();
        let refused = nonce.and_then(|nonce| {
            let at = state.sent[index].iter().position(|(sent, _)| *sent == nonce)?;
            Some((nonce, std::mem::take(&mut state.sent[index][at].1)))
        });
        match (refused, &request.error_detail) {
            (None, _) => debug!(nonce = %request.response_nonce, "xds: a stale ACK or NACK ignored"),
            (Some((nonce, items)), Some(error)) => {
                outbox.metrics.response_refused();
                warn!(type_url = kind.type_url, nonce, message = %error.message, node = ?state.node,
                    "xds: Envoy rejected a configuration");
                let names: Vec<String> = items.iter().map(|(name, _)| name.clone()).collect();
                state.acks[index].refused(nonce, &names, &error.message, names.len() > 1);
                answered = true;
                match &items[..] {
                    // One alone: quarantined (when its type's refusals
                    // are), or not sent again
                    // until it changes.
                    [(name, item)] => {
                        if let Some(quarantine) = &outbox.types[index].quarantine {
                            let envoy = state
                                .node
                                .clone()
                                .unwrap_or_else(|| crate::fleet::NO_NODE_ID.to_owned());
                            quarantine.refused(name, item, &envoy, &error.message, &state.overruled);
                        }
                    }
                    // Several together: each again alone, so that Envoy
                    // takes the others.
                    [] => {}
                    _ => {
                        state.singles[index].extend(names);
                        retry = true;
                    }
                }
            }
            (Some((nonce, items)), None) => {
                debug!(type_url = kind.type_url, nonce, "xds: acknowledged");
                let names: Vec<String> = items.iter().map(|(name, _)| name.clone()).collect();
                state.acks[index].acked(nonce, &names);
                if let Some(quarantine) = &outbox.types[index].quarantine {
                    quarantine.taken(&items, &state.overruled);
                }
                answered = true;
            }
        }
    }
    if retry {
        outbox.signals.wake();
    }
    if answered {
        outbox.fleet.changed();
    }
    let subscription = &mut state.subscriptions[index];
    let changed = subscription.apply(&request).inspect_err(|status| {
        outbox.metrics.stream_refused(Refused::Subscription);
        warn!(type_url = kind.type_url, node = ?state.node, message = %status.message(),
            "xds: a stream subscribing past its bound is ended");
    })?;
    if changed {
        drop(state);
        // The names this request adds, not all the stream asks for: Envoy
        // subscribes a chain's configuration at a time, 50,000 requests at
        // start, and telling each the whole list was quadratic.
        let added: Vec<String> = request
            .resource_names_subscribe
            .iter()
            .filter(|name| *name != subscription::WILDCARD)
            .cloned()
            .collect();
        (kind.on_names)(&added, request.node.as_ref());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
