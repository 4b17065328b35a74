//! From `.proto` sources to descriptor sets.
//!
//! protoc 36.2 (shipped by the pinned `protoc-bin-vendored` crate, so no
//! install step) compiles the edition-2024 sources; [`lowering`] turns the
//! result into the proto3 equivalent that prost, pbjson and prost-reflect read.

pub mod lowering;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The compiled API, in both forms, each with its imports.
pub struct Descriptors {
    /// As written: edition 2024. What buf and the Python runtimes read.
    pub editions: Vec<u8>,
    /// Lowered to proto3 (see [`lowering`]). What the Rust tooling reads.
    pub proto3: Vec<u8>,
    /// `proto3` with source info (comments), for the code generators only.
    pub proto3_with_docs: Vec<u8>,
    /// The names (as in the set) of the files compiled from the inputs, not imports.
    pub own_files: Vec<String>,
}

/// Compiles every `.proto` file under `input_dirs`, with `include_dirs` for imports.
pub fn compile(
    root: &Path,
    input_dirs: &[PathBuf],
    include_dirs: &[PathBuf],
) -> Result<Descriptors> {
    let mut files = Vec::new();
    for dir in input_dirs {
        collect_protos(&root.join(dir), &mut files)?;
    }
    if files.is_empty() {
        bail!("no .proto files under {input_dirs:?}");
    }
    files.sort();
    let mut own_files = Vec::new();
    for file in &files {
        let input = input_dirs
            .iter()
            .find_map(|dir| file.strip_prefix(root.join(dir)).ok())
            .expect("every file was found under an input directory");
        own_files.push(input.to_string_lossy().replace('\\', "/"));
    }

    let editions = run_protoc(root, input_dirs, include_dirs, &files, false)?;
    let with_docs = run_protoc(root, input_dirs, include_dirs, &files, true)?;
    Ok(Descriptors {
        proto3: lowering::lower(&editions)?,
        proto3_with_docs: lowering::lower(&with_docs)?,
        editions,
        own_files,
    })
}

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn run_protoc(
    root: &Path,
    input_dirs: &[PathBuf],
    include_dirs: &[PathBuf],
    files: &[PathBuf],
    source_info: bool,
) -> Result<Vec<u8>> {
    let protoc = protoc_bin_vendored::protoc_bin_path().context("finding the vendored protoc")?;
    let out = tempfile::NamedTempFile::new()?;
    let mut command = Command::new(&protoc);
    command.current_dir(root).arg("--include_imports");
    if source_info {
        command.arg("--include_source_info");
    }
    for dir in input_dirs.iter().chain(include_dirs) {
        command.arg("-I").arg(dir);
    }
    command.arg(format!("--descriptor_set_out={}", out.path().display()));
    // Relative paths, so protoc's messages read `api/aether/...:line:col`.
    command.args(files.iter().map(|f| f.strip_prefix(root).unwrap_or(f)));
    let output = command
        .output()
        .with_context(|| format!("running {}", protoc.display()))?;
    if !output.status.success() {
        bail!(
            "protoc failed to compile the API:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    Ok(std::fs::read(out.path())?)
}
