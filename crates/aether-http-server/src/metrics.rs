//! The listener's counters, registered in the server's own registry.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum CloseReason {
    /// The peer closed it, or the protocol ended it (a normal end).
    Closed,
    /// A protocol or I/O error.
    Error,
    /// The TLS handshake failed.
    HandshakeFailed,
    HandshakeTimeout,
    /// No first request in time (HTTP/2: no preface or no stream).
    FirstRequestTimeout,
    /// HTTP/1: a request's head did not arrive in time.
    HeaderTimeout,
    /// No request for the idle timeout.
    IdleTimeout,
    /// A write made no progress (the client does not read).
    WriteTimeout,
    /// Closed to make room for a new connection at the bound.
    Evicted,
    /// The server shut down.
    Shutdown,
}

impl CloseReason {
    /// The label value: snake case, as Prometheus label values are written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Error => "error",
            Self::HandshakeFailed => "handshake_failed",
            Self::HandshakeTimeout => "handshake_timeout",
            Self::FirstRequestTimeout => "first_request_timeout",
            Self::HeaderTimeout => "header_timeout",
            Self::IdleTimeout => "idle_timeout",
            Self::WriteTimeout => "write_timeout",
            Self::Evicted => "evicted",
            Self::Shutdown => "shutdown",
        }
    }
}

impl EncodeLabelValue for CloseReason {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    reason: CloseReason,
}

/// Connections open, accepted and closed (by reason), and failed accepts.
#[derive(Debug, Clone, Default)]
pub struct ListenerMetrics {
    pub open: Gauge,
    pub accepted: Counter,
    pub closed: Family<ReasonLabel, Counter>,
    pub accept_errors: Counter,
}

impl ListenerMetrics {
    /// Registers every metric in `registry` (give it a prefix per listener
    /// when a process has several).
    pub fn register(&self, registry: &mut Registry) {
        registry.register("connections", "Connections open now", self.open.clone());
        registry.register("connections_accepted", "Connections accepted", self.accepted.clone());
        registry.register(
            "connections_closed",
            "Connections closed, by reason",
            self.closed.clone(),
        );
        registry.register(
            "accept_errors",
            "Accepts that failed (EMFILE and the like back off)",
            self.accept_errors.clone(),
        );
    }

    /// Connections closed for `reason` so far.
    pub fn closed(&self, reason: CloseReason) -> u64 {
        self.closed.get_or_create(&ReasonLabel { reason }).get()
    }

    pub(crate) fn count_close(&self, reason: CloseReason) {
        self.closed.get_or_create(&ReasonLabel { reason }).inc();
    }
}
