//! One state-of-the-world xDS stream, for any resource type: every type
//! served (RDS, LDS, SDS, ...) is served through [`stream`] and [`fetch`] (see the crate
//! documentation for the protocol as served; delta streams are
//! [`crate::delta`]'s).
//!
//! What a stream is sent is the published [`Resources`] filtered by the
//! names its Envoy asked for (all of them when it names none, as Envoy's
//! LDS does). A response goes out when the filtered set differs from what
//! the stream last sent (or last NACKed): a change of one secret is pushed
//! to the SDS stream that asked for it, not to the streams of the others.
//!
//! Memory for clients that do not read is bounded by the configuration, not
//! by streams times versions:
//! - responses are pulled, not pushed: a task reads the stream's requests
//!   and records what the stream is owed (its `Outbox`); the response
//!   body builds the response only when hyper asks it for more, which it
//!   does once the previous response is in HTTP/2's hands and the client's
//!   window has room. An unread stream is not asked, so what it owes stays
//!   a flag and the latest version: versions published meanwhile are
//!   skipped (state of the world allows it), never queued;
//! - a response is pieces around its resources' encodings (`wire.rs`): the
//!   `Bytes` each version holds once, shared by every response carrying it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use envoy_types::pb::envoy::config::core::v3::Node;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::Status;
use tracing::{debug, warn};

use crate::body::{Owes, ResponseBody, Signals};
use crate::fleet::{Acks, Fleet, Holds, Member, Membership, Need, Report};
use crate::metrics::{OpenStream, XdsMetrics};
use crate::resources::{Encoded, Resources};

pub(crate) mod wire;

/// What the server publishes for one type: the latest version, if any.
pub type Current = watch::Receiver<Option<Arc<Resources>>>;

/// What a stream does with a new list of names (and the asking node).
pub type OnNames = dyn Fn(&[String], Option<&Node>) + Send + Sync;

/// What a stream serves: its type, and what to do with a new list of
/// names (the controller's RDS warns about names it does not serve).
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

impl Kind {
    /// What identifies what `resources` holds for a stream asking `names`:
    /// the digest of those resources (by name), or the version of them all.
    fn digest(&self, resources: &Resources, names: &[String]) -> String {
        if self.by_name {
            crate::resources::set_version(resources.filtered(names))
        } else {
            resources.version().to_owned()
        }
    }

    /// The response carrying what `resources` holds for `names`, with `nonce`.
    fn response(&self, resources: &Resources, names: &[String], nonce: u64) -> Vec<Bytes> {
        let items: Vec<&Encoded> = resources
            .filtered(names)
            .into_iter()
            .map(|(_, item)| &item.body)
            .collect();
        // By name, the version of what is sent (for the one plain route
        // configuration, `routes.json`'s versionInfo), not of every chain's.
        wire::response(
            self.type_url,
            &self.digest(resources, names),
            &items,
            &nonce.to_string(),
        )
    }
}

/// What one stream owes its client, shared by its request task and its
/// response body.
pub(crate) struct Outbox {
    kind: Kind,
    owed: Mutex<Owed>,
    /// The latest version; the body reads it when it writes.
    current: Current,
    metrics: Arc<dyn XdsMetrics>,
    signals: Signals,
    /// Told of each answer.
    fleet: Fleet,
}

struct Owed {
    /// The first request has come: nothing is sent before it.
    asked: bool,
    /// Send the current resources even if they were sent (asked anew).
    again: bool,
    /// Resource names of the last request (empty: all).
    names: Vec<String>,
    /// Nonce of the last response (a counter per stream).
    nonce: u64,
    /// Digest of what was last sent, or last NACKed: not sent again.
    sent: Option<String>,
    /// The names the last response carried.
    sent_names: Vec<String>,
    /// What Envoy answered.
    acks: Acks,
    /// The node id of the first request that gave one.
    node: Option<String>,
    /// When the stream opened: it waits for its first request since.
    opened: tokio::time::Instant,
}

