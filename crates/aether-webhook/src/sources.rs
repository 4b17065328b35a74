//! What feeds the host index: the cluster (a kube-runtime watcher, through
//! the shared re-list machine) or a manifest directory (local mode, polled,
//! through the shared manifest reader).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aether_api::config::v1::VirtualHost;
use aether_manifests::{self as manifests, LastGood, Limits};
use aether_runtime::watch::{Change, Event, Mirror};
use futures_util::StreamExt;
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, watcher};
use kube::{Api, Client};
use serde_json::Value;

use crate::index::{HostIndex, ObjectKey};
use crate::metrics::Metrics;

/// The hosts of a stored object, read leniently: whatever else its spec
/// holds, the hosts it claims are what the index needs, and a stored object
/// the typed decoder disliked must not stall the watch.
fn hosts_of(object: &DynamicObject) -> Vec<String> {
    object
        .data
        .get("spec")
        .and_then(|s| s.get("hosts"))
        .and_then(Value::as_array)
        .map(|hosts| hosts.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn key_of(object: &DynamicObject) -> ObjectKey {
    ObjectKey::new(
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// Applies watcher events to the index, through the re-list machine the
/// controller uses too ([`Mirror`]): a (re-)list is gathered aside and
/// swapped in whole at `InitDone`, so objects deleted while the watch was
/// down disappear, and lookups meanwhile see the previous full list.
#[derive(Default)]
pub struct ClusterFeed {
    /// Each object's hosts: the index's source of record.
    hosts: Mirror<Vec<String>>,
}

impl ClusterFeed {
    /// Applies one event; true when the index holds a complete list.
    pub fn apply(&mut self, event: &Event<DynamicObject>, index: &HostIndex) -> bool {
        let applied = self
            .hosts
            .apply(&None, event, |object| Some((key_of(object), hosts_of(object))));
        if applied.listed {
            // One swap: no review sees half of the new list.
            index.replace_all(self.hosts.iter().map(|(key, hosts)| (key.clone(), hosts.clone())));
            return true;
        }
        for change in applied.changes {
            match change {
                Change::Upserted { key, .. } => {
                    let hosts = self.hosts.get(&key).cloned().unwrap_or_default();
                    index.upsert(key, hosts);
                }
                Change::Removed { key, .. } => {
                    index.remove(&key);
                }
            }
        }
        false
    }
}

/// Cluster mode: a watcher on every VirtualHost in the cluster feeds the
/// index through a [`ClusterFeed`]; `ready` is set after the first full
/// list. Runs until the watch stream ends (it retries with backoff, so only
/// on shutdown).
pub async fn watch_cluster(client: Client, index: Arc<HostIndex>, ready: Arc<AtomicBool>) {
    let resource = ApiResource::erase::<VirtualHost>(&());
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut feed = ClusterFeed::default();
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if feed.apply(&event, &index) {
                    ready.store(true, Ordering::Release);
                }
            }
            Err(e) => tracing::warn!("VirtualHost watch: {e} (retrying)"),
        }
    }
}

/// What one read of the manifest directory found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryRead {
    /// Objects indexed.
    pub objects: usize,
    /// Every error met (each also logged by [`watch_directory`]).
    pub problems: Vec<String>,
    /// Files that could not be read, indexed as they were last read.
    pub stale: Vec<PathBuf>,
    /// Files set aside for not settling within their bound
    /// (`Limits::max_settle_wait`), each among `problems` too.
    pub changing: usize,
}

/// Reads every VirtualHost under `dir` into `index` (replacing it), with
/// the shared keep-last-good policy (the controller's local mode's too): a
/// file that cannot be read or decoded now keeps the hosts it claimed when
/// last read, and a directory that cannot be listed keeps those of every
/// file under it. Dropping them would admit a CREATE that conflicts with
/// objects that are still there: the webhook fails closed. Of two copies of
/// one object, the first in path order is indexed. An object that breaks
/// the API's rules still claims the hosts it names.
pub fn load_directory(dir: &Path, limits: &Limits, store: &mut LastGood, index: &HostIndex) -> DirectoryRead {
    let load = store.load(&[dir.to_path_buf()], limits);
    let objects: HashMap<ObjectKey, Vec<String>> = load
        .objects
        .into_iter()
        .map(|loaded| (loaded.object.key(), loaded.object.spec.hosts.clone()))
        .collect();
    let count = objects.len();
    index.replace_all(objects);
    DirectoryRead {
        objects: count,
        problems: load.errors.iter().map(ToString::to_string).collect(),
        stale: load.stale,
        changing: load
            .errors
            .iter()
            .filter(|err| err.failure == manifests::Failure::Changing)
            .count(),
    }
}

