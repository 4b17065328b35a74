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

/// The source directories (in the cargo registry) of the packages Cargo.lock
/// pins, from one `cargo metadata` run: codegen reads files out of two of
/// them, and one run costs about 0.2 s.
#[derive(Clone)]
pub struct PinnedCrates {
    dirs: Vec<(String, PathBuf)>,
}

impl PinnedCrates {
    /// Runs `cargo metadata` on the workspace at `root`.
    pub fn load(root: &Path) -> Result<Self> {
        let metadata = cargo_metadata::MetadataCommand::new()
            .manifest_path(root.join("Cargo.toml"))
            .exec()
            .context("running `cargo metadata` to find the pinned dependency sources")?;
        let dirs = metadata
            .packages
            .iter()
            .filter_map(|p| {
                let dir = p.manifest_path.parent()?;
                Some((p.name.to_string(), dir.as_std_path().to_owned()))
            })
            .collect();
        Ok(Self { dirs })
    }

    /// The source directory of `package`.
    pub fn dir(&self, package: &str) -> Result<&Path> {
        self.dirs
            .iter()
            .find(|(name, _)| name == package)
            .map(|(_, dir)| dir.as_path())
            .ok_or_else(|| anyhow!("{package} is not in the dependency graph"))
    }
}

/// Copies the dependency protos into [`DIR`] and returns that directory.
pub fn materialize(root: &Path, pinned: &PinnedCrates) -> Result<PathBuf> {
    let source = pinned.dir(PACKAGE)?.join("proto").join(FILE);
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
