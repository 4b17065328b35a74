//! Objects stored under earlier rules stay valid under today's.
//!
//! The objects: every VirtualHost of the manifests under
//! `$AETHER_STORED_OBJECTS` (`cargo xtask breaking` extracts a baseline's
//! valid fixtures and examples there) that the baseline's own rules accept,
//! judged by protovalidate on the baseline's descriptors
//! (`$AETHER_STORED_DESCRIPTORS`). Each must pass today's three judges: the
//! Rust validator, the CRD offline, and protovalidate on today's
//! descriptors. Without those variables the baseline is today: the valid
//! fixtures and the examples, judged by today's rules twice, which keeps
//! this test honest between releases.

use std::path::{Path, PathBuf};

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;
use prost::Message;

use crate::common;

const SPEC: &str = "aether.config.v1.VirtualHostSpec";

/// Every `*.yaml` file under `dir`, recursively, sorted.
fn manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            manifests(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "yaml") {
            out.push(path);
        }
    }
}

/// (where, spec) of every VirtualHost in the manifests under `dirs`.
fn objects(dirs: &[PathBuf]) -> Vec<(String, VirtualHostSpec)> {
    let mut files = Vec::new();
    for dir in dirs {
        manifests(dir, &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (index, document) in text.split("\n---").enumerate() {
            let document: serde_json::Value = serde_saphyr::from_str(document)
                .unwrap_or_else(|err| panic!("{} document {index}: {err}", file.display()));
            if document["kind"] != "VirtualHost" {
                continue;
            }
            let spec = serde_json::from_value(document["spec"].clone()).unwrap_or_else(|err| {
                panic!(
                    "{} document {index}: no longer decodes with today's types: {err}",
                    file.display()
                )
            });
            found.push((format!("{} document {index}", file.display()), spec));
        }
    }
    found
}

#[test]
fn objects_the_baseline_accepted_pass_todays_three_judges() {
    let root = aether_judges::workspace_root();
    let from_baseline = std::env::var_os("AETHER_STORED_OBJECTS").is_some();
    let (dirs, baseline_rules) = match std::env::var_os("AETHER_STORED_OBJECTS") {
        Some(dir) => {
            let descriptors = std::env::var_os("AETHER_STORED_DESCRIPTORS")
                .expect("AETHER_STORED_DESCRIPTORS names the baseline's descriptor set");
            (vec![PathBuf::from(dir)], PathBuf::from(descriptors))
        }
        None => (
            vec![
                root.join("crates/aether-api/tests/fixtures/valid"),
                root.join("examples"),
            ],
            root.join("generated/descriptors/aether.binpb"),
        ),
    };
    let objects = objects(&dirs);
    let binaries: Vec<(&str, Vec<u8>)> = objects.iter().map(|(_, spec)| (SPEC, spec.encode_to_vec())).collect();
    let then = aether_judges::protovalidate::judge_with(&baseline_rules, &binaries);
    let now = aether_judges::protovalidate::judge(&binaries);
    let crd = common::crd_judge("spec");
    let mut stored = 0;
    let mut refused = Vec::new();
    for (((name, spec), then), now) in objects.iter().zip(then).zip(now) {
        if !then.is_empty() {
            continue; // The baseline refused it too: never stored.
        }
        stored += 1;
        let mut problems: Vec<String> = Vec::new();
        if let Err(violations) = spec.validate() {
            problems.extend(
                violations
                    .iter()
                    .map(|v| format!("Rust validator: {} {}", v.field_path, v.rule_id)),
            );
        }
        problems.extend(
            now.iter()
                .map(|(path, rule, _)| format!("protovalidate: {path} {rule}")),
        );
        problems.extend(
            crd.problems(&serde_json::to_value(spec).unwrap())
                .into_iter()
                .map(|problem| format!("CRD: {problem}")),
        );
        if !problems.is_empty() {
            refused.push(format!("{name}:\n    {}", problems.join("\n    ")));
        }
    }
    // A baseline older than the fixtures holds none; today's tree holds many.
    assert!(
        from_baseline || stored >= 20,
        "only {stored} stored objects found under {dirs:?}"
    );
    println!("{stored} objects the baseline accepted, judged by today's rules");
    assert!(
        refused.is_empty(),
        "objects valid under the baseline's rules are refused today:\n{}",
        refused.join("\n")
    );
}
