//! The projection's state, kept up to date one object at a time.
//!
//! Data follows the objects: each is validated once, its Envoy virtual host
//! (routes and all) is built once and cached, and the only thing shared
//! between objects is the host index, `host → claimants ordered by rank`.
//! Adding, changing or removing an object touches its own hosts' claimant
//! sets and re-derives the domains of the objects whose win on one of those
//! hosts changed: O(that object and its conflicts), with a log factor from
//! the ordered maps, never a pass over all objects. It names the objects so
//! touched ([`Projector::take_touched`]), for consumers that derive
//! something per object. The served virtual hosts are kept in a
//! [`RouteTable`], changed one entry at a time, which a snapshot shares
//! whole; the lists derived from hosts, backends and secrets are rebuilt
//! by the first snapshot after a change that can alter them (a change of
//! one object's routes alters none), and shared by the next ones.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use envoy_types::pb::envoy::config::route::v3 as route;

use crate::config::{PlainHttp, ProjectionConfig};
use crate::envoy;
use crate::input::{Rank, VirtualHostObject};
use crate::route_table::RouteTable;
use crate::snapshot::{Dependency, Kept, Lazy, LeftOutReason, Report, ReportIndex};
use crate::tls::{TlsChain, TlsSecret};
use aether_api::validate::Violation;

use aether_api::ObjectKey;

mod entry;
mod report;

use entry::{Entry, Valid, decrement, release};

/// Bad input to a full build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectError {
    /// Two objects of the input have the same namespace and name, so the
    /// input is not a set of objects: which one is meant is unknowable.
    DuplicateObject(ObjectKey),
}

impl fmt::Display for ProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateObject(key) => write!(f, "the input holds VirtualHost {key} more than once"),
        }
    }
}

impl std::error::Error for ProjectError {}

/// The projection of a changing set of objects.
///
/// ```
/// use aether_projection::{ObjectKey, ProjectionConfig, Projector, VirtualHostObject};
///
/// let object = |name: &str, created: &str| -> VirtualHostObject {
///     serde_json::from_value(serde_json::json!({
///         "namespace": "default", "name": name, "creationTimestamp": created,
///         "spec": {"hosts": ["api.example.com"], "routes": [{"match": {"prefix": "/"}, "backend": {"service": name}}]}
///     })).unwrap()
/// };
/// let mut projector = Projector::new(ProjectionConfig::default());
/// projector.upsert(object("new", "2026-02-01T00:00:00Z"));
/// projector.upsert(object("old", "2026-01-01T00:00:00Z"));
/// // The older object wins the host; the other has none left.
/// let snapshot = projector.snapshot();
/// assert_eq!(snapshot.route_configuration().unwrap().virtual_hosts[0].name, "default/old");
/// assert_eq!(snapshot.report.conflicts[0].loser.to_string(), "default/new");
///
/// projector.remove(&ObjectKey::new("default", "old"));
/// assert_eq!(projector.snapshot().route_configuration().unwrap().virtual_hosts[0].name, "default/new");
/// ```
#[derive(Debug, Clone)]
pub struct Projector {
    config: ProjectionConfig,
    /// Built once from the config; cloned into every route.
    retry: Option<route::RetryPolicy>,
    objects: HashMap<ObjectKey, Entry>,
    /// Host → its valid claimants, best (winner) first.
    claims: HashMap<String, BTreeSet<Arc<Rank>>>,
    /// Hosts with more than one claimant, for the report.
    contested: BTreeSet<String>,
    /// Objects in the output (valid, with at least one host won).
    included: BTreeSet<ObjectKey>,
    invalid: BTreeSet<ObjectKey>,
    /// Valid objects that won no host.
    hostless: BTreeSet<ObjectKey>,
    /// `(service, port)` → how many included objects send to it.
    dependencies: BTreeMap<(String, u32), usize>,
    /// Secret → how many included objects use it.
    secrets: BTreeMap<TlsSecret, usize>,
    /// The virtual hosts of the included objects.
    table: RouteTable,
    /// The whole virtual host of each served object with TLS (its chain's):
    /// the same as in `table` unless TLS hosts are redirected over plain
    /// HTTP ([`PlainHttp::Redirect`]).
    tls_table: RouteTable,
    derived: Derived,
    /// The objects whose outcome may have changed since the last
    /// [`Projector::take_touched`].
    touched: HashSet<ObjectKey>,
    /// Objects whose newest version could not be used, served as the
    /// valid version held ([`Projector::keep_valid`]).
    kept: BTreeMap<ObjectKey, Kept>,
}

