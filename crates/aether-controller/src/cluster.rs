//! Cluster mode: a kube-runtime watcher on VirtualHosts feeds the projector;
//! each debounced pass writes the edge files and patches statuses.
//!
//! Status writes are JSON merge patches on the `/status` subresource, sent
//! only when the desired status differs from the one last seen (from a watch
//! event or from a patch's response). A status write bumps the object's
//! `resourceVersion` but not its `generation`, and comes back as a watch
//! event; that event makes a pass that finds nothing to change, so the
//! controller never loops on its own writes.
//!
//! Objects are watched as [`DynamicObject`]s and read tolerantly, as the
//! webhook reads them: a newer CRD may store objects with fields and enum
//! values this build does not know, and a typed watch would fail the whole
//! list on one of them. Each object is decoded on its own
//! (`aether_manifests`' tolerant reading, the local mode's): unknown
//! fields are set aside (logged), and an object this build cannot act on
//! (an unknown enum value, an unknown field in place of a required one) is
//! left out with reason `Unsupported`; the rest of the list is served.
//! Status patches carry only what the controller writes (`routeCount`,
//! `conditions`); the conditions of other owners go back as stored,
//! unknown fields and all, since a merge patch replaces a list whole.
//!
//! Nothing is written until every watched scope (all namespaces, or each
//! configured namespace) has been listed once: a pass over a partial list
//! would drop the hosts of the objects not yet seen.
//!
//! Several replicas may run (one beside each edge Envoy): every replica
//! writes its own files, but only the one holding the controller's Lease
//! ([`Role::Leader`]) patches statuses, so one status flip gets one
//! transition time. The same replica records each stored condition
//! transition as a Kubernetes Event on the object ([`crate::events`]).
//! [`run`] is the whole loop; the binary wires it to kube-runtime watchers
//! ([`Feeds`]) and a kube-lease-manager Lease.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHost;
use aether_projection::{ObjectKey, ProjectionConfig};
use aether_runtime::watch::{Change, Event, Mirror};
use futures_util::{Stream, StreamExt};
use jiff::Timestamp;
use kube::Client;
use kube::Resource as _;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::debounce::Debouncer;
use crate::events::{self, EventRecorder};

mod stored;
use stored::{Known, convert};

use crate::metrics::Metrics;
use crate::outputs::backoff::Backoff;
use crate::outputs::{DEPENDENCIES_FILE, LISTENERS_FILE, ROUTES_FILE, TLS_SECRETS_FILE};
use crate::pass::{Inputs, Pass, Round, Summary, Timed, log_status, retry_after, wait_until, warn_set_aside};
use crate::status::Observed;
use crate::tls::TlsSettings;
use crate::tls::cluster::ClusterSecrets;
use crate::xds;

/// An event of the Secrets' metadata watch.
pub type SecretEvent = Event<kube::api::PartialObjectMeta<k8s_openapi::api::core::v1::Secret>>;

/// What is watched: one namespace, or all (`None`).
pub use aether_runtime::watch::Scope;

/// The VirtualHosts of `scope`, as objects of any shape: what the watch
/// lists and the status patches address.
pub fn virtual_hosts(client: &Client, scope: &Scope) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<VirtualHost>(&());
    match scope {
        None => Api::all_with(client.clone(), &resource),
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
    }
}

/// The watch events of every VirtualHost in `scopes`, each tagged with its
/// scope: one kube-runtime watcher per scope (retrying with backoff),
/// merged: [`Feeds::virtual_hosts`].
pub fn watch(
    client: &Client,
    scopes: &[Scope],
) -> impl Stream<Item = (Scope, Result<Event<DynamicObject>, watcher::Error>)> + Send + Unpin + use<> {
    let streams = scopes.iter().map(|scope| {
        let tag = scope.clone();
        watcher(virtual_hosts(client, scope), watcher::Config::default())
            .default_backoff()
            .map(move |event| (tag.clone(), event))
            .boxed()
    });
    futures_util::stream::select_all(streams)
}

/// The Lease the binary elects its status writer with, unless told another
/// (`generated/deploy/controller/lease-role.yaml` grants this one).
pub const DEFAULT_LEASE_NAME: &str = "aether-controller";

/// Whether this replica writes statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Holds the Lease (or runs alone): patches statuses.
    Leader,
    /// Another replica holds the Lease: writes its files, sends no patch.
    Follower,
}

