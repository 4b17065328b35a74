//! One reconcile pass, as both modes run it: the projector's snapshot, the
//! secrets it references resolved, the statuses to derive chosen, the
//! snapshot published over xDS, the files and statuses planned
//! ([`outputs::plan()`]), the changed files written.
//!
//! The modes are adapters around it. [`crate::local`] feeds the projector
//! from manifest files, resolves the secrets from `--secrets DIR`, and keeps
//! the statuses in `status.json` (written with the other files);
//! [`crate::cluster`] feeds it from the API server's watch, resolves the
//! secrets from the API server, and sends the statuses as `/status` patches
//! and Events once the files are written. What a mode supplies besides is
//! [`Inputs`].

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHostStatus;
use aether_projection::{ObjectKey, ProjectionConfig, Projector, Snapshot};
use jiff::Timestamp;
use prost::bytes::Bytes;
use tracing::{error, info, warn};

use crate::metrics::Metrics;
use crate::outputs::backoff::Backoff;
use crate::outputs::{self, Files, Written};
use crate::programmed::PROGRAMMED;
use crate::programmed::tracker::Tracker;
use crate::status::resolved_refs::{self, RESOLVED_REFS};
use crate::status::{ACCEPTED, Observed, StatusPatch};
use crate::tls::{EdgeTls, Resolutions, TlsSettings};
use crate::xds;

/// What a mode supplies to a pass besides the snapshot and the secrets'
/// resolutions: its objects' stored statuses, and (local mode) a file that
/// holds the statuses.
pub(crate) trait Inputs {
    /// How many objects there are.
    fn count(&self) -> usize;
    /// What is stored of `key`'s status; `None` for an object not known.
    fn observed(&self, key: &ObjectKey) -> Option<Observed>;
    /// What is stored of every object's status.
    fn every_observed(&self) -> BTreeMap<ObjectKey, Observed>;
    /// Takes the statuses that differ from the stored ones before the files
    /// are written; returns a file to write with them (local mode's
    /// `status.json`), if any.
    fn statuses_file(&mut self, patches: &[StatusPatch]) -> anyhow::Result<Option<(&'static str, Bytes)>> {
        let _ = patches;
        Ok(None)
    }
}

/// What one pass did, in either mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files written (unchanged ones skipped).
    pub written: Vec<&'static str>,
    /// Objects whose status changed: in `status.json` (local mode), or by
    /// a patch the API server accepted (cluster mode).
    pub status_changes: usize,
    /// Status patches that failed (retried after a back-off).
    pub failed_patches: usize,
    /// Status patches a follower left to the leader.
    pub left_to_leader: usize,
    /// Local mode's input errors (unreadable files, bad documents, duplicates).
    pub input_errors: usize,
    /// Local mode's files that could not be read, served as last read.
    pub stale_files: usize,
    /// With xDS: how far into the pass its snapshot was handed to the
    /// streams, which is what an Envoy over gRPC waits for.
    pub published_after: Option<Duration>,
}

/// A pass counted ([`Metrics::reconciles`]) and timed from its start.
pub(crate) struct Timed<'a>(&'a Metrics, Instant);

impl<'a> Timed<'a> {
    /// Counts a pass starting now.
    pub(crate) fn start(metrics: &'a Metrics) -> Self {
        metrics.reconciles.inc();
        Self(metrics, Instant::now())
    }

    /// Times the pass, an error if it failed or a status patch did; returns `result`.
    pub(crate) fn finished(self, result: anyhow::Result<Summary>) -> anyhow::Result<Summary> {
        let Self(metrics, started) = self;
        metrics.reconcile_seconds.observe(started.elapsed().as_secs_f64());
        if !matches!(&result, Ok(summary) if summary.failed_patches == 0) {
            metrics.reconcile_errors.inc();
        }
        result
    }
}

/// After a pass: `None` when it did all its work, otherwise (the failure
/// logged) how long to wait before it is tried again, from `backoff`.
pub(crate) fn retry_after(backoff: &mut Backoff, result: &anyhow::Result<Summary>) -> Option<Duration> {
    if matches!(result, Ok(summary) if summary.failed_patches == 0) {
        backoff.succeeded();
        return None;
    }
    let wait = backoff.failed();
    let retry_in_ms = wait.as_millis() as u64;
    match result {
        Ok(summary) => warn!(
            failed = summary.failed_patches,
            retry_in_ms, "some status patches failed; retrying"
        ),
        Err(err) => {
            error!(error = %format!("{err:#}"), retry_in_ms, "reconcile failed; the previous files stay; retrying")
        }
    }
    Some(wait)
}

