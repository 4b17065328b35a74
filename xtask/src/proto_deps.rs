//! Proto dependencies that are not our code, materialized from pinned crates.
//!
//! `buf/validate/validate.proto` ships inside `prost-protovalidate-types`
//! (the same version the runtime validator uses, pinned by Cargo.lock). It is
//! copied into `target/proto-deps/`, which protoc and the buf workspace read
//! and git ignores, so the file is never pasted into the repository.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

/// Where the materialized dependencies live, relative to the workspace root.
pub const DIR: &str = "target/proto-deps";

const PACKAGE: &str = "prost-protovalidate-types";
const FILE: &str = "buf/validate/validate.proto";

/// Copies the dependency protos into [`DIR`] and returns that directory.
pub fn materialize(root: &Path) -> Result<PathBuf> {
    let source = pinned_crate_dir(root, PACKAGE)?.join("proto").join(FILE);
    let text = std::fs::read(&source).with_context(|| format!("reading {}", source.display()))?;

    let dir = root.join(DIR);
    let target = dir.join(FILE);
    // Rewrite only on change, so buf and protoc see stable timestamps.
    if std::fs::read(&target).ok().as_deref() != Some(text.as_slice()) {
        std::fs::create_dir_all(target.parent().expect("FILE has a directory"))?;
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(dir)
}

/// The source directory of `package` as Cargo.lock pins it (in the cargo
/// registry), found through `cargo metadata`.
pub fn pinned_crate_dir(root: &Path, package: &str) -> Result<PathBuf> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .exec()
        .with_context(|| format!("running `cargo metadata` to find the pinned {package}"))?;
    let found = metadata
        .packages
        .iter()
        .find(|p| p.name.as_str() == package)
        .ok_or_else(|| anyhow!("{package} is not in the dependency graph"))?;
    let dir = found
        .manifest_path
        .parent()
        .ok_or_else(|| anyhow!("{package} has no manifest directory"))?;
    Ok(dir.as_std_path().to_owned())
}
