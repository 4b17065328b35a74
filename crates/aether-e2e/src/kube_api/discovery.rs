//! Discovery, the legacy JSON form: `/api`, `/api/v1`, `/apis`, `/apis/GROUP`
//! and `/apis/GROUP/VERSION`, all from [`Resource`], so that `kubectl` can map
//! `virtualhost` (or `vh`) to its URL.
//!
//! Clients that ask for aggregated discovery first (`kubectl` does, with
//! `as=APIGroupDiscoveryList` in `Accept`) get these plain documents too:
//! client-go reads the answer's `Content-Type` and falls back to the legacy
//! form, as it does against an API server older than 1.26.

use serde_json::{Value, json};

use super::resource::Resource;

/// The discovery document at `path`, or `None` if `path` is not one.
pub(crate) fn document(path: &str) -> Option<Value> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        ["api"] => Some(json!({
            "kind": "APIVersions",
            "versions": versions("")?,
            // Required by the schema; empty says "use the address you used".
            "serverAddressByClientCIDRs": [],
        })),
        ["apis"] => Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups()})),
        ["apis", name] => {
            let mut group = groups().into_iter().find(|group| group["name"] == *name)?;
            group["kind"] = json!("APIGroup");
            group["apiVersion"] = json!("v1");
            Some(group)
        }
        ["api", version] => resources("", version),
        ["apis", group, version] if !group.is_empty() => resources(group, version),
        _ => None,
    }
}

/// The versions served of `group`, in [`Resource::ALL`]'s order; `None` if none is.
fn versions(group: &str) -> Option<Vec<&'static str>> {
    let mut versions = Vec::new();
    for resource in Resource::ALL.into_iter().filter(|r| r.group() == group) {
        if !versions.contains(&resource.version()) {
            versions.push(resource.version());
        }
    }
    (!versions.is_empty()).then_some(versions)
}

/// The named groups, each with its versions, the first one preferred.
fn groups() -> Vec<Value> {
    let mut names: Vec<&str> = Vec::new();
    for resource in Resource::ALL.into_iter().filter(|r| !r.group().is_empty()) {
        if !names.contains(&resource.group()) {
            names.push(resource.group());
        }
    }
    names
        .into_iter()
        .map(|name| {
            let versions: Vec<Value> = versions(name)
                .unwrap_or_default()
                .into_iter()
                .map(|version| json!({"groupVersion": format!("{name}/{version}"), "version": version}))
                .collect();
            json!({"name": name, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect()
}

/// The `APIResourceList` of `group`/`version`; `None` if nothing is served there.
fn resources(group: &str, version: &str) -> Option<Value> {
    let served: Vec<Resource> = Resource::ALL
        .into_iter()
        .filter(|r| r.group() == group && r.version() == version)
        .collect();
    let first = served.first()?;
    let mut resources = Vec::new();
    for resource in served.iter().copied() {
        let mut entry = json!({
            "name": resource.plural(), "singularName": resource.singular(), "namespaced": true,
            "kind": resource.kind(), "verbs": Resource::VERBS,
        });
        if !resource.short_names().is_empty() {
            entry["shortNames"] = json!(resource.short_names());
        }
        resources.push(entry);
        if resource.has_status() {
            resources.push(json!({
                "name": format!("{}/status", resource.plural()), "singularName": "", "namespaced": true,
                "kind": resource.kind(), "verbs": Resource::STATUS_VERBS,
            }));
        }
    }
    Some(json!({
        "kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": first.api_version(), "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_where_discovery_says_it_is() {
        let groups = document("/apis").unwrap()["groups"].clone();
        let mut group_versions = vec![json!("v1")];
        assert_eq!(document("/api").unwrap()["versions"], json!(["v1"]));
        for group in groups.as_array().unwrap() {
            for version in group["versions"].as_array().unwrap() {
                group_versions.push(version["groupVersion"].clone());
            }
        }
        let mut found = Vec::new();
        for group_version in &group_versions {
            let group_version = group_version.as_str().unwrap();
            let path = match group_version {
                "v1" => "/api/v1".to_owned(),
                named => format!("/apis/{named}"),
            };
            let list = document(&path).unwrap();
            assert_eq!(list["groupVersion"], group_version);
            for entry in list["resources"].as_array().unwrap() {
                let name = entry["name"].as_str().unwrap();
                let (group, version) = group_version.rsplit_once('/').unwrap_or(("", group_version));
                match name.split_once('/') {
                    Some((plural, "status")) => assert!(Resource::find(group, version, plural).unwrap().has_status()),
                    _ => found.push(Resource::find(group, version, name).unwrap()),
                }
            }
        }
        let mut all = Resource::ALL.to_vec();
        found.sort();
        all.sort();
        assert_eq!(found, all);
    }

    #[test]
    fn what_is_not_served_is_not_a_document() {
        for path in [
            "/",
            "/apis/config.aether.io/v2",
            "/apis/apps/v1",
            "/api/v2",
            "/apis//v1",
            "/apis/apps",
        ] {
            assert_eq!(document(path), None, "{path}");
        }
    }
}
