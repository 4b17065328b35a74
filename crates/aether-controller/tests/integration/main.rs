//! aether-controller's integration tests but the real-Envoy suite
//! (`tests/envoy`), one binary (one link step): the reconcile core, local
//! mode through the library and the binary, cluster mode against kube's
//! client mocking and the mock API server, the xDS server under attack, the
//! generated deployment and what an operator sees.
//!
//! `cargo test -p aether-controller --all-features --test integration
//! local_mode::` runs one module alone.

mod common;

mod cluster_secrets_kept;
mod crash;
mod deploy_manifests;
mod kube_api_process;
mod kube_events;
mod kube_mock;
mod kube_previous;
mod kube_secrets;
mod kube_skew;
mod local_fairness;
mod local_input;
mod local_mode;
mod local_previous;
mod local_statuses;
mod programmed_status;
mod reconcile;
mod routes_json;
mod secret_files;
mod skew;
mod telemetry;
mod tls_files;
mod write_backoff;
mod xds_floods;
mod xds_request_budget;
mod xds_slow_readers;
mod xds_tls;
