//! Local mode: the same loop over manifest files, without a cluster.
//!
//! The manifest directory is polled (not watched with inotify): every
//! `poll` interval the manifest files are listed and their sizes and
//! modification times compared with the last look; a difference is a change,
//! fed to the [`Debouncer`]. Polling works the same on every file system
//! (network mounts, container volumes, editors that replace files), costs
//! one `stat` per file per interval, and needs no extra dependency.
//!
//! There is no API server to store statuses, so they are written to
//! `status.json` in the output directory (`namespace/name` → status), and
//! read back from there at start, so `lastTransitionTime` survives restarts.
//! Local objects have no `metadata.generation`: `observedGeneration` is 0.
//!
//! Bad input never loses what was read before. The manifests are read by
//! the shared reader with its keep-last-good policy
//! ([`aether_manifests::LastGood`], also the webhook's): a file that cannot
//! be read or decoded keeps the objects it last gave (with an error logged,
//! and counted in [`Summary::stale_files`]), and two documents naming the
//! same object keep the first one (in path, then document order). An I/O
//! error never removes objects, only a listing that succeeds without their
//! file does: when a directory cannot be listed (moved away for a moment,
//! no permission, a volume gone), every file last read under it keeps its
//! objects, so the edge and the statuses' transition times stay.

mod unusable;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHostStatus;
use aether_api::validate::Violation;
use aether_manifests::{self as manifests, Failure, LastGood, Limits};
use aether_projection::{ObjectKey, ProjectionConfig, Projector, TlsSecret, VirtualHostObject};
use anyhow::Context;
use jiff::Timestamp;
use tracing::{error, info, warn};

use unusable::unusable_files;
pub use unusable::{RULE_CHANGING, RULE_MANIFEST};

use crate::debounce::Debouncer;
use crate::metrics::Metrics;
use crate::outputs::{self, DEPENDENCIES_FILE, Files, ROUTES_FILE, STATUS_FILE, TLS_SECRETS_FILE};
use crate::status::{ACCEPTED, Observed};
use crate::tls::edge::LISTENERS_FILE;
use crate::tls::local::{self as secrets, SecretsDir};
use crate::tls::status::RESOLVED_REFS;
use crate::tls::{EdgeTls, Resolutions, TlsSettings};
use crate::xds;

/// Settings of local mode.
#[derive(Debug, Clone)]
pub struct Options {
    /// The manifest directory (or file).
    pub manifests: PathBuf,
    /// Where the outputs go; must exist.
    pub out: PathBuf,
    /// How often the manifests are checked for changes.
    pub poll: Duration,
    /// The debouncer's periods.
    pub quiet: Duration,
    /// See [`Debouncer`].
    pub max_delay: Duration,
    /// Reconcile once and return, rather than watching.
    pub once: bool,
    /// The projection's settings.
    pub projection: ProjectionConfig,
    /// `--secrets DIR`: the `KUBERNETES` TLS secrets, as mounted Secrets
    /// (`NAMESPACE/NAME/tls.crt`, `tls.key`); `None`: none available.
    pub secrets: Option<PathBuf>,
    /// How the HTTPS listener is handed to Envoy.
    pub tls: TlsSettings,
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files written (unchanged ones skipped).
    pub written: Vec<&'static str>,
    /// Objects whose status changed.
    pub status_changes: usize,
    /// Input errors (unreadable files, bad documents, duplicates).
    pub input_errors: usize,
    /// Files that could not be read, served as they were last read.
    pub stale_files: usize,
    /// With xDS: how far into the pass (from reading the manifests) its
    /// snapshot was handed to the streams, which is what an Envoy over gRPC
    /// waits for.
    pub published_after: Option<Duration>,
}

/// Local mode's state between passes.
pub struct Local {
    options: Options,
    limits: Limits,
    projector: Projector,
    /// The objects fed to the projector.
    objects: BTreeMap<ObjectKey, VirtualHostObject>,
    /// The manifests as last read, file by file (the shared keep-last-good policy).
    last_good: LastGood,
    /// Objects of files that could not be used on the last load, served as
    /// last read ([`Projector::keep_valid`]).
    stale: HashSet<ObjectKey>,
    statuses: BTreeMap<ObjectKey, VirtualHostStatus>,
    /// Whether `status.json` may not hold `statuses` (one changed since it
    /// was last written, or that write failed): it is rendered only then,
    /// not on every pass (it holds every object's status).
    status_file_stale: bool,
    /// Objects whose status is to be derived again: the projection touched
    /// them since their status was last derived (kept across a pass that
    /// fails before deriving it). Every other status stands.
    status_due: HashSet<ObjectKey>,
    /// The secrets' resolutions the statuses were last derived with: when
    /// they change (a secret's files, a certificate's validity window),
    /// every status is derived again.
    derived_with: Option<Resolutions>,
    written: outputs::Written,
    xds: Option<xds::Publisher>,
    secrets: SecretsDir,
    /// The secrets the last pass's snapshot referenced (polled for rotation).
    referenced: Arc<[TlsSecret]>,
    /// The metrics (logged, since local mode serves no HTTP).
    pub metrics: Arc<Metrics>,
}

