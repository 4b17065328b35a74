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
}

/// The counts themselves, for a server without a registry (and tests).
#[derive(Debug, Default)]
pub struct Counts {
    responses: AtomicU64,
    refused: AtomicU64,
    streams: AtomicI64,
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
