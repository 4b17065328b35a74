//! The version-skew fixtures (`crates/aether-api/tests/skew/`) are what
//! they claim: the newer proto they are written against is today's proto
//! with the additions of `additions.txt` inserted (built here, into a
//! scratch directory), and `buf breaking` (buf.yaml's rules: wire and JSON)
//! finds that it only adds; each manifest is a valid object of that proto
//! (compiled as codegen compiles `api/`), decoded strictly (no unknown
//! field, every enum value defined) and judged valid by protovalidate on
//! its rules; and each one said to use the newer proto's additions is not
//! an object of today's proto, so the skew tests that read them test skew.

mod additions;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use additions::Addition;
use heck::ToShoutySnakeCase;
use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, Kind, MessageDescriptor};
use serde_json::Value;
use xtask::{descriptors, proto_deps, workspace_root};

use crate::common::{self, PROTO};

const SKEW: &str = "crates/aether-api/tests/skew";
const ADDITIONS: &str = "crates/aether-api/tests/skew/additions.txt";
const SPEC: &str = "aether.config.v1.VirtualHostSpec";

/// The skew manifests, by file name, with their specs.
fn manifests() -> Vec<(String, Value)> {
    let dir = workspace_root().join(SKEW);
    let mut found: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            let object: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(object["kind"], "VirtualHost", "{}", path.display());
            assert_eq!(object["apiVersion"], "config.aether.io/v1", "{}", path.display());
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, object["spec"].clone())
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(found.len() >= 4, "{found:?}");
    found
}

fn pinned() -> &'static proto_deps::PinnedCrates {
    static PINNED: OnceLock<proto_deps::PinnedCrates> = OnceLock::new();
    PINNED.get_or_init(|| proto_deps::PinnedCrates::load(&workspace_root()).unwrap())
}

/// The descriptors (edition 2024 as written, and lowered) of the protos
/// under `root/api`, with buf.validate materialized under `root`.
fn compile(root: &Path) -> descriptors::Descriptors {
    let deps = proto_deps::materialize(root, pinned()).unwrap();
    descriptors::compile(root, &[PathBuf::from("api")], &[deps]).unwrap()
}

fn todays_text() -> String {
    std::fs::read_to_string(workspace_root().join(PROTO)).unwrap()
}

fn additions() -> Vec<Addition> {
    let text = std::fs::read_to_string(workspace_root().join(ADDITIONS)).unwrap();
    additions::parse(&text).unwrap_or_else(|err| panic!("{ADDITIONS}: {err}"))
}

/// The newer proto's text: today's with the additions.
fn newer_text() -> String {
    additions::apply(&todays_text(), &additions()).unwrap_or_else(|err| panic!("{ADDITIONS}: {err}"))
}

/// A scratch workspace whose api/ holds `proto` in place of today's proto,
/// with buf.yaml and buf.validate beside it, as in the repository.
fn scratch_workspace(proto: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(workspace_root().join("buf.yaml"), dir.path().join("buf.yaml")).unwrap();
    common::copy_api(dir.path(), |_| proto.to_owned());
    proto_deps::materialize(dir.path(), pinned()).unwrap();
    dir
}

fn today() -> &'static descriptors::Descriptors {
    static TODAY: OnceLock<descriptors::Descriptors> = OnceLock::new();
    TODAY.get_or_init(|| compile(&workspace_root()))
}

fn newer() -> &'static descriptors::Descriptors {
    static NEWER: OnceLock<descriptors::Descriptors> = OnceLock::new();
    NEWER.get_or_init(|| compile(scratch_workspace(&newer_text()).path()))
}

/// A pinned tool of `cargo xtask pyenv`: beside `AETHER_PYTHON` when set.
fn pinned_tool(name: &str) -> PathBuf {
    let python = std::env::var_os("AETHER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/pyenv/bin/python"));
    let tool = python.with_file_name(name);
    assert!(
        tool.exists(),
        "{} is missing: run `cargo xtask pyenv`, or point AETHER_PYTHON at its venv's python",
        tool.display()
    );
    tool
}

