//! The phase 2 fields (matching and route actions) are additive for readers
//! built before them:
//! the `aether-api` crate of the last main commit without them
//! ([`BASELINE`]) is extracted from git, built (offline, with that commit's
//! `Cargo.lock`) with a small reader program, and handed every example
//! object in the Kubernetes form and in binary. The new fields are those
//! today's descriptors have and the baseline's lack (both compiled from
//! their protos as codegen compiles `api/`). What it must do is what
//! `docs/design.md` ("Evolving the API", "Reading a newer writer's
//! objects") promises an older reader:
//!
//! - the strict reader (the serde impls) refuses an object using a new
//!   field, naming the field; the same object without its new fields reads;
//! - the tolerant reader (`aether_api::tolerant::spec`) reads it, names each
//!   new field it set aside (`spec.routes[0].match.regex: unknown field`),
//!   and what it keeps is the object without them;
//! - binary decoding of the newer writer's bytes succeeds and gives the same
//!   known parts;
//! - the known parts judged by the old rules: valid, unless a route's path
//!   is the new `regex` member of the required path oneof (then invalid at
//!   that route's match) or its destination is new, `backends` or
//!   `redirect` (then invalid at its required `backend`): readers call
//!   such routes unsupported and leave them out.
//!
//! Objects without new fields read the same in every way. Two controls,
//! objects the old reader must not read (a value of the wrong JSON type, a
//! field number reused with another wire type), show the reader reports
//! what it cannot read, so a change that broke old readers fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aether_api::config::v1::VirtualHostSpec;
use prost::Message;
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use serde_json::{Value, json};
use xtask::{descriptors, proto_deps, workspace_root};

/// The last main commit whose proto has none of the phase 2 matching fields
/// (the first parent of the merge that added them).
const BASELINE: &str = "132734d93548a9cd4576ef0c1ae85430a8c7dc08";

const SPEC: &str = "aether.config.v1.VirtualHostSpec";

/// The fields added since the baseline, in the Kubernetes form (JSON
/// names), by message (full name).
type NewFields = BTreeMap<String, BTreeSet<String>>;

/// The reader built against the baseline's crate: one JSON array of cases
/// on stdin, one JSON array of what each reading gave on stdout.
const READER_MAIN: &str = r#"
use std::io::Read;

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate;
use prost::Message;
use serde_json::{Value, json};

fn judged(spec: &VirtualHostSpec) -> Value {
    let violations: Vec<String> = match spec.validate() {
        Ok(()) => Vec::new(),
        Err(violations) => violations.iter().map(|v| v.field_path.clone()).collect(),
    };
    json!({"spec": serde_json::to_value(spec).unwrap(), "violations": violations})
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&input).unwrap();
    let mut out = Vec::new();
    for case in &cases {
        let strict = match serde_json::from_value::<VirtualHostSpec>(case["spec"].clone()) {
            Ok(spec) => json!({"ok": judged(&spec)}),
            Err(e) => json!({"error": e.to_string()}),
        };
        let tolerant = match aether_api::tolerant::spec(&case["spec"]) {
            Ok(read) => {
                let unknown: Vec<String> = read.unknown.iter().map(|u| u.to_string()).collect();
                json!({"ok": judged(&read.value), "unknown": unknown})
            }
            Err(e) => json!({"error": e.to_string()}),
        };
        let bytes: Vec<u8> = serde_json::from_value(case["binary"].clone()).unwrap();
        let binary = match VirtualHostSpec::decode(bytes.as_slice()) {
            Ok(spec) => json!({"ok": judged(&spec)}),
            Err(e) => json!({"error": e.to_string()}),
        };
        out.push(json!({"strict": strict, "tolerant": tolerant, "binary": binary}));
    }
    println!("{}", serde_json::to_string(&out).unwrap());
}
"#;

const READER_MANIFEST: &str = r#"[package]
name = "aether-previous-reader"
publish = false
edition.workspace = true
version.workspace = true

[dependencies]
aether-api = { workspace = true, features = ["serde", "tolerant", "validate"] }
prost.workspace = true
serde_json.workspace = true
"#;

fn git(root: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("git").current_dir(root).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The baseline's tree in `dir` (its workspace, whose `crates/*` members
/// take the reader in).
fn extract_baseline(dir: &Path) {
    let root = workspace_root();
    let archive = git(&root, &["archive", "--format=tar", BASELINE]);
    let mut tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(dir)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &archive.stdout).unwrap();
    assert!(tar.wait().unwrap().success(), "tar -x of the baseline");
}