impl Local {
    /// Local mode's state, picking up the statuses and files of an earlier run.
    pub fn new(options: Options) -> anyhow::Result<Self> {
        anyhow::ensure!(
            options.out.is_dir(),
            "the output directory {} does not exist",
            options.out.display()
        );
        let files = [
            ROUTES_FILE,
            DEPENDENCIES_FILE,
            TLS_SECRETS_FILE,
            STATUS_FILE,
            LISTENERS_FILE,
        ];
        outputs::remove_stray_temporaries(&options.out, &files);
        let written = outputs::Written::read_existing(&options.out, &files);
        let statuses = match written.get(STATUS_FILE) {
            None => BTreeMap::new(),
            Some(bytes) => match serde_json::from_slice::<BTreeMap<String, VirtualHostStatus>>(bytes) {
                Ok(statuses) => statuses
                    .into_iter()
                    .filter_map(|(key, status)| {
                        let (namespace, name) = key.split_once('/')?;
                        Some((ObjectKey::new(namespace, name), status))
                    })
                    .collect(),
                Err(err) => {
                    warn!(file = %options.out.join(STATUS_FILE).display(), %err, "ignoring an unreadable status report");
                    BTreeMap::new()
                }
            },
        };
        let once = options.once;
        Ok(Self {
            secrets: SecretsDir::new(options.secrets.clone()),
            referenced: Arc::from([]),
            projector: Projector::new(options.projection.clone()),
            options,
            // What a newer writer added is read tolerantly: one object from
            // a newer API version is left out, not the whole directory.
            limits: Limits {
                reading: manifests::Reading::Tolerant,
                ..Limits::default()
            },
            objects: BTreeMap::new(),
            // A pass never waits on one file (another's edit would wait
            // with it), except the one pass of `--once`, which must read
            // every file.
            last_good: if once {
                LastGood::new()
            } else {
                LastGood::without_waiting()
            },
            stale: HashSet::new(),
            statuses,
            status_file_stale: true,
            status_due: HashSet::new(),
            derived_with: None,
            written,
            xds: None,
            metrics: Arc::new(Metrics::new()),
        })
    }

    /// Reads the manifests within `limits` rather than the defaults (which
    /// `aetherctl` and the webhook use too).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Also publishes each pass's route configuration to an xDS server
    /// (whose metrics should be [`Local::metrics`], to be logged with the rest).
    pub fn with_xds(mut self, publisher: xds::Publisher) -> Self {
        self.xds = Some(publisher);
        self
    }

    /// Derives every status on the next pass, not only those of the
    /// objects the projection touched (as after a change of the secrets).
    pub fn derive_every_status(&mut self) {
        self.derived_with = None;
    }

    /// Writes none of Envoy's files (`routes.json`, `listeners.json`,
    /// `secrets/`), for Envoys that take all of it over xDS
    /// ([`outputs::Written::without_envoy_files`]).
    pub fn without_envoy_files(mut self) -> Self {
        self.written = self.written.without_envoy_files();
        self
    }

    /// The manifest files and their sizes and modification times, and
    /// those of the referenced secrets' files.
    fn fingerprint(&self) -> (manifests::Stamp, secrets::Stamp) {
        (
            self.last_good
                .stamp(std::slice::from_ref(&self.options.manifests), self.limits.settle),
            self.secrets.stamp(&self.referenced, Timestamp::now().as_second()),
        )
    }