/// What `buf breaking` reports of `newer` against `older` (each the text of
/// the proto), by buf.yaml's rules: `(rule, message)` each.
fn breaking(older: &str, newer: &str) -> Vec<(String, String)> {
    let (old, new) = (scratch_workspace(older), scratch_workspace(newer));
    let output = Command::new(pinned_tool("buf"))
        .current_dir(new.path())
        .args(["breaking", "--error-format=json", "--against"])
        .arg(old.path())
        .output()
        .unwrap();
    let reported: Vec<(String, String)> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).unwrap();
            (
                entry["type"].as_str().unwrap().to_owned(),
                entry["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // A proto that does not compile is this test's mistake, not a break.
    assert!(
        output.status.success() == reported.is_empty() && reported.iter().all(|(rule, _)| rule != "COMPILE"),
        "buf breaking: {reported:?} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    reported
}

fn spec_descriptor(proto3: &[u8]) -> MessageDescriptor {
    DescriptorPool::decode(proto3)
        .unwrap()
        .get_message_by_name(SPEC)
        .unwrap()
}

/// The Kubernetes form's short enum values (`VAULT`) in the proto3 JSON
/// form prost-reflect reads (`SECRET_PROVIDER_VAULT`); the rest as written.
fn proto_json(value: &Value, message: &MessageDescriptor) -> Value {
    let Value::Object(fields) = value else {
        return value.clone();
    };
    let mut out = serde_json::Map::new();
    for (name, field_value) in fields {
        let converted = match message.get_field_by_json_name(name) {
            None => field_value.clone(), // refused by the strict decode below
            Some(field) => {
                let convert = |item: &Value| match (field.kind(), item) {
                    (Kind::Enum(kind), Value::String(text)) if kind.get_value_by_name(text).is_none() => {
                        Value::String(format!("{}_{text}", kind.name().to_shouty_snake_case()))
                    }
                    (Kind::Message(inner), _) => proto_json(item, &inner),
                    _ => item.clone(),
                };
                match field_value {
                    Value::Array(items) if field.is_list() => Value::Array(items.iter().map(convert).collect()),
                    _ => convert(field_value),
                }
            }
        };
        out.insert(name.clone(), converted);
    }
    Value::Object(out)
}

/// The spec decoded strictly as `message`: every field known, every enum
/// value defined.
fn decode_strictly(spec: &Value, message: &MessageDescriptor) -> Result<DynamicMessage, String> {
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    DynamicMessage::deserialize_with_options(message.clone(), proto_json(spec, message), &options)
        .map_err(|err| err.to_string())
}

/// protovalidate's violations of each binary `message`, on `descriptors`
/// (edition 2024, with imports), through the reference judge the API's
/// tests use.
fn protovalidate(descriptors: &[u8], messages: &[Vec<u8>]) -> Vec<Value> {
    use base64::Engine as _;
    let set = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(set.path(), descriptors).unwrap();
    let mut child = Command::new(pinned_tool("python"))
        .arg(workspace_root().join("crates/aether-api/tests/reference/protovalidate_judge.py"))
        .arg("--descriptors")
        .arg(set.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = messages
        .iter()
        .map(|bytes| format!("{SPEC} {}\n", base64::engine::general_purpose::STANDARD.encode(bytes)))
        .collect();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the judge failed");
    let answers: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), messages.len());
    answers
}

#[test]
fn every_skew_manifest_is_a_valid_object_of_the_newer_proto() {
    let newer = newer();
    let message = spec_descriptor(&newer.proto3);
    let mut binaries = Vec::new();
    for (file, spec) in manifests() {
        let decoded = decode_strictly(&spec, &message)
            .unwrap_or_else(|err| panic!("{SKEW}/{file} is not an object of the newer proto: {err}"));
        binaries.push((file, decoded.encode_to_vec()));
    }
    let answers = protovalidate(
        &newer.editions,
        &binaries.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(),
    );
    for ((file, _), answer) in binaries.iter().zip(answers) {
        assert_eq!(
            answer["violations"],
            serde_json::json!([]),
            "{SKEW}/{file} breaks the newer proto's rules: {answer}"
        );
    }
}

#[test]
fn the_manifests_using_newer_additions_are_not_objects_of_todays_proto() {
    let today = spec_descriptor(&today().proto3);
    let newer = spec_descriptor(&newer().proto3);
    for (file, spec) in manifests() {
        let plain = file.ends_with("-plain.yaml");
        let read_today = decode_strictly(&spec, &today);
        assert_eq!(read_today.is_ok(), plain, "{SKEW}/{file} today: {read_today:?}");
        assert!(decode_strictly(&spec, &newer).is_ok(), "{file}");
    }
}

#[test]
fn a_manifest_drifting_from_the_newer_proto_is_caught() {
    let newer = spec_descriptor(&newer().proto3);
    let (_, spec) = manifests()
        .into_iter()
        .find(|(file, _)| file.ends_with("-new-enum-value.yaml"))
        .unwrap();
    let mut drifted = spec.clone();
    drifted["tls"]["provider"] = "HASHICORP".into();
    let err = decode_strictly(&drifted, &newer).unwrap_err();
    assert!(err.contains("HASHICORP"), "{err}");
    let mut drifted = spec;
    drifted["routes"][0]["retryBudget"] = 3.into();
    let err = decode_strictly(&drifted, &newer).unwrap_err();
    assert!(err.contains("retryBudget"), "{err}");
}

#[test]
fn the_newer_proto_only_adds_on_the_wire_and_in_json() {
    let reported = breaking(&todays_text(), &newer_text());
    assert_eq!(reported, [], "{ADDITIONS} changes what today's proto has");
}

#[test]
fn a_change_to_what_exists_is_reported_by_the_only_adds_check() {
    let today_text = todays_text();
    // Inserted only, yet it changes how the existing values read in JSON.
    let mut loosening = additions();
    let enum_block = loosening
        .iter()
        .find(|a| a.into[0].starts_with("enum "))
        .unwrap()
        .into
        .clone();
    let enum_name = enum_block[0].trim_start_matches("enum ").to_owned();
    loosening.push(Addition {
        into: enum_block,
        text: "option features.json_format = LEGACY_BEST_EFFORT;\n".into(),
    });
    let reported = breaking(&today_text, &additions::apply(&today_text, &loosening).unwrap());
    assert!(
        reported
            .iter()
            .any(|(_, message)| message.contains(&format!("\"{enum_name}\""))),
        "{enum_name}'s JSON format: {reported:?}"
    );

    // An existing field renumbered (wire) or renamed (JSON only).
    let newer_text = newer_text();
    let spec = spec_descriptor(&newer().proto3);
    let field = spec_descriptor(&today().proto3).fields().next().unwrap();
    let (name, number) = (field.name(), field.number());
    let written = format!(" {name} = {number}");
    assert_eq!(newer_text.matches(&written).count(), 1, "{written} in the newer proto");
    let unused = spec.fields().map(|f| f.number()).max().unwrap() + 1;
    for (change, changed) in [
        ("renumbered", format!(" {name} = {unused}")),
        ("renamed", format!(" {name}_renamed = {number}")),
    ] {
        let reported = breaking(&today_text, &newer_text.replacen(&written, &changed, 1));
        assert!(
            reported
                .iter()
                .any(|(_, message)| message.contains(&format!("\"{name}\""))),
            "{name} {change}: {reported:?}"
        );
    }
}