/// The default local-mode poll interval.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Local mode: reads `dir` now, then every `interval` re-reads it when a
/// manifest file was added, removed or changed (size or mtime). Polling
/// needs no inotify and behaves the same on every filesystem; a change is
/// seen within one interval. Files are read within `limits` (a file is
/// read once settled: see [`Limits::settle`]; a read never waits on one
/// still changing, which keeps its last hosts). `ready` is set after the
/// first read. Errors and stale files are logged and set in `metrics`.
pub async fn watch_directory(
    dir: PathBuf,
    interval: Duration,
    limits: Limits,
    index: Arc<HostIndex>,
    ready: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
) {
    let mut last: Option<manifests::Stamp> = None;
    // A read never waits on a file still being written: it keeps what the
    // file gave and looks again next time, so a file that never stops
    // changing delays only itself (see `LastGood::without_waiting`).
    let store = Arc::new(std::sync::Mutex::new(LastGood::without_waiting()));
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let (dir_, index_, store_) = (dir.clone(), index.clone(), store.clone());
        let previous = last.clone();
        let read = tokio::task::spawn_blocking(move || {
            // One read at a time: the ticker waits for this task.
            let mut store = store_.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let stamp = store.stamp(std::slice::from_ref(&dir_), limits.settle);
            let set_aside_due = store.set_aside_due().is_some_and(|due| due <= Instant::now());
            let settled = store.settled_since_load(limits.settle);
            if previous.as_ref() == Some(&stamp) && !set_aside_due && !settled {
                return None;
            }
            Some((stamp, load_directory(&dir_, &limits, &mut store, &index_)))
        })
        .await;
        match read {
            Ok(Some((stamp, read))) => {
                for problem in &read.problems {
                    tracing::warn!("{problem}");
                }
                for file in &read.stale {
                    tracing::warn!(file = %file.display(), "cannot be read now: its hosts are indexed as last read");
                }
                metrics.manifest_errors.set(read.problems.len() as i64);
                metrics.manifest_stale_files.set(read.stale.len() as i64);
                metrics.manifest_changing_files.set(read.changing as i64);
                tracing::info!(objects = read.objects, stale_files = read.stale.len(), dir = %dir.display(), "host index loaded");
                last = Some(stamp);
                ready.store(true, Ordering::Release);
            }
            Ok(None) => {}
            Err(e) => tracing::error!("reading {}: {e}", dir.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: &str, name: &str, hosts: &[&str]) -> DynamicObject {
        DynamicObject::new(name, &ApiResource::erase::<VirtualHost>(&()))
            .within(namespace)
            .data(serde_json::json!({"spec": {"hosts": hosts, "extra": "ignored"}}))
    }

    #[test]
    fn cluster_events_keep_the_index_and_a_relist_replaces_it() {
        let index = HostIndex::new();
        let mut feed = ClusterFeed::default();
        let a = object("ns", "a", &["a.example.com"]);
        let b = object("ns", "b", &["b.example.com", "*.example.com"]);
        assert!(!feed.apply(&Event::Init, &index));
        assert!(!feed.apply(&Event::InitApply(a.clone()), &index));
        assert!(index.is_empty(), "a list in progress is not served");
        assert!(feed.apply(&Event::InitDone, &index));
        assert_eq!(index.len(), (1, 1));
        feed.apply(&Event::Apply(b.clone()), &index);
        assert_eq!(index.len(), (2, 3));
        feed.apply(&Event::Delete(a.clone()), &index);
        assert_eq!(index.len(), (1, 2));
        // A relist (after a reconnect) that no longer has `b` forgets it.
        feed.apply(&Event::Init, &index);
        feed.apply(&Event::InitApply(a), &index);
        assert_eq!(index.len(), (1, 2), "the previous list serves until the relist ends");
        feed.apply(&Event::InitDone, &index);
        assert_eq!(index.len(), (1, 1));
        let found = index.check(&ObjectKey::new("ns", "new"), &["a.example.com".to_owned()]);
        assert_eq!(found.conflicts[0].owner, ObjectKey::new("ns", "a"));
    }

    #[test]
    fn a_directory_loads_its_objects_and_reports_bad_documents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ok.yaml"),
            "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a}\nspec: {hosts: [a.example.com], routes: []}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "apiVersion: v1\nkind: Pod\n").unwrap();
        let index = HostIndex::new();
        let read = load_directory(dir.path(), &Limits::default(), &mut LastGood::new(), &index);
        assert_eq!(read.objects, 1);
        assert_eq!(read.problems.len(), 1, "{read:?}");
        assert!(read.problems[0].contains("bad.yaml"), "{read:?}");
        let found = index.check(&ObjectKey::new("x", "y"), &["a.example.com".to_owned()]);
        assert_eq!(found.conflicts[0].owner, ObjectKey::new("default", "a"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_subdirectory_that_cannot_be_listed_keeps_its_hosts() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("team-b");
        std::fs::create_dir(&sub).unwrap();
        let manifest = |name: &str| {
            format!(
                "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: {name}}}\n\
                 spec: {{hosts: [{name}.example.com], routes: []}}\n"
            )
        };
        std::fs::write(dir.path().join("a.yaml"), manifest("a")).unwrap();
        std::fs::write(sub.join("b.yaml"), manifest("b")).unwrap();
        std::fs::write(dir.path().join("c.yaml"), manifest("c")).unwrap();
        let (index, mut store) = (HostIndex::new(), LastGood::new());
        assert_eq!(
            load_directory(dir.path(), &Limits::default(), &mut store, &index).objects,
            3
        );
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o000)).unwrap();
        let read = {
            let _unprivileged = aether_manifests::testing::WithoutFileCapabilities::enter();
            load_directory(dir.path(), &Limits::default(), &mut store, &index)
        };
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            (read.objects, read.stale.clone()),
            (3, vec![sub.join("b.yaml")]),
            "{read:?}"
        );
        assert!(read.problems[0].contains("cannot list"), "{read:?}");
        let found = index.check(&ObjectKey::new("x", "y"), &["b.example.com".to_owned()]);
        assert_eq!(found.conflicts[0].owner, ObjectKey::new("default", "b"));
    }

    /// A file set aside for changing is counted (the watcher sets
    /// `manifest_changing_files` from it) beside its logged problem, and
    /// keeps its hosts.
    #[test]
    fn a_file_set_aside_for_changing_is_counted_and_keeps_its_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("churn.yaml");
        let manifest = |route: &str| {
            format!(
                "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: churn}}\n\
                 spec: {{hosts: [churn.example.com], routes: [{{match: {{prefix: {route}}}, backend: {{service: s}}}}]}}\n"
            )
        };
        std::fs::write(&file, manifest("/a")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
        // Modified within the hour: changing; set aside at once.
        let limits = Limits {
            settle: Duration::from_secs(3600),
            max_settle_wait: Duration::ZERO,
            ..Limits::default()
        };
        let (index, mut store) = (HostIndex::new(), LastGood::without_waiting());
        let read = load_directory(dir.path(), &limits, &mut store, &index);
        assert_eq!((read.objects, read.changing), (1, 0), "{read:?}");
        std::fs::write(&file, manifest("/b")).unwrap();
        let read = load_directory(dir.path(), &limits, &mut store, &index);
        assert_eq!((read.objects, read.changing, read.stale.len()), (1, 1, 1), "{read:?}");
        assert!(read.problems[0].contains("set aside"), "{read:?}");
        let found = index.check(&ObjectKey::new("x", "y"), &["churn.example.com".to_owned()]);
        assert_eq!(found.conflicts[0].owner, ObjectKey::new("default", "churn"));
    }

    #[test]
    fn of_two_copies_of_an_object_the_first_in_path_order_is_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = |host: &str| {
            format!(
                "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {{name: a}}\n\
                 spec: {{hosts: [{host}], routes: []}}\n"
            )
        };
        std::fs::write(dir.path().join("a.yaml"), manifest("first.example.com")).unwrap();
        std::fs::write(dir.path().join("b.yaml"), manifest("second.example.com")).unwrap();
        let index = HostIndex::new();
        let read = load_directory(dir.path(), &Limits::default(), &mut LastGood::new(), &index);
        assert_eq!(read.objects, 1);
        assert!(
            read.problems[0].contains("b.yaml: document 0: VirtualHost default/a is also in"),
            "{read:?}"
        );
        let key = ObjectKey::new("x", "y");
        assert_eq!(index.check(&key, &["first.example.com".to_owned()]).conflicts.len(), 1);
        assert!(
            index
                .check(&key, &["second.example.com".to_owned()])
                .conflicts
                .is_empty()
        );
    }
}