/// What one pass runs over, as its mode gathered it.
pub(crate) struct Round<'a> {
    /// The projection's snapshot ([`Pass::snapshot`]).
    pub(crate) snapshot: &'a Snapshot,
    /// The secrets it references, resolved.
    pub(crate) resolutions: Resolutions,
    /// Every status is derived, not only those due.
    pub(crate) derive_all: bool,
    /// Stamps conditions whose status flips.
    pub(crate) now: Timestamp,
    /// When the pass began, which the xDS publication is timed from.
    pub(crate) started: Instant,
}

/// What a pass keeps between passes, whatever the mode.
pub(crate) struct Pass {
    /// The output directory.
    pub(crate) out: PathBuf,
    /// Fed by the mode.
    pub(crate) projector: Projector,
    /// What is known of the output directory's files.
    pub(crate) written: Written,
    /// Each pass's snapshot is also published to this xDS server.
    pub(crate) xds: Option<xds::Publisher>,
    /// How the HTTPS listener is handed to Envoy.
    pub(crate) tls: TlsSettings,
    /// Objects whose status is to be derived again: the projection touched
    /// them (or the mode said so) since their status was last derived,
    /// kept across a pass that fails before its files are written. Every
    /// other status stands.
    status_due: HashSet<ObjectKey>,
    /// The secrets' resolutions the statuses were last derived with: when
    /// they change (a secret's content, a certificate's validity window),
    /// every status is derived again. `None`: every status is.
    derived_with: Option<Resolutions>,
    /// When (Unix seconds) a certificate the statuses were last derived
    /// with crosses a line of its validity
    /// ([`resolved_refs::changes_at`]): a pass from then on derives every
    /// status, so that `ResolvedRefs` turns with time alone.
    certificates_change_at: Option<i64>,
    /// The objects' `Programmed`, and the replicas it is shared with.
    pub(crate) programmed: Tracker,
}

impl Pass {
    /// A pass writing into `out` (which must exist): the stray temporaries
    /// of `files` a killed run left are removed, and those files read, so
    /// that identical ones are not rewritten. Envoy's files are kept within
    /// the kernel's file-watch limit and the open-file limit
    /// ([`outputs::chains::WatchLimit`]).
    pub(crate) fn new(out: PathBuf, projection: ProjectionConfig, tls: TlsSettings, files: &[&'static str]) -> Self {
        outputs::remove_stray_temporaries(&out, files);
        let written = Written::read_existing(&out, files)
            .with_watch_limit(outputs::chains::WatchLimit::read(aether_http_server::hard_fd_limit()));
        Self {
            out,
            projector: Projector::new(projection),
            written,
            xds: None,
            tls,
            status_due: HashSet::new(),
            derived_with: None,
            certificates_change_at: None,
            programmed: Tracker::default(),
        }
    }

    /// Writes none of Envoy's files ([`Written::without_envoy_files`]).
    pub(crate) fn without_envoy_files(&mut self) {
        self.written = std::mem::take(&mut self.written).without_envoy_files();
    }

    /// Derives every status on the next pass.
    pub(crate) fn derive_every_status(&mut self) {
        self.derived_with = None;
    }

    /// Derives `key`'s status again on the next pass.
    pub(crate) fn status_due(&mut self, key: ObjectKey) {
        self.status_due.insert(key);
    }

    /// `key` is gone: no status to derive.
    pub(crate) fn forget(&mut self, key: &ObjectKey) {
        self.status_due.remove(key);
        self.programmed.forget(key);
    }

    /// The Envoys' changes, with xDS: each one makes the objects they had
    /// not all applied due ([`Pass::fleet_changed`]).
    pub(crate) fn fleet_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.xds.as_ref().map(|publisher| publisher.fleet().changes())
    }

    /// When a certificate crosses a line of its validity, which changes
    /// `ResolvedRefs` with nothing else changing: the modes run a pass
    /// then.
    pub(crate) fn certificates_change_at(&self) -> Option<Timestamp> {
        self.certificates_change_at
            .and_then(|at| Timestamp::from_second(at).ok())
    }

    /// The fleet changed: the statuses of the objects it had not all
    /// applied are due; returns whether there are any.
    pub(crate) fn fleet_changed(&mut self) -> bool {
        self.status_due.extend(self.programmed.awaiting.iter().cloned());
        !self.programmed.awaiting.is_empty()
    }

    /// The projection's snapshot; the objects it touched since the last are
    /// due for their status.
    pub(crate) fn snapshot(&mut self) -> Snapshot {
        let snapshot = self.projector.snapshot();
        self.status_due.extend(self.projector.take_touched());
        snapshot
    }