/// The snapshot's parts, each built by the first snapshot after a change
/// that can alter it, then shared (not copied) by every snapshot until the
/// next such change. A change of one object's routes (the same hosts, the
/// same rank) keeps every one whose inputs it leaves alone; any other
/// change drops them all.
#[derive(Debug, Clone, Default)]
struct Derived {
    dependencies: OnceLock<Arc<[Dependency]>>,
    tls_secrets: OnceLock<Arc<[TlsSecret]>>,
    tls: OnceLock<TlsParts>,
    report: OnceLock<(Arc<Report>, Lazy<ReportIndex>)>,
}

/// The TLS chains, the plain hosts under TLS wildcards, and the chains'
/// index by object.
type TlsParts = (Arc<[TlsChain]>, Arc<[String]>);

impl Projector {
    /// An empty projection.
    pub fn new(config: ProjectionConfig) -> Self {
        Self {
            retry: envoy::retry_policy(&config.retry),
            table: RouteTable::new(&config.route_configuration_name),
            tls_table: RouteTable::new(&config.route_configuration_name),
            config,
            objects: HashMap::new(),
            claims: HashMap::new(),
            contested: BTreeSet::new(),
            included: BTreeSet::new(),
            invalid: BTreeSet::new(),
            hostless: BTreeSet::new(),
            dependencies: BTreeMap::new(),
            secrets: BTreeMap::new(),
            derived: Derived::default(),
            touched: HashSet::new(),
            kept: BTreeMap::new(),
        }
    }

    /// The projection of a whole set, to be kept up to date from there:
    /// every object is indexed first and each object's domains derived once,
    /// at the end.
    pub fn from_objects(
        objects: impl IntoIterator<Item = VirtualHostObject>,
        config: ProjectionConfig,
    ) -> Result<Self, ProjectError> {
        let mut projector = Self::new(config);
        let mut valid_keys = Vec::new();
        for object in objects {
            let key = object.key();
            if projector.objects.contains_key(&key) {
                return Err(ProjectError::DuplicateObject(key));
            }
            let entry = Entry::of(&object, projector.retry.as_ref());
            match &entry {
                Entry::Invalid(_) => {
                    projector.invalid.insert(key.clone());
                    projector.touched.insert(key.clone());
                }
                Entry::Valid(valid) => {
                    for host in &valid.hosts {
                        projector
                            .claims
                            .entry(host.clone())
                            .or_default()
                            .insert(valid.rank.clone());
                    }
                    valid_keys.push(key.clone());
                }
            }
            projector.objects.insert(key, entry);
        }
        projector.contested = projector
            .claims
            .iter()
            .filter(|(_, claimants)| claimants.len() > 1)
            .map(|(host, _)| host.clone())
            .collect();
        for key in &valid_keys {
            projector.refresh(key);
        }
        Ok(projector)
    }

    /// The configuration in use.
    pub fn config(&self) -> &ProjectionConfig {
        &self.config
    }

    /// How many objects (valid or not) are held.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Adds the object, or replaces the one with its namespace and name.
    pub fn upsert(&mut self, object: VirtualHostObject) {
        let key = object.key();
        let entry = Entry::of(&object, self.retry.as_ref());
        self.put(key, entry, 0);
    }

    /// [`Projector::upsert`] for a server, which keeps what it serves
    /// until a version it can use comes: a version left out for its
    /// problems (invalid, or unsupported: from a newer API version) does
    /// not replace a valid one held for the object, which is served on
    /// ([`Projector::keep_valid`]). `generation` is the version's
    /// `metadata.generation` (0 where there is none), named in the report
    /// while the version is served in place of a newer one.
    pub fn upsert_keeping_valid(&mut self, object: VirtualHostObject, generation: i64) {
        let key = object.key();
        let entry = Entry::of(&object, self.retry.as_ref());
        if let Entry::Invalid(problems) = &entry
            && self.keep_valid(&key, problems)
        {
            return;
        }
        self.put(key, entry, generation);
    }

