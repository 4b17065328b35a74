//! What the webhook and the controller share to run and be operated, so
//! both do and say the same things the same way:
//!
//! - [`watch`]: the one re-list state machine, kube-runtime watcher events
//!   into a mirror of the watched objects;
//! - [`logs`]: `--log-format text|json` and the one log set-up (standard
//!   error, `RUST_LOG`, default `info`);
//! - [`metrics`]: `<component>_build_info` and the standard `process_*`
//!   metrics, in the registry each binary serves at `/metrics`.

#![deny(missing_docs)]

pub mod logs;
pub mod metrics;
pub mod watch;
