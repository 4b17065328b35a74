//! `cargo xtask breaking --against REV`: what a baseline (a commit, tag or
//! branch) promised that today's api/ must keep.
//!
//! 1. `buf breaking` (WIRE_JSON, see buf.yaml): wire and JSON names.
//! 2. The buf.validate rules ([`rules`]): no rule of an element the baseline
//!    had may tighten, unless [`ACKNOWLEDGED`] lists that very change.
//! 3. Stored objects: every valid fixture and example of the baseline must
//!    still be valid today, by all three judges (the Rust validator, the
//!    CRD judged offline, protovalidate), since objects like them are
//!    stored in clusters (`crates/aether-api/tests/api/stored_objects.rs`).
//!
//! The baseline's files are extracted with `git archive` into a temporary
//! directory, with the materialized buf.validate beside them, because buf's
//! `.git#ref=` input cannot see the ignored target/proto-deps folder.

pub mod rules;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::{descriptors, plan::Plan, proto_deps, pyenv};

/// The reviewed list of deliberate tightenings, relative to the root.
pub const ACKNOWLEDGED: &str = "api/acknowledged-tightenings.yaml";

/// Where the baseline's objects are (relative to the root), for the
/// stored-objects check.
const STORED_OBJECTS: [&str; 2] = ["crates/aether-api/tests/fixtures/valid", "examples"];

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
    let mut paths = vec!["api", "buf.yaml"];
    let listed = Command::new("git")
        .current_dir(root)
        .args(["ls-tree", "--name-only", &commit])
        .args(STORED_OBJECTS)
        .output()?;
    let present = String::from_utf8_lossy(&listed.stdout).into_owned();
    paths.extend(
        STORED_OBJECTS
            .iter()
            .filter(|path| present.lines().any(|line| line == **path)),
    );
    let archive = Command::new("git")
        .current_dir(root)
        .args(["archive", "--format=tar", &commit])
        .args(&paths)
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

    println!("buf.validate rules against {against} ({commit:.12})");
    let baseline = check_rules(root, old.path(), against)?;

    println!("stored objects: {against}'s valid fixtures and examples, judged by today's rules");
    let stored = old.path().join("stored");
    std::fs::create_dir_all(&stored)?;
    for path in STORED_OBJECTS {
        let from = old.path().join(path);
        if from.is_dir() {
            copy_dir(&from, &stored.join(path.replace('/', "_")))?;
        }
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "test",
            "--quiet",
            "--package",
            "aether-api",
            "--all-features",
            "--test",
            "api",
        ])
        .args(["--", "--nocapture", "stored_objects::"])
        .env("AETHER_STORED_OBJECTS", &stored)
        .env("AETHER_STORED_DESCRIPTORS", &baseline)
        .env("AETHER_PYTHON", bin.join("python"))
        .status()
        .context("running the stored-objects test")?;
    if !status.success() {
        bail!("objects valid at {against} are refused by today's rules (see the test's output above)");
    }
    Ok(())
}

/// The newest release tag (`v*`, by version order) that HEAD contains, if any.
pub fn latest_release(root: &Path) -> Result<Option<String>> {
    let output = Command::new("git")
        .current_dir(root)
        .args(["tag", "--list", "v*", "--merged", "HEAD", "--sort=-v:refname"])
        .output()
        .context("git tag")?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .map(str::to_owned))
}

/// Fails naming every tightened rule that [`ACKNOWLEDGED`] does not list.
/// Returns the baseline's descriptor set (edition 2024, as written), saved
/// in `baseline` for the stored-objects check.
fn check_rules(root: &Path, baseline: &Path, against: &str) -> Result<PathBuf> {
    let plan = Plan::load(root)?;
    let deps = root.join(proto_deps::DIR);
    let current = descriptors::compile(root, &plan.input_dirs, std::slice::from_ref(&deps))?;
    let old = descriptors::compile(baseline, &plan.input_dirs, &[baseline.join(proto_deps::DIR)])
        .with_context(|| format!("compiling {against}'s api/"))?;
    let acknowledged = Acknowledged::load(&root.join(ACKNOWLEDGED))?;
    let found = rules::tightenings(&old.proto3, &current.proto3, &current.own_files)?;
    let (known, unknown): (Vec<_>, Vec<_>) = found.into_iter().partition(|t| acknowledged.covers(t));
    for tightening in &known {
        println!("  acknowledged: {tightening}");
    }
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|t| format!("  {t}")).collect();
        bail!(
            "buf.validate rules tightened since {against}: objects stored under the old rules would be refused:\n{}\n\
             Loosen them back, or, if no stored object can break the new rule, list the change with the reason in {ACKNOWLEDGED}.",
            list.join("\n")
        );
    }
    let saved = baseline.join("baseline.binpb");
    std::fs::write(&saved, &old.editions)?;
    Ok(saved)
}

/// [`ACKNOWLEDGED`]: each entry one change exactly, so a later change of
/// the same rule is judged again.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Acknowledged {
    acknowledged: Vec<Acknowledgement>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Acknowledgement {
    element: String,
    rule: String,
    old: String,
    new: String,
    /// Why no stored object breaks: required, never read.
    #[allow(dead_code)]
    reason: String,
}

impl Acknowledged {
    fn load(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_saphyr::from_str(&text).with_context(|| format!("reading {}", path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }

    fn covers(&self, tightening: &rules::Tightening) -> bool {
        self.acknowledged.iter().any(|a| {
            a.element == tightening.element
                && a.rule == tightening.rule
                && a.old == tightening.old
                && a.new == tightening.new
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tightening(new: &str) -> rules::Tightening {
        rules::Tightening {
            element: "VirtualHostSpec.hosts".into(),
            rule: "repeated.max_items".into(),
            old: "16".into(),
            new: new.into(),
        }
    }

    #[test]
    fn an_acknowledgement_covers_that_change_only() {
        let acknowledged: Acknowledged = serde_saphyr::from_str(
            "acknowledged:\n  - {element: VirtualHostSpec.hosts, rule: repeated.max_items, old: \"16\", new: \"8\", reason: no object has more}\n",
        )
        .unwrap();
        assert!(acknowledged.covers(&tightening("8")));
        assert!(!acknowledged.covers(&tightening("4")));
    }

    #[test]
    fn an_acknowledgement_needs_a_reason() {
        let missing = serde_saphyr::from_str::<Acknowledged>(
            "acknowledged:\n  - {element: VirtualHostSpec.hosts, rule: repeated.max_items, old: \"16\", new: \"8\"}\n",
        );
        assert!(missing.is_err());
    }

    #[test]
    fn the_checked_in_list_reads() {
        Acknowledged::load(&crate::workspace_root().join(ACKNOWLEDGED)).unwrap();
    }
}
