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
//! Nothing is written until every watched scope (all namespaces, or each
//! configured namespace) has been listed once: a pass over a partial list
//! would drop the hosts of the objects not yet seen.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use aether_api::config::v1::VirtualHost;
use aether_projection::{ObjectKey, ProjectionConfig, Projector, VirtualHostObject};
use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::Event;
use tracing::{debug, info, warn};

use crate::metrics::Metrics;
use crate::outputs::{self, DEPENDENCIES_FILE, Files, ROUTES_FILE, TLS_SECRETS_FILE};
use crate::status::Observed;

/// What is watched: one namespace, or all (`None`).
pub type Scope = Option<String>;

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files written (unchanged ones skipped).
    pub written: Vec<&'static str>,
    /// Status patches accepted by the API server.
    pub patched: usize,
    /// Status patches that failed (retried on the next pass).
    pub failed_patches: usize,
}

struct Known {
    object: VirtualHostObject,
    observed: Observed,
}

/// The controller's state between passes.
pub struct ClusterState {
    out: PathBuf,
    scopes: Vec<Scope>,
    projector: Projector,
    known: BTreeMap<ObjectKey, Known>,
    /// Objects of a re-list in progress, per scope.
    listing: HashMap<Scope, Vec<VirtualHost>>,
    listed: HashSet<Scope>,
    written: Files,
}

/// The projection's view of a VirtualHost, and its generation; `None` for
/// an object without a namespace or name (never stored by an API server).
fn convert(host: &VirtualHost) -> Option<(VirtualHostObject, i64)> {
    let object = VirtualHostObject {
        namespace: host.metadata.namespace.clone()?,
        name: host.metadata.name.clone()?,
        creation_timestamp: host.metadata.creation_timestamp.as_ref().map(|time| time.0),
        spec: host.spec.clone(),
    };
    Some((object, host.metadata.generation.unwrap_or(0)))
}

fn in_scope(scope: &Scope, key: &ObjectKey) -> bool {
    scope.as_ref().is_none_or(|namespace| *namespace == key.namespace)
}

impl ClusterState {
    /// A state watching `scopes`, writing into `out` (which must exist).
    /// Files already in `out` are read so that identical ones are not rewritten.
    pub fn new(scopes: Vec<Scope>, out: PathBuf, projection: ProjectionConfig) -> Self {
        let files = [ROUTES_FILE, DEPENDENCIES_FILE, TLS_SECRETS_FILE];
        outputs::remove_stray_temporaries(&out, &files);
        let written = outputs::read_existing(&out, &files);
        Self {
            out,
            scopes,
            projector: Projector::new(projection),
            known: BTreeMap::new(),
            listing: HashMap::new(),
            listed: HashSet::new(),
            written,
        }
    }

    /// Whether every scope has been listed, so a pass sees every object.
    pub fn ready(&self) -> bool {
        self.scopes.iter().all(|scope| self.listed.contains(scope))
    }

    /// Takes in one watch event of `scope`.
    pub fn apply(&mut self, scope: &Scope, event: Event<VirtualHost>) {
        match event {
            Event::Apply(host) => self.upsert(&host),
            Event::Delete(host) => {
                if let Some((object, _)) = convert(&host) {
                    debug!(namespace = %object.namespace, name = %object.name, "deleted");
                    let key = object.key();
                    self.projector.remove(&key);
                    self.known.remove(&key);
                }
            }
            Event::Init => {
                self.listing.insert(scope.clone(), Vec::new());
            }
            Event::InitApply(host) => self.listing.entry(scope.clone()).or_default().push(host),
            Event::InitDone => {
                let listed = self.listing.remove(scope).unwrap_or_default();
                let present: HashSet<ObjectKey> = listed
                    .iter()
                    .filter_map(|host| convert(host).map(|(object, _)| object.key()))
                    .collect();
                let gone: Vec<ObjectKey> = self
                    .known
                    .keys()
                    .filter(|key| in_scope(scope, key) && !present.contains(*key))
                    .cloned()
                    .collect();
                for key in gone {
                    self.projector.remove(&key);
                    self.known.remove(&key);
                }
                for host in &listed {
                    self.upsert(host);
                }
                self.listed.insert(scope.clone());
                info!(
                    scope = scope.as_deref().unwrap_or("*"),
                    objects = listed.len(),
                    "listed"
                );
            }
        }
    }

