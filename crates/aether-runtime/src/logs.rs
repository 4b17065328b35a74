//! The log set-up of both binaries.
//!
//! Logs go to standard error (standard output stays free for what a
//! command prints), filtered by `RUST_LOG` (default `info`). `text` is
//! tracing-subscriber's human form (coloured on a terminal); `json` is its
//! JSON form, one object per line, for log collectors:
//!
//! ```json
//! {"timestamp":"2026-11-30T17:02:03.123456Z","level":"INFO","fields":{"message":"listed","objects":3},"target":"aether_controller::cluster"}
//! ```
//!
//! `level`, `fields.message` and each structured field under `fields`; a
//! line logged inside a span also names it (`span`, `spans`).

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields` (with
    /// `message`), `target`.
    Json,
}

/// The filter from `RUST_LOG`, `info` when it is unset or unreadable.
fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

/// Sets the process' log subscriber: standard error, in `format`. Call once,
/// first thing in `main` (a second call fails: the subscriber is global).
pub fn init(format: LogFormat) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    }
}