/// The controller's state between passes.
pub struct ClusterState {
    scopes: Vec<Scope>,
    pass: Pass,
    /// The watched objects, kept by the shared re-list machine (the
    /// webhook's too). A leader's pass derives again the statuses of those
    /// whose stored object changed (a status written by someone else comes
    /// back as such a change) and of those whose last patch failed; after
    /// a re-list or a pass as follower, every status.
    known: Mirror<Known>,
    secrets: ClusterSecrets,
    events: Option<EventRecorder>,
}

/// What a pass reads of the watched objects: their stored statuses.
impl Inputs for Mirror<Known> {
    fn count(&self) -> usize {
        self.len()
    }

    fn observed(&self, key: &ObjectKey) -> Option<Observed> {
        self.get(key).map(|known| known.observed.clone())
    }

    fn every_observed(&self) -> BTreeMap<ObjectKey, Observed> {
        self.iter()
            .map(|(key, known)| (key.clone(), known.observed.clone()))
            .collect()
    }
}

impl ClusterState {
    /// A state watching `scopes`, writing into `out` (which must exist).
    /// Files already in `out` are read so that identical ones are not rewritten.
    pub fn new(scopes: Vec<Scope>, out: PathBuf, projection: ProjectionConfig) -> Self {
        let files = [ROUTES_FILE, DEPENDENCIES_FILE, TLS_SECRETS_FILE, LISTENERS_FILE];
        let tls = TlsSettings::new(out.to_string_lossy());
        Self {
            pass: Pass::new(out, projection, tls, &files),
            secrets: ClusterSecrets::default(),
            scopes,
            known: Mirror::new(),
            events: None,
        }
    }

    /// Records each condition transition a status patch stores as a
    /// Kubernetes Event on the object ([`crate::events`]).
    pub fn with_events(mut self, recorder: EventRecorder) -> Self {
        self.events = Some(recorder);
        self
    }

    /// Hands the HTTPS listener to Envoy with `settings`, its `KUBERNETES`
    /// secrets from `secrets`.
    pub fn with_tls(mut self, settings: TlsSettings, secrets: ClusterSecrets) -> Self {
        self.pass.tls = settings;
        self.secrets = secrets;
        self
    }

    /// The Secrets store, fed by the Secret watch.
    pub fn secrets_mut(&mut self) -> &mut ClusterSecrets {
        &mut self.secrets
    }

    /// Also publishes each pass's route configuration to an xDS server.
    pub fn with_xds(mut self, publisher: xds::Publisher) -> Self {
        self.pass.xds = Some(publisher);
        self
    }

    /// Shares `Programmed` with the other replicas ([`crate::programmed::replicas`]).
    pub fn with_replicas(mut self, sharing: &crate::programmed::replicas::reporter::Sharing, identity: String) -> Self {
        self.pass.programmed.share_with_replicas(sharing, identity);
        self
    }

    /// Writes none of Envoy's files (`routes.json`, `listeners.json`,
    /// `secrets/`), for Envoys that take all of it over xDS
    /// ([`crate::outputs::Written::without_envoy_files`]).
    pub fn without_envoy_files(mut self) -> Self {
        self.pass.without_envoy_files();
        self
    }

    /// Whether every scope has been listed, so a pass sees every object.
    pub fn ready(&self) -> bool {
        self.scopes.iter().all(|scope| self.known.is_listed(scope))
    }

    /// Takes in one watch event of `scope`: the shared machine says what it
    /// changed, and the projector follows. A change of status alone (such
    /// as this controller's own write coming back) leaves the projector be.
    pub fn apply(&mut self, scope: &Scope, event: Event<DynamicObject>) {
        let applied = self.known.apply(scope, &event, convert);
        for change in applied.changes {
            match change {
                Change::Removed { key, .. } => {
                    debug!(namespace = %key.namespace, name = %key.name, "deleted");
                    self.pass.projector.remove(&key);
                    self.pass.forget(&key);
                }
                Change::Upserted { key, previous } => {
                    if let Some(previous) = previous.as_ref()
                        && let Some(known) = self.known.get_mut(&key)
                        && known.is_older_than(previous)
                    {
                        debug!(namespace = %key.namespace, name = %key.name, "an older version than known, left out");
                        *known = previous.clone();
                        continue;
                    }
                    let Some(known) = self.known.get(&key) else { continue };
                    self.pass.status_due(key.clone());
                    if previous.is_some_and(|previous| previous.object == known.object) {
                        continue;
                    }
                    debug!(namespace = %key.namespace, name = %key.name, generation = known.observed.generation, "changed");
                    warn_set_aside(&key, &known.set_aside);
                    // What is served changes only for a version it can
                    // use (the webhook may not have judged this one).
                    self.pass
                        .projector
                        .upsert_keeping_valid(known.object.clone(), known.observed.generation);
                }
            }
        }
        if applied.listed {
            self.pass.derive_every_status();
            info!(
                scope = scope.as_deref().unwrap_or("*"),
                objects = self
                    .known
                    .iter()
                    .filter(|(key, _)| aether_runtime::watch::in_scope(scope, key))
                    .count(),
                "listed"
            );
        }
    }

