//! The VirtualHost validating admission webhook.
//!
//! `POST /validate-virtualhost` answers an `admission.k8s.io/v1`
//! AdmissionReview: the shared validator (`aether_api::validate`), then the
//! host index ([`index::HostIndex`]), which a kube-runtime watcher (cluster
//! mode) or a polled manifest directory (local mode) keeps current.

pub mod admission;
#[cfg(feature = "server")]
pub mod budget;
pub mod index;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod sources;
#[cfg(feature = "server")]
pub mod tls;
mod twice;
