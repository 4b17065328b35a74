//! `cargo xtask breaking`: `buf breaking` (WIRE_JSON, see buf.yaml) of api/
//! against an earlier commit.
//!
//! The earlier commit's buf workspace is extracted with `git archive` into a
//! temporary directory, with the materialized buf.validate beside it, because
//! buf's `.git#ref=` input cannot see the ignored target/proto-deps folder.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{proto_deps, pyenv};

pub fn run(root: &Path, against: &str) -> Result<()> {
    let bin = pyenv::ensure(root)?;
    proto_deps::materialize(root, &proto_deps::PinnedCrates::load(root)?)?;

    let resolved = Command::new("git")
        .current_dir(root)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{against}^{{commit}}"))
        .output()?;
    if !resolved.status.success() {
        println!(
            "note: no commit {against} to compare against (first commit, or a shallow clone): buf breaking skipped"
        );
        return Ok(());
    }
    let commit = String::from_utf8(resolved.stdout)?.trim().to_owned();
    let listed = Command::new("git")
        .current_dir(root)
        .args(["ls-tree", "--name-only", &commit, "api", "buf.yaml"])
        .output()?;
    if String::from_utf8_lossy(&listed.stdout).lines().count() < 2 {
        println!("note: {against} ({commit:.12}) has no api/ and buf.yaml yet: nothing to break, buf breaking skipped");
        return Ok(());
    }

    let old = tempfile::tempdir()?;
    let archive = Command::new("git")
        .current_dir(root)
        .args(["archive", "--format=tar", &commit, "api", "buf.yaml"])
        .output()
        .context("git archive")?;
    if !archive.status.success() {
        bail!("git archive {commit}: {}", String::from_utf8_lossy(&archive.stderr));
    }
    let mut untar = Command::new("tar")
        .current_dir(old.path())
        .arg("-x")
        .stdin(std::process::Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(untar.stdin.as_mut().expect("piped"), &archive.stdout)?;
    drop(untar.stdin.take());
    if !untar.wait()?.success() {
        bail!("unpacking {commit}'s api/");
    }
    copy_dir(&root.join(proto_deps::DIR), &old.path().join(proto_deps::DIR))?;

    println!("buf breaking against {against} ({commit:.12})");
    let status = Command::new(bin.join("buf"))
        .current_dir(root)
        .args(["breaking", "--against"])
        .arg(old.path())
        .status()
        .context("running buf")?;
    if !status.success() {
        bail!("buf breaking: api/ breaks the wire or JSON contract of {against}");
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