    /// Serves on the valid version held for `key` although its newest
    /// version cannot be used for `problems` (not empty: its rules broken,
    /// or a reader's, such as a file that no longer parses), and reports
    /// both ([`Report::kept`]) until the object is upserted or removed. Its
    /// hosts stay claimed by the held version's rank: it is the same
    /// object. Returns `false`, changing nothing, when no valid version is
    /// held.
    pub fn keep_valid(&mut self, key: &ObjectKey, problems: &[Violation]) -> bool {
        let Some(Entry::Valid(held)) = self.objects.get(key) else {
            return false;
        };
        let kept = Kept {
            object: key.clone(),
            generation: held.generation,
            newer: LeftOutReason::of_problems(problems.to_vec()),
        };
        if self.kept.get(key) != Some(&kept) {
            self.kept.insert(key.clone(), kept);
            self.derived.report.take();
            self.touched.insert(key.clone());
        }
        true
    }

    /// Holds `entry` (of version `generation`) for `key`, replacing what was held.
    fn put(&mut self, key: ObjectKey, mut entry: Entry, generation: i64) {
        if let Entry::Valid(valid) = &mut entry {
            valid.generation = generation;
        }
        if self.kept.remove(&key).is_some() {
            self.derived.report.take();
            self.touched.insert(key.clone());
        }
        let Err(entry) = self.replace_in_place(&key, entry) else {
            return;
        };
        self.remove(&key);
        self.touched.insert(key.clone());
        let valid = match entry {
            Entry::Invalid(problems) => {
                self.invalid.insert(key.clone());
                self.objects.insert(key, Entry::Invalid(problems));
                return;
            }
            Entry::Valid(valid) => valid,
        };
        // Objects that were winning a host this one now takes.
        let mut dethroned = Vec::new();
        for host in &valid.hosts {
            let claimants = self.claims.entry(host.clone()).or_default();
            let before = claimants.first().cloned();
            claimants.insert(valid.rank.clone());
            if claimants.len() > 1 {
                self.contested.insert(host.clone());
            }
            if let Some(before) = before
                && claimants.first() == Some(&valid.rank)
            {
                dethroned.push(before.key.clone());
            }
        }
        // Every claimant of these hosts: a new claimant changes who each
        // one loses a host to, or that it conflicts at all.
        self.touch_claimants(&valid.hosts);
        self.objects.insert(key.clone(), Entry::Valid(valid));
        self.refresh(&key);
        for other in dethroned {
            self.refresh(&other);
        }
    }

    /// The objects whose outcome may have changed since the last call (or
    /// since the projector was made): served or not, their domains and
    /// virtual host, the conflicts they are in, their routes left out,
    /// their problems, their secret. Every other object's outcome is as
    /// it was, so a consumer that derives something per object (a status)
    /// need derive it again only for these.
    pub fn take_touched(&mut self) -> HashSet<ObjectKey> {
        std::mem::take(&mut self.touched)
    }

    fn touch_claimants(&mut self, hosts: &[String]) {
        for host in hosts {
            if let Some(claimants) = self.claims.get(host) {
                self.touched.extend(claimants.iter().map(|rank| rank.key.clone()));
            }
        }
    }

    /// Replaces the object `key` by `entry` where that changes no host's
    /// claimants (the same hosts and rank, or invalid before and after):
    /// its domains stay, and only the derived parts its change can alter
    /// are dropped. Gives `entry` back otherwise.
    fn replace_in_place(&mut self, key: &ObjectKey, entry: Entry) -> Result<(), Entry> {
        match (self.objects.get_mut(key), entry) {
            (Some(Entry::Invalid(problems)), Entry::Invalid(new)) => {
                if *problems != new {
                    self.derived.report.take();
                    self.touched.insert(key.clone());
                }
                *problems = new;
                Ok(())
            }
            (Some(Entry::Valid(old)), Entry::Valid(mut new)) if old.hosts == new.hosts && old.rank == new.rank => {
                if old.included {
                    if old.backends != new.backends {
                        for backend in &new.backends {
                            *self.dependencies.entry(backend.clone()).or_default() += 1;
                        }
                        for backend in &old.backends {
                            decrement(&mut self.dependencies, backend);
                        }
                        self.derived.dependencies.take();
                    }
                    if old.secret != new.secret {
                        if let Some(secret) = &new.secret {
                            *self.secrets.entry(secret.clone()).or_default() += 1;
                        }
                        if let Some(secret) = &old.secret {
                            decrement(&mut self.secrets, secret);
                        }
                        self.derived.tls_secrets.take();
                        self.derived.tls.take();
                    }
                    if old.routes_left_out != new.routes_left_out {
                        self.derived.report.take();
                    }
                }
                let routes = &new.virtual_host[new.routes_at..];
                let virtual_host = envoy::virtual_host_entry(&new.name, &old.domains, routes);
                new.routes_at = virtual_host.len() - routes.len();
                new.virtual_host = virtual_host;
                new.domains = std::mem::take(&mut old.domains);
                new.included = old.included;
                *old = new;
                if old.included {
                    serve(
                        &mut self.table,
                        &mut self.tls_table,
                        self.config.tls_hosts_over_plain_http,
                        key,
                        old,
                    );
                }
                self.touched.insert(key.clone());
                Ok(())
            }
            (_, entry) => Err(entry),
        }
    }