    /// One pass: project, write the changed files, and as [`Role::Leader`]
    /// patch the changed statuses. A failed file write leaves the previous
    /// file in place and returns the error (statuses are then not patched,
    /// since they describe what the edge serves); a failed patch is logged
    /// and counted, and retried on the next pass.
    pub async fn reconcile(
        &mut self,
        client: &Client,
        metrics: &Metrics,
        now: Timestamp,
        role: Role,
    ) -> anyhow::Result<Summary> {
        Timed::start(metrics).finished(self.reconcile_inner(client, metrics, now, role).await)
    }

    async fn reconcile_inner(
        &mut self,
        client: &Client,
        metrics: &Metrics,
        now: Timestamp,
        role: Role,
    ) -> anyhow::Result<Summary> {
        let started = Instant::now();
        let snapshot = self.pass.snapshot();
        self.secrets.fetch(client, &snapshot.tls_secrets).await;
        let resolutions = self
            .secrets
            .resolve(&snapshot.tls_secrets, &self.pass.tls, Timestamp::now().as_second());
        // As follower, every status is derived, to count what the leader
        // has left to patch.
        let derive_all = role == Role::Follower;
        let round = Round {
            snapshot: &snapshot,
            resolutions,
            derive_all,
            now,
            started,
        };
        let (mut summary, patches) = self.pass.run(round, &mut self.known, metrics)?;
        if !summary.written.is_empty() {
            info!(files = ?summary.written, out = %self.pass.out.display(), "wrote");
        }
        if role == Role::Follower {
            self.pass.derive_every_status();
            summary.left_to_leader = patches.len();
            metrics.status_patches_pending.set(summary.left_to_leader as i64);
            return Ok(summary);
        }
        let mut events_dropped = 0;
        for patch in patches {
            let key = &patch.key;
            let api = virtual_hosts(client, &Some(key.namespace.clone()));
            let stored_conditions = self.known.get(key).map(|known| known.stored_conditions.as_slice());
            let body = patch.merge_patch_keeping(stored_conditions.unwrap_or_default());
            metrics.status_patches.inc();
            match api
                .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(body))
                .await
            {
                Ok(stored) => {
                    log_status(key, &patch.status);
                    if let Some(recorder) = &self.events {
                        let before = self.known.get(key).and_then(|known| known.observed.status.as_ref());
                        let regarding = stored.object_ref(&ApiResource::erase::<VirtualHost>(&()));
                        events_dropped += recorder.record(&regarding, events::transitions(before, &patch.status));
                    }
                    // Remember what is stored now, so that a pass before the
                    // watch event arrives does not send the same patch again.
                    if let Some(known) = self.known.get_mut(key)
                        && let Some((_, now)) = convert(&stored)
                    {
                        known.observed = now.observed;
                        known.stored_conditions = now.stored_conditions;
                        known.resource_version = now.resource_version;
                    }
                    summary.status_changes += 1;
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    debug!(namespace = %key.namespace, name = %key.name, "gone before its status was written");
                }
                Err(err) => {
                    warn!(namespace = %key.namespace, name = %key.name, error = %err, "status patch failed");
                    summary.failed_patches += 1;
                    self.pass.status_due(key.clone());
                }
            }
        }
        if events_dropped > 0 {
            warn!(
                dropped = events_dropped,
                "events dropped: the API server is not keeping up with them"
            );
        }
        metrics.status_patches_pending.set(summary.failed_patches as i64);
        Ok(summary)
    }

    /// The namespace/name keys known, for tests and logs.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.known.iter().map(|(key, _)| key)
    }

    /// The state's view of one object's stored status.
    pub fn observed(&self, key: &ObjectKey) -> Option<&Observed> {
        self.known.get(key).map(|known| &known.observed)
    }
}