/// The reader added to the baseline's workspace in `dir`, built; returns
/// its path.
fn build_reader(dir: &Path) -> PathBuf {
    let root = workspace_root();
    let reader = dir.join("crates/aether-previous-reader");
    std::fs::create_dir_all(reader.join("src")).unwrap();
    std::fs::write(reader.join("Cargo.toml"), READER_MANIFEST).unwrap();
    std::fs::write(reader.join("src/main.rs"), READER_MAIN).unwrap();

    // The shared target directory when there is one (the baseline's
    // dependencies are mostly today's, already built), else this
    // workspace's. Offline: only what the baseline's Cargo.lock pins.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // What the baseline pins and this machine's cache lacks (a crate today's
    // lock no longer has) is fetched first; without a registry the build
    // below still runs on what the cache holds.
    let _ = Command::new(&cargo)
        .current_dir(dir)
        .args(["fetch", "--quiet"])
        .status();
    let status = Command::new(cargo)
        .current_dir(dir)
        .args(["build", "--offline", "--quiet", "--package", "aether-previous-reader"])
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(status.success(), "building the reader against {BASELINE}'s aether-api");
    target.join("debug/aether-previous-reader")
}

/// Every example object (`examples/*.yaml` but the invalid one) by file,
/// with its spec in the Kubernetes form.
fn examples() -> Vec<(String, Value)> {
    let dir = workspace_root().join("examples");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|e| e != "yaml") || name == "invalid.yaml" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for object in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
            if object["kind"] == "VirtualHost" {
                found.push((format!("{name} {}", object["metadata"]["name"]), object["spec"].clone()));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The spec's descriptor in the lowered descriptors of the protos under
/// `root/api`, compiled as codegen compiles `api/` (with today's
/// buf.validate).
fn spec_message(root: &Path) -> MessageDescriptor {
    let workspace = workspace_root();
    let deps = proto_deps::materialize(&workspace, &proto_deps::PinnedCrates::load(&workspace).unwrap()).unwrap();
    let compiled = descriptors::compile(root, &[PathBuf::from("api")], &[deps]).unwrap();
    DescriptorPool::decode(compiled.proto3.as_slice())
        .unwrap()
        .get_message_by_name(SPEC)
        .unwrap()
}

/// The fields of today's messages that the baseline's message of the same
/// name lacks. A message the baseline lacks is left out: an old field
/// cannot have changed to its type, so only new fields reach it.
fn new_fields_since(then: &MessageDescriptor, now: &MessageDescriptor) -> NewFields {
    let then = then.parent_pool();
    let mut found = NewFields::new();
    for message in now.parent_pool().all_messages() {
        let Some(old) = then.get_message_by_name(message.full_name()) else {
            continue;
        };
        let added: BTreeSet<String> = message
            .fields()
            .filter(|field| old.get_field_by_name(field.name()).is_none())
            .map(|field| field.json_name().to_owned())
            .collect();
        if !added.is_empty() {
            found.insert(message.full_name().to_owned(), added);
        }
    }
    found
}

/// Takes the new fields out of `value` (a `message` at `path`), recording
/// each one's path in `used` and its message and name in `kinds`.
fn take_new(
    value: &mut Value,
    message: &MessageDescriptor,
    path: &str,
    new: &NewFields,
    used: &mut BTreeSet<String>,
    kinds: &mut BTreeSet<(String, String)>,
) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    for name in new.get(message.full_name()).into_iter().flatten() {
        if object.remove(name).is_some() {
            used.insert(format!("{path}.{name}"));
            kinds.insert((message.full_name().to_owned(), name.clone()));
        }
    }
    for (key, item) in object.iter_mut() {
        let Some(field) = message.get_field_by_json_name(key) else {
            continue;
        };
        // A map's entries are not walked: a new field inside one would go
        // unfound, and the check that every new field is used would fail.
        let Kind::Message(inner) = field.kind() else {
            continue;
        };
        match item {
            Value::Array(items) if field.is_list() => {
                for (i, item) in items.iter_mut().enumerate() {
                    take_new(item, &inner, &format!("{path}.{key}[{i}]"), new, used, kinds);
                }
            }
            _ if !field.is_map() => take_new(item, &inner, &format!("{path}.{key}"), new, used, kinds),
            _ => {}
        }
    }
}

/// The paths of the phase 2 fields `spec` uses, and `spec` without them.
fn new_fields(
    spec: &Value,
    message: &MessageDescriptor,
    new: &NewFields,
    kinds: &mut BTreeSet<(String, String)>,
) -> (BTreeSet<String>, Value) {
    let mut used = BTreeSet::new();
    let mut known = spec.clone();
    take_new(&mut known, message, "spec", new, &mut used, kinds);
    (used, known)
}

/// Runs the reader on `cases` (`{"spec", "binary"}` each).
fn read(reader: &Path, cases: &[Value]) -> Vec<Value> {
    let mut child = Command::new(reader)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(cases).unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &input).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the reader failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn binary(spec: &Value) -> Value {
    let spec: VirtualHostSpec = serde_json::from_value(spec.clone()).unwrap();
    json!(spec.encode_to_vec())
}