    /// Removes the object; returns whether it was there.
    pub fn remove(&mut self, key: &ObjectKey) -> bool {
        self.derived = Derived::default();
        self.kept.remove(key);
        let valid = match self.objects.remove(key) {
            None => return false,
            Some(Entry::Invalid(_)) => {
                self.invalid.remove(key);
                self.touched.insert(key.clone());
                return true;
            }
            Some(Entry::Valid(valid)) => valid,
        };
        self.touched.insert(key.clone());
        if valid.included {
            release(&mut self.dependencies, &mut self.secrets, &valid);
            self.table.remove(key);
            self.tls_table.remove(key);
        }
        self.included.remove(key);
        self.hostless.remove(key);
        // Objects that inherit a host this one was winning.
        let mut heirs = Vec::new();
        for host in &valid.hosts {
            let Some(claimants) = self.claims.get_mut(host) else {
                continue;
            };
            let was_winner = claimants.first() == Some(&valid.rank);
            claimants.remove(&valid.rank);
            if claimants.len() < 2 {
                self.contested.remove(host);
            }
            match claimants.first() {
                None => {
                    self.claims.remove(host);
                }
                Some(heir) if was_winner => heirs.push(heir.key.clone()),
                Some(_) => {}
            }
        }
        // The remaining claimants of its hosts lose a rival.
        self.touch_claimants(&valid.hosts);
        for heir in heirs {
            self.refresh(&heir);
        }
        true
    }

    /// Re-derives the object's domains from the host index, and moves it in
    /// or out of the output. O(its hosts).
    fn refresh(&mut self, key: &ObjectKey) {
        let Some(Entry::Valid(valid)) = self.objects.get_mut(key) else {
            return;
        };
        self.touched.insert(key.clone());
        let claims = &self.claims;
        let domains: Vec<String> = valid
            .hosts
            .iter()
            .filter(|host| claims.get(*host).and_then(|claimants| claimants.first()) == Some(&valid.rank))
            .cloned()
            .collect();
        let domains_changed = domains != valid.domains;
        if domains_changed {
            let routes = &valid.virtual_host[valid.routes_at..];
            let virtual_host = envoy::virtual_host_entry(&valid.name, &domains, routes);
            valid.routes_at = virtual_host.len() - routes.len();
            valid.virtual_host = virtual_host;
            valid.domains = domains;
        }
        let include = !valid.domains.is_empty();
        if include && (domains_changed || !valid.included) {
            serve(
                &mut self.table,
                &mut self.tls_table,
                self.config.tls_hosts_over_plain_http,
                key,
                valid,
            );
        } else if !include && valid.included {
            self.table.remove(key);
            self.tls_table.remove(key);
        }
        if include != valid.included {
            valid.included = include;
            if include {
                for backend in &valid.backends {
                    *self.dependencies.entry(backend.clone()).or_default() += 1;
                }
                if let Some(secret) = &valid.secret {
                    *self.secrets.entry(secret.clone()).or_default() += 1;
                }
            } else {
                release(&mut self.dependencies, &mut self.secrets, valid);
            }
        }
        if include {
            self.included.insert(key.clone());
            self.hostless.remove(key);
        } else {
            self.included.remove(key);
            self.hostless.insert(key.clone());
        }
    }
}

/// Puts served object `key`'s virtual host in the tables: whole in
/// `tls_table` when it has TLS, and in `table` whole or, when `plain` says
/// so, as a redirect to HTTPS naming its domains alone.
fn serve(table: &mut RouteTable, tls_table: &mut RouteTable, plain: PlainHttp, key: &ObjectKey, valid: &Valid) {
    if valid.secret.is_some() {
        tls_table.put(key, valid.virtual_host.clone());
        if plain == PlainHttp::Redirect {
            table.put(key, envoy::redirect_virtual_host_entry(&valid.name, &valid.domains));
            return;
        }
    } else {
        tls_table.remove(key);
    }
    table.put(key, valid.virtual_host.clone());
}
