//! The objects of every kind, with what the API server adds to each
//! (`uid`, `resourceVersion`, `generation`, `creationTimestamp`) and the
//! history of changes the watches are served from.
//!
//! `resourceVersion` is one counter over all kinds, as etcd's revision is.
//! `generation` starts at 1 and is bumped by a change outside `metadata`
//! and `status`. A write that changes nothing is no write: no new version,
//! no watch event, as in Kubernetes.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use super::fields::{Owners, merge};
use super::resource::{ApiError, Resource};
use super::select::Selector;

/// How many changes are kept for watches; a watch from before them gets 410 Gone.
const HISTORY: usize = 100_000;

/// An object's address: its kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub resource: Resource,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub(crate) fn new(resource: Resource, namespace: &str, name: &str) -> Self {
        Self {
            resource,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// What a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The main resource: a kind with a status subresource keeps its status.
    Main,
    /// The status subresource: only `status` changes.
    Status,
    /// Everything (the test API's writes).
    Whole,
}

/// Who creates an object: a client gets the server's metadata; a test may
/// set `creationTimestamp`, `generation` and `status` itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Client,
    Test,
}

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One change, at the `resourceVersion` it made.
#[derive(Debug)]
pub(crate) struct Change {
    pub version: u64,
    pub resource: Resource,
    pub namespace: String,
    pub change: ChangeType,
    /// The object before (modified and deleted ones).
    pub old: Option<Arc<Value>>,
    /// The object after (for a deletion, as it was, at the deletion's version).
    pub new: Arc<Value>,
}

struct Entry {
    object: Value,
    owners: Owners,
}

/// Every object and the recent changes.
pub(crate) struct Store {
    objects: BTreeMap<Key, Entry>,
    history: VecDeque<Change>,
    version: u64,
    /// The newest version dropped from `history`.
    compacted: u64,
    /// Counts objects ever created: uids and generated names.
    created: u64,
}

impl Store {
    pub(crate) fn new() -> Self {
        Self {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            // "0" means "any version" to clients, so real versions start above it.
            version: 1,
            compacted: 0,
            created: 0,
        }
    }

