//! Watches: newline-delimited watch events streamed in a chunked
//! response, served from the store's history so that a watch from a
//! list's `resourceVersion` misses nothing. A watch ends at its
//! `timeoutSeconds`, when the client goes, or on [`super::KubeApi::close_watches`];
//! one from a version no longer kept gets an `ERROR` event (410 Expired),
//! after which kube's watcher lists again.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Shared;
use super::resource::Resource;
use super::select::Selector;
use super::store::{Change, ChangeType};

/// What a watch request asked for.
pub(crate) struct WatchRequest {
    pub resource: Resource,
    /// One namespace, or all.
    pub namespace: Option<String>,
    pub selector: Selector,
    /// Changes after this version; `None` (no version, or "0"): the
    /// current objects as `ADDED` first.
    pub from: Option<u64>,
    pub timeout: Duration,
    /// `Accept: ...;as=PartialObjectMetadata;...`: metadata only.
    pub metadata_only: bool,
    /// `sendInitialEvents` with bookmarks: a bookmark marks the initial events' end.
    pub initial_bookmark: bool,
}

impl WatchRequest {
    fn line(&self, kind: &str, object: &Value) -> Bytes {
        let object = if self.metadata_only {
            partial(object)
        } else {
            object.clone()
        };
        let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
        line.push(b'\n');
        Bytes::from(line)
    }

    /// The event `change` is to this watch, if any: an object that leaves
    /// the selection is `DELETED` for it, one that enters is `ADDED`.
    fn event(&self, change: &Change) -> Option<Bytes> {
        if change.resource != self.resource || self.namespace.as_ref().is_some_and(|ns| *ns != change.namespace) {
            return None;
        }
        let was = change.old.as_ref().is_some_and(|old| self.selector.matches(old));
        let is = self.selector.matches(&change.new);
        let kind = match (change.change, was, is) {
            (ChangeType::Added, _, true) | (ChangeType::Modified, false, true) => "ADDED",
            (ChangeType::Modified, true, true) => "MODIFIED",
            (ChangeType::Modified, true, false) | (ChangeType::Deleted, true, _) => "DELETED",
            _ => return None,
        };
        Some(self.line(kind, &change.new))
    }

    fn bookmark(&self, version: u64) -> Bytes {
        let (api_version, kind) = if self.metadata_only {
            ("meta.k8s.io/v1".to_owned(), "PartialObjectMetadata")
        } else {
            (self.resource.api_version(), self.resource.kind())
        };
        let object = json!({"apiVersion": api_version, "kind": kind, "metadata": {
            "resourceVersion": version.to_string(),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }});
        let mut line = serde_json::to_vec(&json!({"type": "BOOKMARK", "object": object})).unwrap_or_default();
        line.push(b'\n');
        Bytes::from(line)
    }
}

/// `object` as the metadata API answers it: a `PartialObjectMetadata`.
pub(crate) fn partial(object: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": object["metadata"]})
}

/// Starts the watch; its events arrive on the returned body.
pub(crate) fn start(shared: Arc<Shared>, request: WatchRequest) -> ResponseBody {
    // A few events of slack: a client that stops reading holds the watch
    // at its last read, and a version dropped meanwhile ends it with 410.
    let (sender, receiver) = mpsc::channel(64);
    tokio::spawn(run(shared, request, sender));
    ResponseBody::Lines(receiver)
}

async fn run(shared: Arc<Shared>, request: WatchRequest, sender: mpsc::Sender<Bytes>) {
    let mut changed = shared.changed.subscribe();
    let mut closing = shared.closing.subscribe();
    // Seen before the store is read: a change after the read wakes the loop.
    changed.borrow_and_update();
    closing.borrow_and_update();
    let deadline = tokio::time::sleep(request.timeout);
    tokio::pin!(deadline);
    let mut lines = Vec::new();
    let mut last = match request.from {
        Some(version) => version,
        None => {
            let store = shared.store();
            let namespace = request.namespace.as_deref();
            for (_, object) in store.list(request.resource, namespace, &request.selector) {
                lines.push(request.line("ADDED", object));
            }
            if request.initial_bookmark {
                lines.push(request.bookmark(store.version()));
            }
            store.version()
        }
    };
    loop {
        // Closed watches send nothing more, not even changes made after the
        // close that woke the loop before the close did (a client must see
        // them on its next watch, as from a restarted API server).
        if closing.has_changed().unwrap_or(true) {
            return;
        }
        for line in lines.drain(..) {
            if sender.send(line).await.is_err() {
                return; // The client went.
            }
        }
        let expired = {
            let store = shared.store();
            match store.changes_after(last) {
                Ok(changes) => {
                    for change in changes {
                        lines.extend(request.event(change));
                        last = change.version;
                    }
                    None
                }
                Err(error) => Some(error),
            }
        };
        if let Some(error) = expired {
            let _ = sender.send(request.line("ERROR", &error.status())).await;
            return;
        }
        if !lines.is_empty() {
            continue;
        }
        tokio::select! {
            biased;
            _ = closing.changed() => return,
            result = changed.changed() => if result.is_err() { return },
            () = &mut deadline => return,
        }
    }
}

/// A response body: whole, or the lines of a watch as they come.
pub(crate) enum ResponseBody {
    Whole(Option<Bytes>),
    Lines(mpsc::Receiver<Bytes>),
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ResponseBody::Whole(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            ResponseBody::Lines(lines) => lines.poll_recv(cx).map(|line| line.map(|line| Ok(Frame::data(line)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ResponseBody::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Whole(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            ResponseBody::Lines(_) => SizeHint::default(),
        }
    }
}
