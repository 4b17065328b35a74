//! What the webhook and the controller share to be operated, so both say
//! the same things the same way:
//!
//! - [`logs`]: `--log-format text|json` and the one log set-up (standard
//!   error, `RUST_LOG`, default `info`);
//! - [`metrics`]: `<component>_build_info` and the standard `process_*`
//!   metrics, in the registry each binary serves at `/metrics`.

#![deny(missing_docs)]

pub mod logs;
pub mod metrics;
