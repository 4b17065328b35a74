//! The seed inputs of the decoding targets, made from the repository's
//! manifests.

use aether_api::config::v1::VirtualHostSpec;
use aether_api::object::{Reading, VirtualHostObject};
use aether_api::reflect::to_proto_json;
use prost::Message;

use crate::admission::admission_review_of;

/// One seed input: the target it is for, a file name, and its bytes.
#[derive(Debug, Clone)]
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The seeds for the decoding targets, made from the repository's manifests
/// (`examples/*.yaml` and the fixtures under `fixtures/`, both found from the
/// workspace root `root`): each file as it is for the manifest reader, all of
/// them in one multi-document file, and each decoded spec in binary, in
/// Kubernetes JSON and in proto3 JSON. The structured validate target takes
/// no seeds: its inputs are not in any of these forms.
pub fn seeds(root: &std::path::Path) -> std::io::Result<Vec<Seed>> {
    use aether_manifests::{Limits, parse};

    let mut files = Vec::new();
    for dir in [
        "examples",
        "crates/aether-api/tests/fixtures/valid",
        "crates/aether-api/tests/fixtures/invalid",
    ] {
        for entry in std::fs::read_dir(root.join(dir))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();

    let mut seeds = Vec::new();
    let mut all = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path)?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("manifest");
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let name = format!("{dir}-{stem}");
        all.extend_from_slice(b"---\n");
        all.extend_from_slice(&bytes);
        let documents = parse(path, &bytes, &Limits::default())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        seeds.push(Seed {
            target: "manifest_yaml",
            name: format!("{name}.yaml"),
            bytes,
        });
        for document in &documents {
            let object = VirtualHostObject::from_value(document.value.clone(), Reading::Strict).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display()))
            })?;
            let spec: &VirtualHostSpec = &object.spec;
            seeds.push(Seed {
                target: "admission_review",
                name: format!("{name}.json"),
                bytes: serde_json::to_vec(&admission_review_of(&document.value)).expect("JSON writes"),
            });
            seeds.push(Seed {
                target: "binary_spec",
                name: format!("{name}.binpb"),
                bytes: spec.encode_to_vec(),
            });
            seeds.push(Seed {
                target: "kubernetes_json",
                name: format!("{name}.json"),
                bytes: serde_json::to_vec(spec).expect("a decoded spec writes"),
            });
            seeds.push(Seed {
                target: "proto_json",
                name: format!("{name}.json"),
                bytes: to_proto_json(spec).into_bytes(),
            });
            for (i, regex) in regexes(spec).into_iter().enumerate() {
                seeds.push(Seed {
                    target: "re2_guard",
                    name: format!("{name}-{i}.re"),
                    bytes: regex.as_bytes().to_vec(),
                });
            }
        }
    }
    seeds.push(Seed {
        target: "manifest_yaml",
        name: "all-documents.yaml".into(),
        bytes: all,
    });
    // Expressions of every construct the guard reads or refuses, as its
    // comparison with RE2 generates them.
    let mut expressions = aether_edge_limits::re2::testing::Expressions::new(16);
    for i in 0..64 {
        seeds.push(Seed {
            target: "re2_guard",
            name: format!("generated-{i}.re"),
            bytes: expressions.next_expression().into_bytes(),
        });
    }
    // And, for the comparison with RE2 itself, expressions at its limits.
    let mut expressions = aether_edge_limits::re2::testing::Expressions::near_limits(31);
    for i in 0..64 {
        seeds.push(Seed {
            target: "re2_parity",
            name: format!("generated-{i}.re"),
            bytes: expressions.next_expression().into_bytes(),
        });
    }
    Ok(seeds)
}

/// Every regular expression of `spec`: the fields the proto marks `re2`.
fn regexes(spec: &VirtualHostSpec) -> Vec<&str> {
    use aether_api::regexes::Regexes;
    use aether_api::validate::{FieldPath, Validate};
    let mut regexes = Vec::new();
    spec.visit_regexes(&FieldPath::root(VirtualHostSpec::ROOT), &mut |_, regex| {
        regexes.push(regex)
    });
    regexes
}