/// What the controller loop follows.
pub struct Feeds<E, S> {
    /// The VirtualHosts' watch events ([`watch()`]).
    pub virtual_hosts: E,
    /// The Secrets' metadata watch events ([`ClusterSecrets::apply`]): a
    /// change of a referenced Secret makes a pass, which reads it.
    pub secrets: S,
    /// Whether this replica holds the Lease.
    pub leading: watch::Receiver<bool>,
}

/// The controller loop, until `shutdown` completes.
///
/// Takes each event of `feeds` into `state`, and runs a pass
/// ([`ClusterState::reconcile`]) when `debouncer` says so, once every scope
/// has been listed. A pass runs as [`Role::Leader`] only while this replica
/// holds the Lease, and one runs as soon as it is won, to write the
/// statuses followers leave unsent. A failed pass is retried after a
/// growing wait ([`Backoff`]). Fails when a watch or the leadership channel
/// ends.
pub async fn run<E, S>(
    client: &Client,
    state: &mut ClusterState,
    mut feeds: Feeds<E, S>,
    metrics: &Metrics,
    mut debouncer: Debouncer,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()>
where
    E: Stream<Item = (Scope, Result<Event<DynamicObject>, watcher::Error>)> + Unpin,
    S: Stream<Item = Result<SecretEvent, watcher::Error>> + Unpin,
{
    tokio::pin!(shutdown);
    metrics.leader.set(i64::from(*feeds.leading.borrow_and_update()));
    // Envoys' answers over xDS make the statuses waiting for them due.
    let mut fleet = state.pass.fleet_changes();
    let mut backoff = Backoff::default();
    // The runtime's clock: the system's, unless a test pauses it.
    let now = || tokio::time::Instant::now().into_std();
    // The certificates' change time a pass was last woken for: once each.
    let mut woken_for_certificates = None;
    loop {
        let due = debouncer.deadline().filter(|_| state.ready());
        let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(
            due.unwrap_or_else(|| now() + Duration::from_secs(3600)),
        ));
        // A certificate crossing a line of its validity changes
        // `ResolvedRefs` with nothing else changing; the time is the
        // system's, since certificates are judged by it.
        let certificates = state
            .pass
            .certificates_change_at()
            .filter(|at| Some(*at) != woken_for_certificates);
        let certificates_sleep = tokio::time::sleep(certificates.map_or(Duration::ZERO, wait_until));
        tokio::select! {
            event = feeds.virtual_hosts.next() => match event {
                Some((scope, Ok(event))) => {
                    state.apply(&scope, event);
                    debouncer.change(now());
                }
                // The watcher retries by itself, with backoff.
                Some((scope, Err(err))) => warn!(scope = scope.as_deref().unwrap_or("*"), error = %err, "watch failed"),
                None => anyhow::bail!("the watch ended"),
            },
            event = feeds.secrets.next() => match event {
                Some(Ok(event)) => {
                    if state.secrets.apply(event) {
                        debouncer.change(now());
                    }
                }
                Some(Err(err)) => warn!(error = %err, "the Secrets' watch failed"),
                None => anyhow::bail!("the Secrets' watch ended"),
            },
            changed = async {
                match &mut fleet {
                    Some(changes) => changes.changed().await,
                    None => std::future::pending().await,
                }
            } => {
                if changed.is_err() {
                    fleet = None;
                } else if state.pass.fleet_changed() {
                    debouncer.change(now());
                }
            }
            changed = feeds.leading.changed() => {
                anyhow::ensure!(changed.is_ok(), "the leader election stopped");
                let leader = *feeds.leading.borrow_and_update();
                metrics.leader.set(i64::from(leader));
                info!(leader, "leadership changed");
                if leader {
                    debouncer.change(now());
                }
            }
            () = certificates_sleep, if certificates.is_some() => {
                if let Some(at) = certificates
                    && Timestamp::now() >= at
                {
                    woken_for_certificates = Some(at);
                    debouncer.change(now());
                }
            }
            () = sleep, if due.is_some() => {
                if debouncer.take_due(now()) {
                    let role = if *feeds.leading.borrow() { Role::Leader } else { Role::Follower };
                    let result = state.reconcile(client, metrics, Timestamp::now(), role).await;
                    if result.is_ok() {
                        // The files are written (patches may have failed; they are retried).
                        metrics.ready.set(1);
                    }
                    if let Some(wait) = retry_after(&mut backoff, &result) {
                        debouncer.change(now() + wait);
                    }
                }
            }
            () = &mut shutdown => return Ok(()),
        }
    }
}