    /// The newest `resourceVersion`.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    pub(crate) fn get(&self, key: &Key) -> Result<&Value, ApiError> {
        self.objects
            .get(key)
            .map(|entry| &entry.object)
            .ok_or_else(|| ApiError::not_found(key.resource, &key.name))
    }

    /// The objects of `resource` in `namespace` (all when `None`) that
    /// `selector` selects, by namespace and name.
    pub(crate) fn list<'a>(
        &'a self,
        resource: Resource,
        namespace: Option<&'a str>,
        selector: &'a Selector,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        self.objects
            .iter()
            .filter(move |(key, entry)| {
                key.resource == resource
                    && namespace.is_none_or(|namespace| key.namespace == namespace)
                    && selector.matches(&entry.object)
            })
            .map(|(key, entry)| (key, &entry.object))
    }

    /// The managers owning fields of the object at `key`.
    pub(crate) fn managers(&self, key: &Key) -> Vec<String> {
        self.objects.get(key).map_or_else(Vec::new, |entry| {
            entry.owners.managers().into_iter().map(str::to_owned).collect()
        })
    }

    /// Creates `object` in `namespace` (its name, or one made from `generateName`).
    pub(crate) fn create(
        &mut self,
        resource: Resource,
        namespace: &str,
        mut object: Value,
        manager: &str,
        source: Source,
    ) -> Result<Value, ApiError> {
        check_type(resource, &object)?;
        object["apiVersion"] = json!(resource.api_version());
        object["kind"] = json!(resource.kind());
        let metadata = &object["metadata"];
        if metadata["namespace"].as_str().is_some_and(|ns| ns != namespace) {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({}) does not match the namespace of the request ({namespace})",
                metadata["namespace"]
            )));
        }
        self.created += 1;
        let name = match (metadata["name"].as_str(), metadata["generateName"].as_str()) {
            (Some(name), _) if !name.is_empty() => name.to_owned(),
            (_, Some(prefix)) if !prefix.is_empty() => format!("{prefix}{:05x}", self.created),
            _ => return Err(ApiError::bad_request("name or generateName is required")),
        };
        check_name(&name)?;
        let key = Key::new(resource, namespace, &name);
        if self.objects.contains_key(&key) {
            let mut error = ApiError::not_found(resource, &name);
            error.code = 409;
            error.reason = "AlreadyExists";
            error.message = error.message.replace("not found", "already exists");
            return Err(error);
        }
        if source == Source::Client && resource.has_status() {
            object.as_object_mut().map(|map| map.remove("status"));
        }
        self.version += 1;
        let uid = format!("00000000-0000-4000-8000-{:012x}", self.created);
        let meta = &mut object["metadata"];
        let keep = |meta: &Value, field: &str| source == Source::Test && !meta[field].is_null();
        if !keep(meta, "creationTimestamp") {
            meta["creationTimestamp"] = json!(now());
        }
        if !keep(meta, "generation") {
            meta["generation"] = json!(1);
        }
        meta["name"] = json!(name);
        meta["namespace"] = json!(namespace);
        meta["uid"] = json!(uid);
        meta["resourceVersion"] = json!(self.version.to_string());
        if let Some(meta) = meta.as_object_mut() {
            meta.remove("generateName");
            meta.remove("managedFields");
        }
        let mut owners = Owners::default();
        owners.updated(None, &object, manager);
        self.record(ChangeType::Added, &key, None, &object);
        self.objects.insert(
            key,
            Entry {
                object: object.clone(),
                owners,
            },
        );
        Ok(object)
    }

    /// Replaces the object at `key` with `proposed` (what `target` lets change).
    pub(crate) fn update(
        &mut self,
        key: &Key,
        proposed: Value,
        manager: &str,
        target: Target,
    ) -> Result<Value, ApiError> {
        check_type(key.resource, &proposed)?;
        let old = self.get(key)?;
        let new = settle(key.resource, old, proposed, target)?;
        Ok(self.commit(key, new, |owners, old, new| owners.updated(Some(old), new, manager)))
    }

    /// A JSON merge patch (or a strategic one, taken as a merge patch) of the object at `key`.
    pub(crate) fn merge_patch(
        &mut self,
        key: &Key,
        patch: &Value,
        manager: &str,
        target: Target,
    ) -> Result<Value, ApiError> {
        if !patch.is_object() {
            return Err(ApiError::bad_request("a merge patch must be a JSON object"));
        }
        let old = self.get(key)?;
        let mut proposed = old.clone();
        merge(&mut proposed, patch);
        check_type(key.resource, &proposed)?;
        let new = settle(key.resource, old, proposed, target)?;
        Ok(self.commit(key, new, |owners, old, new| owners.updated(Some(old), new, manager)))
    }

    /// A server-side apply of `patch` by `manager`: creates the object if
    /// missing; otherwise 409 Conflict if it would change a field another
    /// manager owns, unless `force`. Returns the object and whether it was created.
    pub(crate) fn apply(
        &mut self,
        key: &Key,
        patch: Value,
        manager: &str,
        force: bool,
        target: Target,
    ) -> Result<(Value, bool), ApiError> {
        check_type(key.resource, &patch)?;
        if patch["metadata"]["name"].as_str().is_some_and(|name| name != key.name) {
            return Err(ApiError::bad_request(
                "the name of the object does not match the name in the URL",
            ));
        }
        let Some(entry) = self.objects.get(key) else {
            if target == Target::Status {
                return Err(ApiError::not_found(key.resource, &key.name));
            }
            let mut object = json!({"metadata": {"name": key.name}});
            merge(&mut object, &patch);
            let created = self.create(key.resource, &key.namespace, object, manager, Source::Client)?;
            if let Some(entry) = self.objects.get_mut(key) {
                entry.owners = Owners::default();
                entry.owners.applied(None, &patch, manager, &created);
            }
            return Ok((created, true));
        };
        let old = &entry.object;
        let conflicts = entry.owners.conflicts(old, &patch, manager);
        if !force && !conflicts.is_empty() {
            let message = format!(
                "Apply failed with {} conflict{}: {}",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                conflicts.join(", ")
            );
            return Err(ApiError::new(409, "Conflict", message));
        }
        let mut proposed = old.clone();
        merge(&mut proposed, &patch);
        let new = settle(key.resource, old, proposed, target)?;
        let object = self.commit(key, new, |owners, old, new| {
            owners.applied(Some(old), &patch, manager, new)
        });
        Ok((object, false))
    }

    /// Deletes the object at `key`; returns it as it was, at the deletion's version.
    pub(crate) fn delete(&mut self, key: &Key) -> Result<Value, ApiError> {
        let entry = self
            .objects
            .remove(key)
            .ok_or_else(|| ApiError::not_found(key.resource, &key.name))?;
        self.version += 1;
        let mut gone = entry.object.clone();
        gone["metadata"]["resourceVersion"] = json!(self.version.to_string());
        self.record(ChangeType::Deleted, key, Some(entry.object), &gone);
        Ok(gone)
    }

    /// The changes after `version`, oldest first; 410 Expired if some are no longer kept.
    pub(crate) fn changes_after(&self, version: u64) -> Result<impl Iterator<Item = &Change>, ApiError> {
        if version < self.compacted {
            return Err(ApiError::new(
                410,
                "Expired",
                format!("too old resource version: {version} ({})", self.compacted + 1),
            ));
        }
        let start = self.history.partition_point(|change| change.version <= version);
        Ok(self.history.range(start..))
    }

    /// Stores `new` at `key` as a new version, unless it is the object as stored.
    fn commit(&mut self, key: &Key, mut new: Value, own: impl FnOnce(&mut Owners, &Value, &Value)) -> Value {
        let Some(entry) = self.objects.get_mut(key) else {
            return new;
        };
        if new == entry.object {
            return new;
        }
        self.version += 1;
        new["metadata"]["resourceVersion"] = json!(self.version.to_string());
        own(&mut entry.owners, &entry.object, &new);
        let old = std::mem::replace(&mut entry.object, new.clone());
        self.record(ChangeType::Modified, key, Some(old), &new);
        new
    }

    fn record(&mut self, change: ChangeType, key: &Key, old: Option<Value>, new: &Value) {
        self.history.push_back(Change {
            version: self.version,
            resource: key.resource,
            namespace: key.namespace.clone(),
            change,
            old: old.map(Arc::new),
            new: Arc::new(new.clone()),
        });
        while self.history.len() > HISTORY {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.version;
            }
        }
    }
}

