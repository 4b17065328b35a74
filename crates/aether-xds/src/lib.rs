//! A generic xDS server: what to serve apart from how it is served.
//!
//! - What: each type's publications, a persistent map of resources
//!   ([`resources`]), each with its version, made from the last publication
//!   so that streams find what changed in O(changes); one resource's
//!   refusal held back for every Envoy ([`quarantine`]). A publisher sends
//!   them down a `tokio::sync::watch` channel per type ([`sotw::Current`]).
//! - How: [`Discovery`], a hyper service answering each type's
//!   state-of-the-world stream and fetch ([`sotw`]) and delta stream
//!   ([`delta`]), and the aggregated delta stream of every type
//!   (state-of-the-world ADS is `UNIMPLEMENTED`), over the shared listener
//!   (`aether-http-server`: connection bound, timeouts, HTTP/2 keepalive,
//!   graceful shutdown), with mutual TLS ([`transport`]) or plaintext.
//!
//! Per stream, SotW or delta:
//! - ACKs and NACKs are matched by nonce; a request with an older nonce is
//!   stale (its ACK or NACK is ignored);
//! - a NACK is logged with Envoy's message and counted ([`XdsMetrics`]),
//!   and the rejected version is not sent again; the next change is;
//! - what each Envoy holds is kept by the [`fleet`], which says whether a
//!   set of resources is applied everywhere ([`fleet::Fleet::applied`]);
//! - a client that does not read holds at most the latest version, shared
//!   with every other stream: responses are built when the body is polled
//!   ([`body`]) as pieces around the resources' shared buffers (`wire.rs`);
//! - the bytes of unfinished requests are bounded across every stream
//!   ([`requests`]).
//!
//! Tonic decodes the requests and gives gRPC's `Status`; nothing here
//! knows what the resources mean.

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