    /// The rest of the pass over `round`: derives the statuses due (every
    /// one when the resolutions changed since they were last derived, when
    /// a certificate crossed a line of its validity since
    /// ([`Pass::certificates_change_at`]), or with [`Round::derive_all`]), publishes to xDS, plans, hands the
    /// changed statuses to `inputs`, and writes the changed files. Returns
    /// the files written and when xDS was served, and the statuses that
    /// differ from the stored ones. A failed write leaves the previous file
    /// in place and keeps the statuses due.
    pub(crate) fn run(
        &mut self,
        round: Round<'_>,
        inputs: &mut impl Inputs,
        metrics: &Metrics,
    ) -> anyhow::Result<(Summary, Vec<StatusPatch>)> {
        let snapshot = round.snapshot;
        let tls = EdgeTls {
            resolutions: round.resolutions,
            settings: self.tls.clone(),
        };
        let crossed = self
            .certificates_change_at
            .is_some_and(|at| round.now.as_second() >= at);
        let mut observed: BTreeMap<ObjectKey, Observed> =
            if !round.derive_all && !crossed && self.derived_with.as_ref() == Some(&tls.resolutions) {
                self.status_due
                    .iter()
                    .filter_map(|key| inputs.observed(key).map(|observed| (key.clone(), observed)))
                    .collect()
            } else {
                inputs.every_observed()
            };
        // Envoys over gRPC get the snapshot first: they wait neither for the
        // files nor for the statuses, and a file that cannot be written does
        // not hold their answer back.
        let published_after = self.xds.as_ref().map(|publisher| {
            publisher.publish(snapshot);
            publisher.publish_tls(snapshot, &tls);
            round.started.elapsed()
        });
        self.programmed
            .fold(self.xds.as_ref(), snapshot, &tls.resolutions, &mut observed);
        let plan = outputs::plan(snapshot, &tls, &observed, &self.written, round.now)?;
        metrics.conflicts.set(plan.conflicts as i64);
        metrics.invalid_objects.set(plan.invalid as i64);
        metrics.tls_secrets_kept.set(tls.resolutions.kept() as i64);
        metrics.objects.set(inputs.count() as i64);

        let mut files: Files = plan.writes.into_iter().collect();
        if let Some((name, bytes)) = inputs.statuses_file(&plan.patches)? {
            files.insert(name, bytes);
        }
        metrics
            .envoy_listener_refused
            .set(i64::from(plan.listener_refused.is_some()));
        if let Some(refused) = &plan.listener_refused {
            error!("the HTTPS listener is not replaced: {refused}");
        }
        let written = outputs::write_changed(
            &self.out,
            &files,
            &plan.secret_files,
            &plan.chain_files,
            &mut self.written,
            snapshot.routes(),
        )?;
        metrics.file_writes.inc_by(written.len() as u64);
        self.status_due.clear();
        self.certificates_change_at = resolved_refs::changes_at(&tls.resolutions, round.now.as_second());
        self.derived_with = Some(tls.resolutions);
        let summary = Summary {
            written,
            published_after,
            ..Summary::default()
        };
        Ok((summary, plan.patches))
    }
}

/// How long from now until `at` by the system's clock, at most an hour
/// (a loop waiting for it looks again then, so a clock set forward or
/// back is followed).
pub(crate) fn wait_until(at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(Timestamp::now()))
        .unwrap_or(Duration::ZERO)
        .min(Duration::from_secs(3600))
}

/// Names the fields from a newer API version an object's change set aside,
/// so that an operator sees them: a spec holding one is left out as
/// unsupported by the projection; status ones are ignored.
pub(crate) fn warn_set_aside(key: &ObjectKey, fields: &[String]) {
    if !fields.is_empty() {
        warn!(object = %key, ?fields, "fields from a newer API version (in the spec, the object is left out as unsupported; in the status, ignored)");
    }
}

/// Logs a status change with the object's namespace and name.
pub(crate) fn log_status(key: &ObjectKey, status: &VirtualHostStatus) {
    let accepted = status.conditions.iter().find(|c| c.r#type == ACCEPTED);
    let refs = status.conditions.iter().find(|c| c.r#type == RESOLVED_REFS);
    let programmed = status.conditions.iter().find(|c| c.r#type == PROGRAMMED);
    info!(
        namespace = %key.namespace,
        name = %key.name,
        accepted = accepted.map_or("", |c| c.status.as_str()),
        reason = accepted.map_or("", |c| c.reason.as_str()),
        detail = accepted.map_or("", |c| c.message.as_str()),
        resolved_refs = refs.map_or("", |c| c.status.as_str()),
        refs_detail = refs.map_or("", |c| c.message.as_str()),
        programmed = programmed.map_or("", |c| c.reason.as_str()),
        route_count = status.route_count,
        "status changed"
    );
}

#[cfg(test)]
mod tests;