    fn upsert(&mut self, host: &VirtualHost) {
        let Some((object, generation)) = convert(host) else {
            warn!(name = ?host.metadata.name, "ignoring a VirtualHost without namespace or name");
            return;
        };
        let key = object.key();
        let observed = Observed {
            generation,
            status: host.status.clone(),
        };
        match self.known.get_mut(&key) {
            // A status-only change (such as our own write coming back).
            Some(known) if known.object == object => known.observed = observed,
            _ => {
                debug!(namespace = %key.namespace, name = %key.name, generation, "changed");
                self.projector.upsert(object.clone());
                self.known.insert(key, Known { object, observed });
            }
        }
    }

    /// One pass: project, write the changed files, patch the changed
    /// statuses. A failed file write leaves the previous file in place and
    /// returns the error (statuses are then not patched, since they describe
    /// what the edge serves); a failed patch is logged and counted, and
    /// retried on the next pass.
    pub async fn reconcile(&mut self, client: &Client, metrics: &Metrics, now: Timestamp) -> anyhow::Result<Summary> {
        let started = Instant::now();
        metrics.reconciles.inc();
        let result = self.reconcile_inner(client, metrics, now).await;
        metrics.reconcile_seconds.observe(started.elapsed().as_secs_f64());
        if !matches!(&result, Ok(summary) if summary.failed_patches == 0) {
            metrics.reconcile_errors.inc();
        }
        result
    }

    async fn reconcile_inner(&mut self, client: &Client, metrics: &Metrics, now: Timestamp) -> anyhow::Result<Summary> {
        let snapshot = self.projector.snapshot();
        let observed: BTreeMap<ObjectKey, Observed> = self
            .known
            .iter()
            .map(|(key, known)| (key.clone(), known.observed.clone()))
            .collect();
        let plan = crate::plan(&snapshot, &observed, &self.written, now)?;
        metrics.conflicts.set(plan.conflicts as i64);
        metrics.invalid_objects.set(plan.invalid as i64);
        metrics.objects.set(self.known.len() as i64);

        let files: Files = plan.writes.into_iter().collect();
        let written = outputs::write_changed(&self.out, &files, &mut self.written)?;
        metrics.file_writes.inc_by(written.len() as u64);
        if !written.is_empty() {
            info!(files = ?written, out = %self.out.display(), "wrote");
        }

        let mut summary = Summary {
            written,
            ..Summary::default()
        };
        for patch in plan.patches {
            let key = &patch.key;
            let api: Api<VirtualHost> = Api::namespaced(client.clone(), &key.namespace);
            metrics.status_patches.inc();
            match api
                .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(patch.merge_patch()))
                .await
            {
                Ok(stored) => {
                    crate::local::log_status(key, &patch.status);
                    // Remember what is stored now, so that a pass before the
                    // watch event arrives does not send the same patch again.
                    if let Some(known) = self.known.get_mut(key) {
                        known.observed.status = stored.status.clone();
                        if let Some(generation) = stored.metadata.generation {
                            known.observed.generation = generation;
                        }
                    }
                    summary.patched += 1;
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    debug!(namespace = %key.namespace, name = %key.name, "gone before its status was written");
                }
                Err(err) => {
                    warn!(namespace = %key.namespace, name = %key.name, error = %err, "status patch failed");
                    summary.failed_patches += 1;
                }
            }
        }
        Ok(summary)
    }

    /// The namespace/name keys known, for tests and logs.
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.known.keys()
    }

    /// The scopes watched.
    pub fn scopes(&self) -> &[Scope] {
        &self.scopes
    }

    /// The state's view of one object's stored status.
    pub fn observed(&self, key: &ObjectKey) -> Option<&Observed> {
        self.known.get(key).map(|known| &known.observed)
    }
}