    /// Reads the manifests and brings the projector up to date. Returns the
    /// number of input errors (each logged) and of stale files.
    fn load(&mut self) -> (usize, usize) {
        let load = self
            .last_good
            .load(std::slice::from_ref(&self.options.manifests), &self.limits);
        for err in &load.errors {
            match err.failure {
                Failure::Duplicate => error!(error = %err, "duplicate VirtualHost; keeping the first"),
                Failure::Io | Failure::Changing => error!(error = %err, "cannot read manifests"),
                Failure::Content => error!(error = %err, "bad manifest"),
            }
        }
        for file in &load.stale {
            warn!(file = %file.display(), "keeping the objects this file gave when last read");
        }
        let unusable = unusable_files(&load);
        // Fields from a newer API version (a spec holding one is left out
        // as unsupported by the projection; status ones are ignored): named
        // when their object changes, so that an operator sees them.
        let mut set_aside: BTreeMap<ObjectKey, Vec<String>> = BTreeMap::new();
        // The objects of files that no longer read, each with why.
        let mut stale: BTreeMap<ObjectKey, &[Violation]> = BTreeMap::new();
        let next: BTreeMap<ObjectKey, VirtualHostObject> = load
            .objects
            .into_iter()
            .map(|loaded| {
                let fields = loaded.object.set_aside.clone();
                let object = loaded.object;
                if !fields.is_empty() {
                    set_aside.insert(object.key(), fields);
                }
                if let Some(problems) = unusable.get(&loaded.file) {
                    stale.insert(object.key(), problems);
                }
                (object.key(), object)
            })
            .collect();
        let gone: Vec<ObjectKey> = self
            .objects
            .keys()
            .filter(|key| !next.contains_key(*key))
            .cloned()
            .collect();
        for key in gone {
            self.projector.remove(&key);
            self.objects.remove(&key);
        }
        for (key, object) in next {
            // An object whose file reads again is fed again, whether or
            // not it changed, so that the projection stops reporting it.
            let was_stale = self.stale.remove(&key) && !stale.contains_key(&key);
            if was_stale || !self.objects.get(&key).is_some_and(|fed| unchanged(fed, &object)) {
                if let Some(fields) = set_aside.get(&key) {
                    warn!(object = %key, fields = ?fields, "fields from a newer API version (in the spec, the object is left out as unsupported; in the status, ignored)");
                }
                // What is served changes only for a version it can use.
                self.projector.upsert_keeping_valid(object.clone(), 0);
                self.objects.insert(key, object);
            }
        }
        // A file that turned unusable (does not parse, keeps changing)
        // gave its objects as last read: the projection says why they are
        // served as that version.
        for (key, problems) in stale {
            self.projector.keep_valid(&key, problems);
            self.stale.insert(key);
        }
        self.stale.retain(|key| self.objects.contains_key(key));
        let changing = load
            .errors
            .iter()
            .filter(|err| err.failure == Failure::Changing)
            .count();
        self.metrics.manifest_stale_files.set(load.stale.len() as i64);
        self.metrics.manifest_changing_files.set(changing as i64);
        (load.errors.len(), load.stale.len())
    }

    /// Reads the manifests and runs one reconcile pass.
    pub fn reconcile(&mut self) -> anyhow::Result<Summary> {
        let started = Instant::now();
        self.metrics.reconciles.inc();
        let result = self.reconcile_inner();
        self.metrics.reconcile_seconds.observe(started.elapsed().as_secs_f64());
        if result.is_err() {
            self.metrics.reconcile_errors.inc();
        }
        result
    }

    fn reconcile_inner(&mut self) -> anyhow::Result<Summary> {
        let started = Instant::now();
        let (input_errors, stale_files) = self.load();
        let snapshot = self.projector.snapshot();
        self.status_due.extend(self.projector.take_touched());
        let now = Timestamp::now();
        let tls = EdgeTls {
            resolutions: self
                .secrets
                .resolve(&snapshot.tls_secrets, &self.options.tls, now.as_second()),
            settings: self.options.tls.clone(),
        };
        // The statuses to derive: those of the objects touched, or all when
        // the secrets' resolutions changed.
        let observe = |key: &ObjectKey| {
            let status = self.statuses.get(key).cloned();
            (key.clone(), Observed { generation: 0, status })
        };
        let observed: BTreeMap<ObjectKey, Observed> = if self.derived_with.as_ref() == Some(&tls.resolutions) {
            self.status_due
                .iter()
                .filter(|key| self.objects.contains_key(*key))
                .map(observe)
                .collect()
        } else {
            self.objects.keys().map(observe).collect()
        };
        self.referenced = snapshot.tls_secrets.clone();
        // Envoys over gRPC get the snapshot first: they wait neither for the
        // files nor for the statuses, and a file that cannot be written does
        // not hold their answer back.
        let published_after = self.xds.as_ref().map(|publisher| {
            publisher.publish(&snapshot);
            publisher.publish_tls(&snapshot, &tls);
            started.elapsed()
        });
        let plan = crate::plan(&snapshot, &tls, &observed, &self.written, now)?;
        self.status_due.clear();
        self.derived_with = Some(tls.resolutions.clone());
        self.metrics.conflicts.set(plan.conflicts as i64);
        self.metrics.invalid_objects.set(plan.invalid as i64);
        self.metrics.objects.set(self.objects.len() as i64);

        let mut files: Files = plan.writes.into_iter().collect();
        let status_changes = plan.patches.len();
        let held = self.statuses.len();
        for patch in plan.patches {
            log_status(&patch.key, &patch.status);
            self.statuses.insert(patch.key, patch.status);
        }
        self.statuses.retain(|key, _| self.objects.contains_key(key));
        if status_changes > 0 || self.statuses.len() != held {
            self.status_file_stale = true;
        }
        if self.status_file_stale {
            let report: BTreeMap<String, &VirtualHostStatus> = self
                .statuses
                .iter()
                .map(|(key, status)| (key.to_string(), status))
                .collect();
            files.insert(STATUS_FILE, outputs::pretty(&report)?.into());
        }
        let written = outputs::write_changed(
            &self.options.out,
            &files,
            &plan.secret_files,
            &mut self.written,
            snapshot.routes(),
        )
        .with_context(|| format!("in {}", self.options.out.display()))?;
        self.status_file_stale = false;
        self.metrics.file_writes.inc_by(written.len() as u64);
        self.metrics.status_patches.inc_by(status_changes as u64);
        Ok(Summary {
            written,
            status_changes,
            input_errors,
            stale_files,
            published_after,
        })
    }