impl Default for Owed {
    fn default() -> Self {
        Self {
            asked: false,
            again: false,
            names: Vec::new(),
            nonce: 0,
            sent: None,
            sent_names: Vec::new(),
            acks: Acks::default(),
            node: None,
            opened: tokio::time::Instant::now(),
        }
    }
}

impl Outbox {
    pub(crate) fn new(kind: Kind, current: Current, metrics: Arc<dyn XdsMetrics>, fleet: Fleet) -> Arc<Self> {
        fleet.waiting_from(tokio::time::Instant::now());
        Arc::new(Self {
            kind,
            owed: Mutex::new(Owed::default()),
            current,
            metrics,
            signals: Signals::default(),
            fleet,
        })
    }

    /// A publication came: the stream waits until it is sent (a stream
    /// that does not read waits for ever).
    fn published(&self) {
        let Some(seq) = self.current.borrow().as_ref().map(|current| current.seq()) else {
            return;
        };
        if let Some(since) = self.lock().acks.published(seq) {
            self.fleet.waiting_from(since);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Owed> {
        // Each update is one step: the state is consistent after a panic.
        self.owed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self) {
        self.signals.wake();
    }

    /// Ends the stream with `status` once what is being written is written.
    fn end(&self, status: Status) {
        self.signals.end(status);
    }
}

impl Owes for Outbox {
    fn signals(&self) -> &Signals {
        &self.signals
    }

    /// The next response owed, as pieces, if any: the current resources,
    /// when the stream has asked and has not been sent them (or asked anew).
    fn next(&self) -> Option<Vec<Bytes>> {
        let mut owed = self.lock();
        if !owed.asked {
            return None;
        }
        let resources = self.current.borrow().clone()?;
        let digest = self.kind.digest(&resources, &owed.names);
        if !owed.again && owed.sent.as_ref() == Some(&digest) {
            // Nothing new to this stream: it holds this one too once it
            // answered what it was sent.
            owed.acks.synced(resources.seq());
            return None;
        }
        owed.again = false;
        owed.nonce += 1;
        owed.sent = Some(digest);
        owed.sent_names = resources
            .filtered(&owed.names)
            .into_iter()
            .map(|(name, _)| name.to_owned())
            .collect();
        let nonce = owed.nonce;
        owed.acks.sent(nonce);
        if let Some(since) = owed.acks.synced(resources.seq()) {
            self.fleet.waiting_from(since);
        }
        self.metrics.response_sent();
        Some(self.kind.response(&resources, &owed.names, nonce))
    }
}

impl Member for Outbox {
    fn node(&self) -> Option<String> {
        self.lock().node.clone()
    }

    fn holds(&self, need: &Need) -> Holds {
        if need.type_url != self.kind.type_url {
            return Holds::NotServed;
        }
        let owed = self.lock();
        if !owed.asked {
            return Holds::NotYet;
        }
        let asks = owed.names.is_empty() || owed.names.contains(&need.name);
        owed.acks.holds(asks, need)
    }

    fn waiting_since(&self, type_url: &str) -> Option<tokio::time::Instant> {
        (type_url == self.kind.type_url).then(|| self.oldest_wait()).flatten()
    }

    fn oldest_wait(&self) -> Option<tokio::time::Instant> {
        let owed = self.lock();
        if !owed.asked {
            return Some(owed.opened);
        }
        owed.acks.waiting_since()
    }

    fn report(&self) -> Report {
        let owed = self.lock();
        let mut report = Report {
            streams: 1,
            node: owed.node.clone(),
            ..Report::default()
        };
        if owed.asked {
            report.add(self.kind.type_url, &owed.acks);
        }
        report
    }
}

/// Serves one stream of `kind` on `requests`, a member of `fleet` while it
/// lasts: its response body, whose request task runs until Envoy closes
/// the stream, the body is dropped, or `closing` (the server stops: the
/// stream ends with UNAVAILABLE).
pub fn stream(
    kind: Kind,
    requests: crate::requests::Requests,
    current: Current,
    metrics: Arc<dyn XdsMetrics>,
    fleet: &Fleet,
    closing: CancellationToken,
) -> ResponseBody {
    let outbox = Outbox::new(kind, current, metrics, fleet.clone());
    let membership = fleet.join(outbox.clone());
    tokio::spawn(read_requests(requests, outbox.clone(), membership, closing));
    ResponseBody::stream(outbox)
}

/// A single answer (`Fetch*`): what `current` holds for `names`.
pub fn fetch(kind: &Kind, names: &[String], current: &Current) -> Result<Vec<Bytes>, Status> {
    let Some(resources) = current.borrow().clone() else {
        return Err(Status::unavailable("nothing published yet"));
    };
    Ok(kind.response(&resources, names, 1))
}

/// Reads one stream's requests; tells its body what is owed.
async fn read_requests(
    mut requests: crate::requests::Requests,
    outbox: Arc<Outbox>,
    membership: Membership,
    closing: CancellationToken,
) {
    // In the fleet until the stream ends, however it does.
    let _membership = membership;
    let metrics = outbox.metrics.clone();
    let kind = outbox.kind.clone();
    let mut current = outbox.current.clone();
    let _open = OpenStream::new(metrics.as_ref());
    loop {
        let request = tokio::select! {
            () = outbox.signals.closed() => return,
            () = closing.cancelled() => {
                outbox.end(Status::unavailable("the server is shutting down"));
                return;
            }
            changed = current.changed() => {
                if changed.is_err() {
                    outbox.end(Status::unavailable("the server is shutting down"));
                    return;
                }
                // The body sends it if it is new to this stream, once asked.
                current.mark_unchanged();
                outbox.published();
                outbox.wake();
                continue;
            }
            request = requests.next() => request,
        };
        let request = match request {
            Some(Ok(request)) => request,
            Some(Err(status)) => {
                debug!(%status, "xds: stream ended by an error");
                outbox.end(status);
                return;
            }
            None => {
                outbox.end(Status::ok(""));
                return;
            }
        };
        if !request.type_url.is_empty() && request.type_url != kind.type_url {
            let message = format!("this stream serves only {}, not {}", kind.type_url, request.type_url);
            outbox.end(Status::invalid_argument(message));
            return;
        }
        let mut owed = outbox.lock();
        if owed.node.is_none() {
            owed.node = request.node.as_ref().and_then(|node| crate::fleet::node_id(&node.id));
        }
        if !request.response_nonce.is_empty() && request.response_nonce != owed.nonce.to_string() {
            debug!(nonce = %request.response_nonce, "xds: stale request ignored");
            continue;
        }
        if let Some(error) = &request.error_detail {
            metrics.response_refused();
            warn!(type_url = kind.type_url, version = %request.version_info, message = %error.message,
                node = ?owed.node, "xds: Envoy rejected a configuration");
            let (nonce, names) = (owed.nonce, std::mem::take(&mut owed.sent_names));
            owed.acks.refused(nonce, &names, &error.message, false);
            outbox.fleet.changed();
        } else if !request.response_nonce.is_empty() {
            debug!(type_url = kind.type_url, version = %request.version_info, "xds: acknowledged");
            let (nonce, names) = (owed.nonce, std::mem::take(&mut owed.sent_names));
            owed.acks.acked(nonce, &names);
            outbox.fleet.changed();
        }
        if owed.asked && request.resource_names == owed.names {
            continue;
        }
        // The first request, or new names: the current resources, even if
        // they were sent before.
        owed.asked = true;
        owed.again = true;
        owed.names = request.resource_names;
        (kind.on_names)(&owed.names, request.node.as_ref());
        drop(owed);
        outbox.wake();
    }
}

#[cfg(test)]
mod tests;