/// The object `proposed` makes of `old` when only `target` may change:
/// the server's metadata kept, `generation` bumped by a change outside
/// `metadata` and `status`, and 409 Conflict if `proposed` names another
/// `resourceVersion` than the stored one (optimistic concurrency).
fn settle(resource: Resource, old: &Value, proposed: Value, target: Target) -> Result<Value, ApiError> {
    let asked = proposed["metadata"]["resourceVersion"].as_str().unwrap_or_default();
    if !asked.is_empty() && asked != old["metadata"]["resourceVersion"] {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                resource.plural(),
                old["metadata"]["name"].as_str().unwrap_or_default()
            ),
        ));
    }
    let mut new = match target {
        Target::Status => {
            let mut new = old.clone();
            set_or_remove(&mut new, "status", proposed.get("status"));
            new
        }
        Target::Main if resource.has_status() => {
            let mut new = proposed;
            set_or_remove(&mut new, "status", old.get("status"));
            new
        }
        Target::Main | Target::Whole => proposed,
    };
    for field in ["apiVersion", "kind"] {
        new[field] = old[field].clone();
    }
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "generation",
        "resourceVersion",
    ] {
        new["metadata"][field] = old["metadata"][field].clone();
    }
    if let Some(meta) = new["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    let content = |object: &Value| {
        let mut object = object.clone();
        if let Some(map) = object.as_object_mut() {
            map.remove("metadata");
            map.remove("status");
        }
        object
    };
    if content(&new) != content(old) {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(generation + 1);
    }
    Ok(new)
}

fn set_or_remove(object: &mut Value, field: &str, value: Option<&Value>) {
    match (object.as_object_mut(), value) {
        (Some(map), Some(value)) => {
            map.insert(field.to_owned(), value.clone());
        }
        (Some(map), None) => {
            map.remove(field);
        }
        (None, _) => {}
    }
}

/// 400 unless `object` is a JSON object of `resource`'s type (sets the type if missing).
fn check_type(resource: Resource, object: &Value) -> Result<(), ApiError> {
    if !object.is_object() || !(object["metadata"].is_object() || object["metadata"].is_null()) {
        return Err(ApiError::bad_request(
            "the body must be a JSON object with an object metadata",
        ));
    }
    let matches = |field: &str, expected: &str| object[field].is_null() || object[field] == expected;
    if !matches("apiVersion", &resource.api_version()) || !matches("kind", resource.kind()) {
        return Err(ApiError::bad_request(format!(
            "the body is a {} {}, not a {} {}",
            object["apiVersion"],
            object["kind"],
            resource.api_version(),
            resource.kind()
        )));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), ApiError> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if valid {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!("invalid name {name:?}")))
    }
}

/// Now, to the second, as Kubernetes writes its timestamps.
fn now() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).map_or_else(|_| now.to_string(), |t| t.to_string())
}
