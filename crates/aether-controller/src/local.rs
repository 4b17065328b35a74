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
//! `observedGeneration` is the manifest's `metadata.generation` (0 without).
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

mod objects;
mod unusable;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aether_api::validate::Violation;
use aether_manifests::{self as manifests, Failure, LastGood, Limits};
use aether_projection::{ObjectKey, ProjectionConfig, TlsSecret, VirtualHostObject};
use jiff::Timestamp;
use tracing::{error, info, warn};

use objects::Objects;
use unusable::unusable_files;
pub use unusable::{RULE_CHANGING, RULE_MANIFEST};

use crate::debounce::Debouncer;
use crate::metrics::Metrics;
use crate::outputs::{self, DEPENDENCIES_FILE, LISTENERS_FILE, ROUTES_FILE, STATUS_FILE, TLS_SECRETS_FILE};
use crate::pass::{Inputs, Pass, Round, Summary, Timed, retry_after, wait_until, warn_set_aside};
use crate::tls::TlsSettings;
use crate::tls::local::{self as secrets, SecretsDir};
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

/// Local mode's state between passes.
pub struct Local {
    options: Options,
    limits: Limits,
    pass: Pass,
    /// The objects fed to the projector, and their statuses.
    objects: Objects,
    /// The manifests as last read, file by file (the shared keep-last-good policy).
    last_good: LastGood,
    /// Objects of files that could not be used on the last load, served as
    /// last read ([`aether_projection::Projector::keep_valid`]).
    stale: HashSet<ObjectKey>,
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
        let pass = Pass::new(
            options.out.clone(),
            options.projection.clone(),
            options.tls.clone(),
            &files,
        );
        let statuses = match pass.written.get(STATUS_FILE).map(outputs::status_json::parse) {
            None => BTreeMap::new(),
            Some(Ok(statuses)) => statuses,
            Some(Err(err)) => {
                warn!(file = %options.out.join(STATUS_FILE).display(), %err, "ignoring an unreadable status report");
                BTreeMap::new()
            }
        };
        let once = options.once;
        Ok(Self {
            secrets: SecretsDir::new(options.secrets.clone()),
            referenced: Arc::from([]),
            pass,
            options,
            // What a newer writer added is read tolerantly: one object from
            // a newer API version is left out, not the whole directory.
            limits: Limits {
                reading: manifests::Reading::Tolerant,
                ..Limits::default()
            },
            objects: Objects::new(statuses),
            // A pass never waits on one file (another's edit would wait
            // with it), except the one pass of `--once`, which must read
            // every file.
            last_good: if once {
                LastGood::new()
            } else {
                LastGood::without_waiting()
            },
            stale: HashSet::new(),
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
        self.pass.xds = Some(publisher);
        self
    }

    /// Derives every status on the next pass, not only those of the
    /// objects the projection touched (as after a change of the secrets).
    pub fn derive_every_status(&mut self) {
        self.pass.derive_every_status();
    }

    /// Writes none of Envoy's files (`routes.json`, `listeners.json`,
    /// `secrets/`), for Envoys that take all of it over xDS
    /// ([`outputs::Written::without_envoy_files`]).
    pub fn without_envoy_files(mut self) -> Self {
        self.pass.without_envoy_files();
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
        // What changed since the last load: the work of a pass is that of
        // the files read again, not of every object (at 50,000 objects,
        // going over every object read was most of a pass).
        let load = self
            .last_good
            .load_changes(std::slice::from_ref(&self.options.manifests), &self.limits);
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
        let unusable = unusable_files(&load.errors, &load.stale);
        // The objects of files that no longer read, each with why.
        let mut stale: BTreeMap<ObjectKey, &[Violation]> = BTreeMap::new();
        for (file, problems) in &unusable {
            for loaded in self.last_good.used_in(file) {
                stale.insert(loaded.object.key(), problems);
            }
        }
        for key in &load.removed {
            self.pass.projector.remove(key);
            self.pass.forget(key);
            self.objects.remove(key);
        }
        // What is new or changed is fed, in key order; so is an object
        // whose file reads again, whether or not it changed, so that the
        // projection stops reporting it.
        let mut feed: BTreeMap<ObjectKey, VirtualHostObject> = BTreeMap::new();
        for loaded in load.put {
            let object = loaded.object;
            let key = object.key();
            let was_stale = self.stale.contains(&key) && !stale.contains_key(&key);
            if was_stale || !self.objects.fed(&key).is_some_and(|fed| unchanged(fed, &object)) {
                feed.insert(key, object);
            }
        }
        // Served as last read, its file not read again (an I/O error now):
        // fed again too.
        for key in self.stale.iter().filter(|key| !stale.contains_key(*key)) {
            if !feed.contains_key(key)
                && let Some(loaded) = self.last_good.used(key)
            {
                feed.insert(key.clone(), loaded.object.clone());
            }
        }
        for (key, object) in feed {
            self.stale.remove(&key);
            warn_set_aside(&key, &object.set_aside);
            // What is served changes only for a version it can use.
            let generation = object.generation;
            self.pass.projector.upsert_keeping_valid(object.clone(), generation);
            self.objects.feed(key, object);
        }
        // A file that turned unusable (does not parse, keeps changing)
        // gave its objects as last read: the projection says why they are
        // served as that version.
        for (key, problems) in stale {
            self.pass.projector.keep_valid(&key, problems);
            self.stale.insert(key);
        }
        self.stale.retain(|key| self.objects.fed(key).is_some());
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
        let metrics = self.metrics.clone();
        Timed::start(&metrics).finished(self.reconcile_inner())
    }

    fn reconcile_inner(&mut self) -> anyhow::Result<Summary> {
        let started = Instant::now();
        let (input_errors, stale_files) = self.load();
        let snapshot = self.pass.snapshot();
        let now = Timestamp::now();
        let resolutions = self
            .secrets
            .resolve(&snapshot.tls_secrets, &self.pass.tls, now.as_second());
        self.referenced = snapshot.tls_secrets.clone();
        let (summary, patches) = self
            .pass
            .run(
                Round {
                    snapshot: &snapshot,
                    resolutions,
                    derive_all: false,
                    now,
                    started,
                },
                &mut self.objects,
                &self.metrics,
            )
            .map_err(|err| match err.downcast::<std::io::Error>() {
                // A file that could not be written is named with its directory.
                Ok(err) => anyhow::Error::new(err).context(format!("in {}", self.options.out.display())),
                Err(err) => err,
            })?;
        self.objects.status_file_written();
        self.metrics.status_patches.inc_by(patches.len() as u64);
        Ok(Summary {
            status_changes: patches.len(),
            input_errors,
            stale_files,
            ..summary
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
        // Envoys' answers over xDS make the statuses waiting for them due.
        let mut fleet = self.pass.fleet_changes();
        let mut looked_at = None;
        let mut backoff = outputs::backoff::Backoff::default();
        // The certificates' change time a pass was last woken for: once each.
        let mut woken_for_certificates = None;
        loop {
            let now = Instant::now();
            // A file found still changing is looked at again once it has
            // changed for longer than its bound, to be set aside.
            let set_aside_due = self.last_good.set_aside_due().filter(|due| Some(*due) != looked_at);
            // A certificate crossing a line of its validity changes
            // `ResolvedRefs` with nothing else changing.
            let certificates = self
                .pass
                .certificates_change_at()
                .filter(|at| Some(*at) != woken_for_certificates);
            let wake = debouncer
                .deadline()
                .into_iter()
                .chain(set_aside_due)
                .chain(certificates.map(|at| now + wait_until(at)))
                .fold(now + self.options.poll, Instant::min);
            std::thread::sleep(wake.saturating_duration_since(now));
            if let Some(at) = certificates
                && Timestamp::now() >= at
            {
                woken_for_certificates = Some(at);
                debouncer.change(Instant::now());
            }
            let fingerprint = self.fingerprint();
            let due = set_aside_due.filter(|due| *due <= Instant::now());
            let settled = self.last_good.settled_since_load(self.limits.settle);
            if fingerprint != seen || due.is_some() || settled {
                seen = fingerprint;
                looked_at = due.or(looked_at);
                debouncer.change(Instant::now());
            }
            if let Some(changes) = &mut fleet
                && changes.has_changed().unwrap_or(false)
            {
                changes.mark_unchanged();
                if self.pass.fleet_changed() {
                    debouncer.change(Instant::now());
                }
            }
            if debouncer.take_due(Instant::now()) {
                // On error the previous outputs stay, and the pass is
                // retried after a back-off (an edit runs one at once).
                let result = self.pass();
                if let Some(wait) = retry_after(&mut backoff, &result) {
                    debouncer.change(Instant::now() + wait);
                }
            }
        }
    }

    fn pass(&mut self) -> anyhow::Result<Summary> {
        let started = Instant::now();
        let summary = self.reconcile()?;
        info!(
            objects = self.objects.count(),
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

/// Whether `read` is the object already fed to the projector. An object of
/// a file not read again holds the very spec it held then (shared with the
/// file's last good read), which spares comparing every route of every
/// object on each pass.
fn unchanged(fed: &VirtualHostObject, read: &VirtualHostObject) -> bool {
    // Destructured: a field added to the object must be compared here.
    // The status plays no part; the generation is the statuses'
    // `observedGeneration`.
    let VirtualHostObject {
        namespace,
        name,
        creation_timestamp,
        generation,
        spec,
        status: _,
        read_problems,
        set_aside,
    } = fed;
    (std::sync::Arc::ptr_eq(spec, &read.spec) || **spec == *read.spec)
        && *namespace == read.namespace
        && *name == read.name
        && *creation_timestamp == read.creation_timestamp
        && *generation == read.generation
        && *read_problems == read.read_problems
        && *set_aside == read.set_aside
}