#[test]
fn the_previous_crate_reads_phase_2_objects_as_the_skew_rules_promise() {
    let dir = tempfile::tempdir().unwrap();
    extract_baseline(dir.path());
    let today = spec_message(&workspace_root());
    let new = new_fields_since(&spec_message(dir.path()), &today);
    assert!(!new.is_empty(), "nothing added since {BASELINE}");
    let reader = build_reader(dir.path());

    let examples = examples();
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    let mut all_used = BTreeSet::new();
    for (name, spec) in &examples {
        let (used, known) = new_fields(spec, &today, &new, &mut all_used);
        // Read twice: as written, and without its new fields (what the old
        // reader must make of it).
        cases.push(json!({"spec": spec, "binary": binary(spec)}));
        cases.push(json!({"spec": known, "binary": binary(&known)}));
        expected.push((name, used));
    }
    // Every new field is in some example, so each is read here.
    for (message, names) in &new {
        for field in names {
            assert!(
                all_used.contains(&(message.clone(), field.clone())),
                "no example uses {message}.{field}"
            );
        }
    }

    let results = read(&reader, &cases);
    assert_eq!(results.len(), cases.len());
    for ((name, used), pair) in expected.iter().zip(results.chunks(2)) {
        let (full, known) = (&pair[0], &pair[1]);
        // Without its new fields, the object is one the old crate reads.
        let old = &known["strict"]["ok"];
        assert!(
            old.is_object(),
            "{name}: the old reader refuses it without its new fields: {known}"
        );
        assert_eq!(known["tolerant"]["ok"], *old, "{name}: {known}");
        assert_eq!(known["tolerant"]["unknown"], json!([]), "{name}: {known}");

        // Strict: refused naming a new field, exactly when there is one.
        if used.is_empty() {
            assert_eq!(full["strict"]["ok"], *old, "{name}: {full}");
        } else {
            let error = full["strict"]["error"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {full}"));
            assert!(
                error.contains("unknown field")
                    && used
                        .iter()
                        .any(|path| error.contains(&format!("`{}`", path.rsplit('.').next().unwrap()))),
                "{name}: the strict reader's error names no new field it uses ({used:?}): {error}"
            );
        }
        // Tolerant: the known parts, and each new field named.
        let unknown: BTreeSet<String> = full["tolerant"]["unknown"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: the tolerant reader refuses it: {full}"))
            .iter()
            .map(|u| u.as_str().unwrap().to_owned())
            .collect();
        let named: BTreeSet<String> = used.iter().map(|path| format!("{path}: unknown field")).collect();
        assert_eq!(unknown, named, "{name}: what the tolerant reader set aside");
        assert_eq!(full["tolerant"]["ok"], *old, "{name}: the tolerant reader kept {full}");
        // Binary: the newer writer's bytes decode to the same known parts.
        assert_eq!(full["binary"]["ok"], *old, "{name}: binary {full}");
        assert_eq!(known["binary"]["ok"], *old, "{name}: binary {known}");

        // The old rules: valid, but where a route's path is a regex (the
        // required path oneof has no member the old crate knows) and where
        // a route's destination is new (`backends` or `redirect`: the old
        // crate requires `backend`).
        let refused_at: BTreeSet<String> = used
            .iter()
            .filter_map(|path| {
                path.strip_suffix(".regex").map(str::to_owned).or_else(|| {
                    let route = path
                        .strip_suffix(".backends")
                        .or_else(|| path.strip_suffix(".redirect"))?;
                    Some(format!("{route}.backend"))
                })
            })
            .collect();
        let violations: Vec<&str> = old["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let at: BTreeSet<String> = violations
            .iter()
            .filter_map(|v| refused_at.iter().find(|r| v.starts_with(r.as_str())).cloned())
            .collect();
        assert_eq!(at, refused_at, "{name}: old violations {violations:?}");
        assert!(
            violations
                .iter()
                .all(|v| refused_at.iter().any(|r| v.starts_with(r.as_str()))),
            "{name}: the old rules refuse more than its regex routes and new destinations: {violations:?}"
        );
    }

    // Controls: objects no reader of any version reads. The reader reports
    // them, so an incompatible change to the examples' forms fails above.
    let (_, spec) = examples
        .iter()
        .find(|(name, _)| name.starts_with("match-regex"))
        .unwrap();
    let mut wrong_type = spec.clone();
    wrong_type["hosts"] = json!("users.example.org");
    let mut bytes: Vec<u8> = serde_json::from_value(binary(spec)).unwrap();
    // Field 1 (hosts, a string) written as a varint.
    bytes.extend_from_slice(&[0x08, 0x01]);
    let controls = read(&reader, &[json!({"spec": wrong_type, "binary": bytes})]);
    assert!(controls[0]["strict"]["error"].is_string(), "{}", controls[0]);
    assert!(controls[0]["tolerant"]["error"].is_string(), "{}", controls[0]);
    assert!(controls[0]["binary"]["error"].is_string(), "{}", controls[0]);
}
