//! `aether-webhook`: the VirtualHost validating admission webhook.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use aether_runtime::logs::LogFormat;
use aether_webhook::index::HostIndex;
use aether_webhook::metrics::Metrics;
use aether_webhook::server::{self, App, Limits, Reviewer};
use aether_webhook::sources;
use anyhow::{Context, Result};
use clap::Parser;

/// Validating admission webhook for config.aether.io/v1 VirtualHost.
///
/// Cluster mode (the default) watches every VirtualHost through the API
/// server; with `--manifests DIR` the host index is read from a directory of
/// manifests instead, re-read when its files change, and no cluster is used.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to serve HTTPS on.
    #[arg(long, default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
    /// PEM certificate chain; reloaded when the file changes.
    #[arg(long)]
    tls_cert: PathBuf,
    /// PEM private key; reloaded when the file changes.
    #[arg(long)]
    tls_key: PathBuf,
    /// Local mode: index the VirtualHosts of this directory, not the cluster's.
    #[arg(long)]
    manifests: Option<PathBuf>,
    /// Local mode: how often the directory is checked for changes.
    #[arg(long, default_value_t = sources::DEFAULT_POLL_INTERVAL.as_millis() as u64)]
    poll_interval_ms: u64,
    /// Local mode: a manifest modified less than this long ago, in ms, may
    /// still be being written, and is read once left alone this long (0:
    /// read at once, for writers that move whole files into place).
    #[arg(long, default_value_t = aether_manifests::Limits::default().settle.as_millis() as u64)]
    settle_ms: u64,
    /// Largest request body, in bytes (larger gets 413).
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// Most open connections (lowered, with a warning, when the file
    /// descriptor limit leaves less room). At the bound a new connection is
    /// served and the one idle the longest is closed.
    #[arg(long, default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Handshake, header and body read timeout, each, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    read_timeout_ms: u64,
    /// How long a connection may stay open without a request, after one,
    /// in milliseconds.
    #[arg(long, default_value_t = Limits::default().idle_timeout.as_millis() as u64)]
    idle_timeout_ms: u64,
    /// How log lines are written to standard error: text, or one JSON
    /// object per line (level, fields with the message, target, timestamp).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// Descriptors kept for everything but connections: the cluster client's
/// connections, the manifest files read in local mode, the runtime.
const RESERVED_DESCRIPTORS: usize = 128;

fn main() -> Result<()> {
    let args = Args::parse();
    aether_runtime::logs::init(args.log_format).map_err(|err| anyhow::anyhow!("setting up the logs: {err}"))?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    let metrics = Arc::new(Metrics::new());
    let tls = Arc::new(aether_webhook::tls::reloading(args.tls_cert, args.tls_key, &metrics)?);
    let index = Arc::new(HostIndex::new());
    let ready = Arc::new(AtomicBool::new(false));
    match args.manifests {
        Some(dir) => {
            anyhow::ensure!(dir.is_dir(), "--manifests {}: not a directory", dir.display());
            let interval = Duration::from_millis(args.poll_interval_ms.max(1));
            let limits = aether_manifests::Limits {
                settle: Duration::from_millis(args.settle_ms),
                reading: aether_manifests::Reading::Tolerant,
                ..aether_manifests::Limits::default()
            };
            tokio::spawn(sources::watch_directory(
                dir,
                interval,
                limits,
                index.clone(),
                ready.clone(),
                metrics.clone(),
            ));
        }
        None => {
            let client = kube::Client::try_default()
                .await
                .context("connecting to the cluster (use --manifests DIR for local mode)")?;
            tokio::spawn(sources::watch_cluster(client, index.clone(), ready.clone()));
        }
    }
    let timeout = Duration::from_millis(args.read_timeout_ms);
    aether_http_server::raise_fd_limit();
    let limits = Limits {
        max_body_bytes: args.max_body_bytes,
        max_connections: aether_http_server::fit_to_fd_limit("webhook", args.max_connections, RESERVED_DESCRIPTORS),
        handshake_timeout: timeout,
        header_timeout: timeout,
        body_timeout: timeout,
        idle_timeout: Duration::from_millis(args.idle_timeout_ms),
        ..Limits::default()
    };
    let app = Arc::new(App {
        admit: Arc::new(Reviewer(index.clone())),
        metrics,
        ready,
        index: Some(index),
        limits,
        body_budget: limits.body_budget(),
    });
    let listener = aether_http_server::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    tracing::info!(listen = %args.listen, "serving");
    server::serve(listener, tls, app, shutdown_signal()).await?;
    tracing::info!("shut down");
    Ok(())
}

/// SIGTERM (what the kubelet sends) or Ctrl-C.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(e) => {
            tracing::warn!("no SIGTERM handler ({e}); stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
