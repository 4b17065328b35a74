//! JSON merge patches and field ownership: what server-side apply needs
//! to refuse a second writer of a field another manager set.
//!
//! Ownership is kept per leaf field (a scalar, an array, or an empty
//! object), by manager name. An apply conflicts when it would change a
//! field some other manager owns; an update (create, replace, merge
//! patch) never conflicts and takes the fields it changes from their
//! owners. Two simplifications against the real server: one manager's
//! apply and update ownerships are not told apart, and a field left out
//! of a later apply is kept rather than removed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A field's path from the object's root.
pub(crate) type Path = Vec<String>;

/// RFC 7386: objects merge key by key, `null` removes a key, anything else replaces.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The owned leaves of `object`: everything but `apiVersion`, `kind` and
/// the server's metadata (only labels and annotations are anyone's).
pub(crate) fn leaves(object: &Value) -> Vec<(Path, &Value)> {
    let mut out = Vec::new();
    let Value::Object(map) = object else {
        return out;
    };
    for (key, value) in map {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                for owned in ["labels", "annotations"] {
                    if let Some(value) = value.get(owned) {
                        collect(value, vec!["metadata".into(), owned.into()], &mut out);
                    }
                }
            }
            _ => collect(value, vec![key.clone()], &mut out),
        }
    }
    out
}

fn collect<'a>(value: &'a Value, path: Path, out: &mut Vec<(Path, &'a Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let mut path = path.clone();
                path.push(key.clone());
                collect(child, path, out);
            }
        }
        _ => out.push((path, value)),
    }
}

/// The value at `path` in `object`, if there is one.
pub(crate) fn lookup<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |value, key| value.get(key))
}

/// Who owns which leaf of one object.
#[derive(Debug, Clone, Default)]
pub(crate) struct Owners(BTreeMap<Path, BTreeSet<String>>);

impl Owners {
    /// The fields an apply of `applied` by `manager` would take from
    /// others: those it changes that another manager owns, each with its
    /// owners, as `.spec.holderIdentity` is named in the server's message.
    pub(crate) fn conflicts(&self, current: &Value, applied: &Value, manager: &str) -> Vec<String> {
        let mut conflicts = Vec::new();
        for (path, value) in leaves(applied) {
            if lookup(current, &path) == Some(value) {
                continue;
            }
            let others: Vec<&String> = self
                .0
                .get(&path)
                .into_iter()
                .flatten()
                .filter(|owner| *owner != manager)
                .collect();
            for other in others {
                conflicts.push(format!("conflict with \"{other}\": .{}", path.join(".")));
            }
        }
        conflicts
    }

    /// Records an apply of `applied` by `manager` (already merged into `new`):
    /// it owns every field it named, alone where it changed the value.
    pub(crate) fn applied(&mut self, old: Option<&Value>, applied: &Value, manager: &str, new: &Value) {
        for (path, value) in leaves(applied) {
            let owners = self.0.entry(path.clone()).or_default();
            if old.and_then(|old| lookup(old, &path)) != Some(value) {
                owners.clear();
            }
            owners.insert(manager.to_owned());
        }
        self.prune(new);
    }

    /// Records an update by `manager` from `old` to `new`: it alone owns what it changed.
    pub(crate) fn updated(&mut self, old: Option<&Value>, new: &Value, manager: &str) {
        for (path, value) in leaves(new) {
            if old.and_then(|old| lookup(old, &path)) != Some(value) {
                self.0.insert(path, BTreeSet::from([manager.to_owned()]));
            }
        }
        self.prune(new);
    }

    /// Drops the fields `object` no longer has as leaves: nobody owns a
    /// removed field, and an empty object that got fields is no field.
    fn prune(&mut self, object: &Value) {
        self.0.retain(|path, owners| {
            let leaf = match lookup(object, path) {
                Some(Value::Object(map)) => map.is_empty(),
                Some(_) => true,
                None => false,
            };
            leaf && !owners.is_empty()
        });
    }

    /// The managers of any field, each once (`metadata.managedFields`' managers).
    pub(crate) fn managers(&self) -> BTreeSet<&str> {
        self.0.values().flatten().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_follows_rfc_7386() {
        let mut target = json!({"a": {"b": 1, "c": 2}, "d": [1, 2], "e": "x"});
        merge(
            &mut target,
            &json!({"a": {"b": null, "f": 3}, "d": [3], "g": {"h": null}}),
        );
        assert_eq!(target, json!({"a": {"c": 2, "f": 3}, "d": [3], "e": "x", "g": {}}));
    }

    #[test]
    fn an_apply_conflicts_only_over_another_managers_changed_field() {
        let lease = json!({"spec": {"holderIdentity": "a", "renewTime": "t1"}});
        let mut owners = Owners::default();
        owners.applied(None, &lease, "mgr-a", &lease);
        let taking = json!({"spec": {"holderIdentity": "b"}});
        assert_eq!(
            owners.conflicts(&lease, &taking, "mgr-b"),
            ["conflict with \"mgr-a\": .spec.holderIdentity"]
        );
        // The same value is shared, not taken; the owner itself never conflicts.
        assert!(
            owners
                .conflicts(&lease, &json!({"spec": {"holderIdentity": "a"}}), "mgr-b")
                .is_empty()
        );
        assert!(owners.conflicts(&lease, &taking, "mgr-a").is_empty());
        // Released by an update that removes the field: nobody owns it any more.
        let released = json!({"spec": {"renewTime": "t1"}});
        owners.updated(Some(&lease), &released, "mgr-a");
        assert!(owners.conflicts(&released, &taking, "mgr-b").is_empty());
        // An update takes what it changes: the old owner's apply now conflicts.
        let changed = json!({"spec": {"renewTime": "t2"}});
        owners.updated(Some(&released), &changed, "mgr-c");
        assert_eq!(
            owners.conflicts(&changed, &json!({"spec": {"renewTime": "t3"}}), "mgr-a"),
            ["conflict with \"mgr-c\": .spec.renewTime"]
        );
        assert_eq!(owners.managers(), BTreeSet::from(["mgr-c"]));
    }
}
