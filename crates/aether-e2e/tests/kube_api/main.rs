//! aether-e2e's integration tests, one binary (one link step): the mock
//! API server against kube's client, its watcher and the leader election
//! (`clients`), and against the real `kubectl` (`discovery`).
//!
//! `cargo test -p aether-e2e --test kube_api discovery::` runs one module
//! alone.

mod clients;
mod common;
mod discovery;
