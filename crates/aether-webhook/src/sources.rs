//! What feeds the host index: the cluster (a kube-runtime reflector) or a
//! manifest directory (local mode, polled).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aether_api::config::v1::VirtualHost;
use aether_manifests::objects::VirtualHostObject;
use aether_manifests::{self as manifests, Limits};
use futures_util::StreamExt;
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event, watcher};
use kube::runtime::{WatchStreamExt, reflector};
use kube::{Api, Client};
use serde_json::Value;

use crate::index::{HostIndex, ObjectKey};

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

/// Applies watcher events to the index. A (re-)list is gathered aside and
/// swapped in whole at `InitDone`, so objects deleted while the watch was
/// down disappear, and lookups meanwhile see the previous full list.
#[derive(Default)]
pub struct ClusterFeed {
    relist: Option<HashMap<ObjectKey, Vec<String>>>,
}

impl ClusterFeed {
    /// Applies one event; true when the index holds a complete list.
    pub fn apply(&mut self, event: &Event<DynamicObject>, index: &HostIndex) -> bool {
        match event {
            Event::Init => self.relist = Some(HashMap::new()),
            Event::InitApply(object) => {
                self.relist
                    .get_or_insert_with(HashMap::new)
                    .insert(key_of(object), hosts_of(object));
            }
            Event::InitDone => {
                index.replace_all(self.relist.take().unwrap_or_default());
                return true;
            }
            Event::Apply(object) => index.upsert(key_of(object), hosts_of(object)),
            Event::Delete(object) => {
                index.remove(&key_of(object));
            }
        }
        false
    }
}

/// Cluster mode: a reflector on every VirtualHost in the cluster feeds the
/// index; `ready` is set after the first full list. Runs until the watch
/// stream ends (it retries with backoff, so only on shutdown).
pub async fn watch_cluster(client: Client, index: Arc<HostIndex>, ready: Arc<AtomicBool>) {
    let resource = ApiResource::erase::<VirtualHost>(&());
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    // The reflector's store is the cache of record; the index is derived
    // from the same events.
    let writer = reflector::store::Writer::new(resource);
    let stream = reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
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

/// Reads every VirtualHost under `dir` into `index` (replacing it). Files or
/// documents that cannot be read are logged and skipped; the rest load.
/// Returns (objects, problems).
pub fn load_directory(dir: &Path, index: &HostIndex) -> (usize, Vec<String>) {
    let (files, errors) = manifests::files(&[dir.to_path_buf()]);
    let mut problems: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let mut objects = HashMap::new();
    let limits = Limits::default();
    for file in files {
        match manifests::read(&file, &limits) {
            Ok(documents) => {
                for document in documents {
                    match VirtualHostObject::decode(&document) {
                        Ok(object) => {
                            objects.insert(object.key(), object.spec.hosts);
                        }
                        Err(e) => problems.push(format!("{}[{}]: {e}", file.display(), document.index)),
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    let count = objects.len();
    index.replace_all(objects);
    (count, problems)
}

/// The default local-mode poll interval.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Local mode: reads `dir` now, then every `interval` re-reads it when a
/// manifest file was added, removed or changed (size or mtime). Polling
/// needs no inotify and behaves the same on every filesystem; a change is
/// seen within one interval. `ready` is set after the first read.
pub async fn watch_directory(dir: PathBuf, interval: Duration, index: Arc<HostIndex>, ready: Arc<AtomicBool>) {
    let mut last: Option<manifests::Stamp> = None;
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let (dir_, index_) = (dir.clone(), index.clone());
        let previous = last.clone();
        let read = tokio::task::spawn_blocking(move || {
            let stamp = manifests::stamp(std::slice::from_ref(&dir_));
            if previous.as_ref() == Some(&stamp) {
                return None;
            }
            let (count, problems) = load_directory(&dir_, &index_);
            Some((stamp, count, problems))
        })
        .await;
        match read {
            Ok(Some((stamp, count, problems))) => {
                for problem in &problems {
                    tracing::warn!("{problem}");
                }
                tracing::info!(objects = count, dir = %dir.display(), "host index loaded");
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
        let (count, problems) = load_directory(dir.path(), &index);
        assert_eq!(count, 1);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("bad.yaml"), "{problems:?}");
        let found = index.check(&ObjectKey::new("x", "y"), &["a.example.com".to_owned()]);
        assert_eq!(found.conflicts[0].owner, ObjectKey::new("default", "a"));
    }
}