    /// Runs until interrupted (or one pass with `once`). Returns the last
    /// pass's summary.
    pub fn run(&mut self) -> anyhow::Result<Summary> {
        let summary = self.pass()?;
        if self.options.once {
            return Ok(summary);
        }
        let mut debouncer = Debouncer::new(self.options.quiet, self.options.max_delay);
        let mut seen = self.fingerprint();
        let mut looked_at = None;
        let mut backoff = outputs::backoff::Backoff::default();
        loop {
            let now = Instant::now();
            // A file found still changing is looked at again once it has
            // changed for longer than its bound, to be set aside.
            let set_aside_due = self.last_good.set_aside_due().filter(|due| Some(*due) != looked_at);
            let wake = debouncer
                .deadline()
                .into_iter()
                .chain(set_aside_due)
                .fold(now + self.options.poll, Instant::min);
            std::thread::sleep(wake.saturating_duration_since(now));
            let fingerprint = self.fingerprint();
            let due = set_aside_due.filter(|due| *due <= Instant::now());
            if fingerprint != seen || due.is_some() {
                seen = fingerprint;
                looked_at = due.or(looked_at);
                debouncer.change(Instant::now());
            }
            if debouncer.take_due(Instant::now()) {
                // On error the previous outputs stay, and the pass is
                // retried after a back-off (an edit runs one at once).
                match self.pass() {
                    Ok(_) => backoff.succeeded(),
                    Err(err) => {
                        let wait = backoff.failed();
                        error!(error = %format!("{err:#}"), retry_in_ms = wait.as_millis() as u64, "reconcile failed");
                        debouncer.change(Instant::now() + wait);
                    }
                }
            }
        }
    }

    fn pass(&mut self) -> anyhow::Result<Summary> {
        let started = Instant::now();
        let summary = self.reconcile()?;
        info!(
            objects = self.objects.len(),
            written = ?summary.written,
            status_changes = summary.status_changes,
            input_errors = summary.input_errors,
            stale_files = summary.stale_files,
            duration_ms = started.elapsed().as_secs_f64() * 1e3,
            published_ms = summary.published_after.map(|after| after.as_secs_f64() * 1e3),
            reconciles = self.metrics.reconciles.get(),
            conflicts = self.metrics.conflicts.get(),
            invalid = self.metrics.invalid_objects.get(),
            "reconciled"
        );
        // The full set, in the format cluster mode serves, for RUST_LOG=debug.
        tracing::debug!(metrics = %self.metrics.encode().trim_end(), "metrics");
        Ok(summary)
    }
}

/// Logs a status change with the object's namespace and name.
pub(crate) fn log_status(key: &ObjectKey, status: &VirtualHostStatus) {
    let accepted = status.conditions.iter().find(|c| c.r#type == ACCEPTED);
    let refs = status.conditions.iter().find(|c| c.r#type == RESOLVED_REFS);
    info!(
        namespace = %key.namespace,
        name = %key.name,
        accepted = accepted.map_or("", |c| c.status.as_str()),
        reason = accepted.map_or("", |c| c.reason.as_str()),
        detail = accepted.map_or("", |c| c.message.as_str()),
        resolved_refs = refs.map_or("", |c| c.status.as_str()),
        refs_detail = refs.map_or("", |c| c.message.as_str()),
        route_count = status.route_count,
        "status changed"
    );
}

/// Whether `read` is the object already fed to the projector. An object of
/// a file not read again holds the very spec it held then (shared with the
/// file's last good read), which spares comparing every route of every
/// object on each pass.
fn unchanged(fed: &VirtualHostObject, read: &VirtualHostObject) -> bool {
    // Destructured: a field added to the object must be compared here.
    // The generation and status play no part in the projection.
    let VirtualHostObject {
        namespace,
        name,
        creation_timestamp,
        generation: _,
        spec,
        status: _,
        problems,
        set_aside,
    } = fed;
    (std::sync::Arc::ptr_eq(spec, &read.spec) || **spec == *read.spec)
        && *namespace == read.namespace
        && *name == read.name
        && *creation_timestamp == read.creation_timestamp
        && *problems == read.problems
        && *set_aside == read.set_aside
}
