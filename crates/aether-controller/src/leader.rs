//! Leader election: which replica writes statuses.
//!
//! Every replica of the edge writes its own files, but a VirtualHost has one
//! status; two writers could stamp one flip with two transition times. The
//! replicas elect one writer through a coordination.k8s.io `Lease`, with
//! kube-lease-manager (server-side apply, so two replicas cannot both take
//! it; renewals run ahead of expiry by a grace that absorbs clock skew). It
//! gets, creates and patches that one Lease, nothing else:
//! `generated/deploy/controller/lease-role.yaml` grants exactly that.

use std::time::Duration;

use anyhow::Context;
use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// The task that holds and renews the Lease; see [`join`] and [`leave`].
pub type LeaseTask = JoinHandle<kube_lease_manager::Result<LeaseManager>>;

/// Joins the election over the Lease `namespace/name` (created if missing)
/// as `identity` (random when `None`). Returns the leadership flag, true
/// while this replica holds the Lease, and the task that keeps trying to
/// take it and renews it once held.
pub async fn join(
    client: Client,
    namespace: &str,
    name: &str,
    identity: Option<String>,
) -> anyhow::Result<(watch::Receiver<bool>, LeaseTask)> {
    let mut builder = LeaseManagerBuilder::new(client, name).with_namespace(namespace);
    if let Some(identity) = identity {
        builder = builder.with_identity(identity);
    }
    let manager = builder
        .build()
        .await
        .with_context(|| format!("setting up the Lease {namespace}/{name} (leader election)"))?;
    info!(lease = %format!("{namespace}/{name}"), "statuses are written by the Lease's holder");
    Ok(manager.watch().await)
}

/// Waits (at most `timeout`) for `task` to release the Lease, which it does
/// once every leadership receiver is dropped, so another replica can take
/// over at once instead of after the Lease expires.
pub async fn leave(task: LeaseTask, timeout: Duration) {
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(Ok(_))) => info!("Lease released"),
        Ok(Ok(Err(err))) => warn!(error = %err, "releasing the Lease failed; it expires by itself"),
        Ok(Err(err)) => warn!(error = %err, "the leader election task failed"),
        Err(_) => warn!("releasing the Lease timed out; it expires by itself"),
    }
}
