//! What the server counts, told to whoever keeps the metrics: the
//! controller's Prometheus registry, or [`Counts`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The server's events a metrics registry counts.
pub trait XdsMetrics: Send + Sync {
    /// A response went out on a stream (or answered a fetch).
    fn response_sent(&self);
    /// Envoy refused a response (a NACK).
    fn response_refused(&self);
    /// A stream opened.
    fn stream_opened(&self);
    /// A stream ended.
    fn stream_closed(&self);
    /// A stream was ended for what its client sent (logged beside).
    fn stream_refused(&self, why: Refused);
    /// An Envoy's refusal quarantined a resource: every Envoy is served
    /// the last version taken instead (logged beside).
    fn resource_quarantined(&self);
}

/// Why a stream was ended for what its client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its unfinished request would take the server's budget of request
    /// bytes past its bound, and it held the most
    /// ([`crate::RequestBudget`]).
    RequestBudget,
    /// A request larger than [`crate::MAX_REQUEST_BYTES`].
    RequestTooLarge,
    /// A delta subscription past its bounds (names, or their bytes).
    Subscription,
}

impl Refused {
    /// Every reason, in order.
    pub const ALL: [Refused; 3] = [Refused::RequestBudget, Refused::RequestTooLarge, Refused::Subscription];

    /// Its name as a metric label: `request_budget`.
    pub fn label(self) -> &'static str {
        match self {
            Refused::RequestBudget => "request_budget",
            Refused::RequestTooLarge => "request_too_large",
            Refused::Subscription => "subscription",
        }
    }
}

/// The counts themselves, for a server without a registry (and tests).
#[derive(Debug, Default)]
pub struct Counts {
    responses: AtomicU64,
    refused: AtomicU64,
    streams: AtomicI64,
    streams_refused: [AtomicU64; 3],
    quarantined: AtomicU64,
}

impl Counts {
    /// Responses sent.
    pub fn responses(&self) -> u64 {
        self.responses.load(Ordering::Relaxed)
    }

    /// Responses refused.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Streams open now.
    pub fn streams(&self) -> i64 {
        self.streams.load(Ordering::Relaxed)
    }

    /// Streams ended for `why`.
    pub fn streams_refused(&self, why: Refused) -> u64 {
        self.streams_refused[why as usize].load(Ordering::Relaxed)
    }

    /// Resources quarantined.
    pub fn quarantined(&self) -> u64 {
        self.quarantined.load(Ordering::Relaxed)
    }
}

impl XdsMetrics for Counts {
    fn response_sent(&self) {
        self.responses.fetch_add(1, Ordering::Relaxed);
    }

    fn response_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    fn stream_opened(&self) {
        self.streams.fetch_add(1, Ordering::Relaxed);
    }

    fn stream_closed(&self) {
        self.streams.fetch_sub(1, Ordering::Relaxed);
    }

    fn stream_refused(&self, why: Refused) {
        self.streams_refused[why as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn resource_quarantined(&self) {
        self.quarantined.fetch_add(1, Ordering::Relaxed);
    }
}

/// A stream counted open until dropped, however it ends.
pub(crate) struct OpenStream<'a>(&'a dyn XdsMetrics);

impl<'a> OpenStream<'a> {
    /// Counts the stream open.
    pub(crate) fn new(metrics: &'a dyn XdsMetrics) -> Self {
        metrics.stream_opened();
        Self(metrics)
    }
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.0.stream_closed();
    }
}
