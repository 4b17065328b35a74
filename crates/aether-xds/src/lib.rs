#![doc = include_str!("../README.md")]
//!
//! ## Per stream
//!
//! A request naming an older nonce than the last response's is stale: its
//! ACK or NACK is ignored. A NACK is logged with Envoy's message and
//! counted ([`XdsMetrics::response_refused`]). Tonic decodes the requests
//! and gives gRPC's `Status`; the responses are framed here.

#![deny(missing_docs)]

pub mod body;
pub mod delta;
pub mod fleet;
pub mod metrics;
pub mod quarantine;
pub mod requests;
pub mod resources;
mod server;
pub mod sotw;
pub mod transport;

pub use body::ResponseBody;
pub use metrics::XdsMetrics;
pub use requests::{MAX_BUFFERED_REQUEST_BYTES, MAX_REQUEST_BYTES, RequestBudget};
pub use resources::{Encoded, Item, Pieces, Resources, version_of};
pub use server::{Discovery, MAX_CONNECTIONS, MAX_STREAMS_PER_CONNECTION, Service, listener_config};
