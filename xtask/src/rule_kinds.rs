//! The rule-kinds test API (`xtask/tests/proto`): a proto using every rule
//! kind the generators map. It is not part of the public API. `cargo xtask
//! codegen` generates it, with the same generators as `api/`, into the
//! test-only crate `xtask/tests/rule-kinds`, whose tests compare the three
//! judges (the Rust validator, the CRD offline, protovalidate) on it; `cargo
//! xtask codegen --check` checks it is current, as it checks `generated/`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::generators::crd::{self, Resource};
use crate::generators::{self, Context, Output};
use crate::proto_deps::PinnedCrates;

/// The test proto's directory, relative to the workspace root.
pub const PROTO_DIR: &str = "xtask/tests/proto";
/// Where its generated files go, relative to the workspace root.
pub const OUT_DIR: &str = "xtask/tests/rule-kinds/generated";

/// The test API's custom resource: a spec only.
pub const RESOURCE: Resource = Resource {
    group: "rulekinds.test.aether.io",
    version: "v1",
    kind: "RuleKinds",
    plural: "rulekinds",
    singular: "rulekinds",
    short_name: "rk",
    categories: &[],
    description: "",
    spec_message: "aether.rulekinds.v1.RuleKindsSpec",
    status_message: None,
    print_columns: &[],
};

/// Every generated file of the test API, in memory.
pub fn generate(root: &Path, pinned: PinnedCrates) -> Result<Vec<Output>> {
    let context = Context::load(root, &[PathBuf::from(PROTO_DIR)], pinned).context("the rule-kinds test API")?;
    let out = Path::new(OUT_DIR);
    let mut files = Vec::new();
    let parts = [
        (
            "descriptors",
            generators::descriptor_set::generate(&context.descriptors),
        ),
        ("rust", generators::prost::generate(&context.files)),
        (
            "rust",
            generators::serde::generate(&context.files, &context.descriptors.proto3),
        ),
        ("rust", generators::validate::generate(&context.api)),
        ("crds", crd::generate_resource(&context.api, &RESOURCE)),
    ];
    for (dir, generated) in parts {
        for (name, contents) in generated.with_context(|| format!("the rule-kinds test API, {dir}"))? {
            files.push(Output {
                path: out.join(dir).join(name),
                contents: retitled(contents),
            });
        }
    }
    Ok(files)
}

/// The generators' "generated from api/" first line, naming this proto.
fn retitled(contents: Vec<u8>) -> Vec<u8> {
    const FROM: &[u8] = b"from api/ (see buf.gen.yaml)";
    const TO: &[u8] = b"from xtask/tests/proto (see xtask/src/rule_kinds.rs)";
    let first_line = contents.iter().position(|b| *b == b'\n').unwrap_or(contents.len());
    match contents[..first_line].windows(FROM.len()).position(|w| w == FROM) {
        Some(at) => [&contents[..at], TO, &contents[at + FROM.len()..]].concat(),
        None => contents,
    }
}
