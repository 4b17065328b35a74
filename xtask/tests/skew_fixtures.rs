//! The version-skew fixtures (`crates/aether-api/tests/skew/`) are what
//! they claim: each manifest is a valid object of the newer proto beside
//! them (`newer.proto`, compiled as codegen compiles `api/`), decoded
//! strictly (no unknown field, every enum value defined) and judged valid
//! by protovalidate on that proto's rules; and each one said to use the
//! newer proto's additions is not an object of today's proto, so the skew
//! tests that read them test skew.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use heck::ToShoutySnakeCase;
use prost::Message;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, Kind, MessageDescriptor};
use serde_json::Value;
use xtask::{descriptors, proto_deps, workspace_root};

const SKEW: &str = "crates/aether-api/tests/skew";
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

/// The descriptors (edition 2024 as written, and lowered) of the protos
/// under `dir` (relative to the workspace root).
fn compile(dir: &str) -> descriptors::Descriptors {
    let root = workspace_root();
    let deps = proto_deps::materialize(&root, &proto_deps::PinnedCrates::load(&root).unwrap()).unwrap();
    descriptors::compile(&root, &[PathBuf::from(dir)], &[deps]).unwrap()
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
    let root = workspace_root();
    let set = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(set.path(), descriptors).unwrap();
    let python = std::env::var_os("AETHER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/pyenv/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: run `cargo xtask pyenv`, or point AETHER_PYTHON at a Python with protovalidate",
        python.display()
    );
    let mut child = Command::new(&python)
        .arg(root.join("crates/aether-api/tests/reference/protovalidate_judge.py"))
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
    let newer = compile(SKEW);
    let message = spec_descriptor(&newer.proto3);
    let mut binaries = Vec::new();
    for (file, spec) in manifests() {
        let decoded = decode_strictly(&spec, &message)
            .unwrap_or_else(|err| panic!("{SKEW}/{file} is not an object of newer.proto: {err}"));
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
            "{SKEW}/{file} breaks newer.proto's rules: {answer}"
        );
    }
}

#[test]
fn the_manifests_using_newer_additions_are_not_objects_of_todays_proto() {
    let today = spec_descriptor(&compile("api").proto3);
    let newer = spec_descriptor(&compile(SKEW).proto3);
    for (file, spec) in manifests() {
        let plain = file.ends_with("-plain.yaml");
        let read_today = decode_strictly(&spec, &today);
        assert_eq!(read_today.is_ok(), plain, "{SKEW}/{file} today: {read_today:?}");
        assert!(decode_strictly(&spec, &newer).is_ok(), "{file}");
    }
}

#[test]
fn a_manifest_drifting_from_the_newer_proto_is_caught() {
    let newer = spec_descriptor(&compile(SKEW).proto3);
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
