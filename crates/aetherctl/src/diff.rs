//! `aetherctl diff`: what a change of manifests moves at the edge, per
//! host, with requests whose outcome changes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use aether_explain::diff::{HostDiff, RouteChange, Side, diff};
use aether_manifests::Limits;
use aether_projection::VirtualHostObject;

use crate::project::{Projected, load_and_project};
use crate::report::{write_errors, write_skipped};
use crate::{EXIT_ERROR, Output};

/// Nothing the edge serves changes.
pub const EXIT_SAME: u8 = 0;
/// Something does.
pub const EXIT_DIFFERENT: u8 = 1;

/// Where the old manifests come from.
pub enum Old {
    /// Files or directories.
    Paths(Vec<PathBuf>),
    /// The new paths as committed at this git revision.
    Revision(String),
}

/// Projects the old and the new manifests and writes what changes.
/// Returns [`EXIT_SAME`], [`EXIT_DIFFERENT`] or [`EXIT_ERROR`].
pub fn run(
    old: Old,
    new: &[PathBuf],
    output: Output,
    limits: &Limits,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    // The checkout of a revision is kept until the old side is read.
    let (_checkout, old_paths) = match old {
        Old::Paths(paths) => (None, paths),
        Old::Revision(revision) => match at_revision(&revision, new) {
            Ok((dir, paths)) => (Some(dir), paths),
            Err(message) => {
                writeln!(err, "error: {message}")?;
                return Ok(EXIT_ERROR);
            }
        },
    };
    let Some(old) = side(&old_paths, limits, err)? else {
        return Ok(EXIT_ERROR);
    };
    let Some(new) = side(new, limits, err)? else {
        return Ok(EXIT_ERROR);
    };
    let hosts = diff(Side::new(&old.0.snapshot, &old.1), Side::new(&new.0.snapshot, &new.1));
    match output {
        Output::Text => write_text(&hosts, out)?,
        Output::Json => {
            serde_json::to_writer_pretty(&mut *out, &hosts)?;
            writeln!(out)?;
        }
        Output::Yaml => out.write_all(serde_saphyr::to_string(&hosts).map_err(io::Error::other)?.as_bytes())?,
    }
    Ok(if hosts.is_empty() { EXIT_SAME } else { EXIT_DIFFERENT })
}

/// One side read and projected, or `None` with its errors written.
fn side(
    paths: &[PathBuf],
    limits: &Limits,
    err: &mut dyn Write,
) -> io::Result<Option<(Projected, Vec<VirtualHostObject>)>> {
    let (projected, skipped) = load_and_project(paths, limits);
    write_skipped(&skipped, err)?;
    match projected {
        Ok(projected) => {
            let objects = projected.objects.iter().map(|loaded| loaded.object.clone()).collect();
            Ok(Some((projected, objects)))
        }
        Err(errors) => write_errors(&errors, err).map(|()| None),
    }
}

/// Refuses a revision git could read as something else: empty, or
/// starting with `-` (an option: `--output=FILE` would have `git show`
/// write FILE). Checked before git runs; every git call also puts the
/// revision after `--end-of-options`.
fn check_revision(revision: &str) -> Result<(), String> {
    if revision.is_empty() || revision.starts_with('-') {
        return Err(format!(
            "--against {revision:?}: not a git revision (a revision is a commit, branch or tag name such as HEAD or main~1; it never starts with `-` and is not empty)"
        ));
    }
    Ok(())
}

/// The manifest files under `paths` as committed at `revision`, written
/// into a temporary directory. Git runs in each path's own directory (its
/// parent, for a file), so the repository is the one holding the path.
fn at_revision(revision: &str, paths: &[PathBuf]) -> Result<(tempfile::TempDir, Vec<PathBuf>), String> {
    check_revision(revision)?;
    let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    // `git -C DIR SUBCOMMAND OPTIONS... --end-of-options ARGS...`: whatever
    // a revision or file name holds, git reads no option after the marker
    // (git 2.24 or later).
    let git = |cwd: &Path, subcommand: &str, options: &[&str], args: &[&str]| -> Result<Vec<u8>, String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(cwd)
            .arg(subcommand)
            .args(options)
            .arg("--end-of-options")
            .args(args)
            .output()
            .map_err(|e| format!("running git: {e}"))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(format!(
                "git {subcommand} {} (in {}): {}",
                options.iter().chain(args).copied().collect::<Vec<_>>().join(" "),
                cwd.display(),
                stderr.trim()
            ))
        }
    };
    let mut old_paths = Vec::new();
    for (at, path) in paths.iter().enumerate() {
        let (cwd, spec) = if path.is_dir() {
            (path.clone(), ".".to_owned())
        } else {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let name = path.file_name().and_then(|n| n.to_str());
            let name = name.ok_or_else(|| format!("{}: not a file name in UTF-8", path.display()))?;
            (parent.to_owned(), name.to_owned())
        };
        let listed = git(&cwd, "ls-tree", &["-r", "--name-only"], &[revision, "--", &spec])?;
        let listed = String::from_utf8(listed).map_err(|_| format!("{}: a file name not in UTF-8", path.display()))?;
        let side = dir.path().join(at.to_string());
        for file in listed.lines().filter(|file| is_manifest(Path::new(file))) {
            let text = git(&cwd, "show", &[], &[&format!("{revision}:./{file}")])?;
            let target = side.join(file);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&target, text).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        // A path absent at the revision holds no objects there.
        let old = side.join(&spec);
        if old.exists() {
            old_paths.push(old);
        }
    }
    Ok((dir, old_paths))
}

fn is_manifest(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
}

fn write_text(hosts: &[HostDiff], out: &mut dyn Write) -> io::Result<()> {
    if hosts.is_empty() {
        return writeln!(out, "no host changes");
    }
    for host in hosts {
        match (&host.old_owner, &host.new_owner) {
            (Some(old), Some(new)) if old == new => writeln!(out, "{} ({new})", host.host)?,
            (Some(old), Some(new)) => writeln!(out, "{}: changes owner, {old} -> {new}", host.host)?,
            (None, Some(new)) => writeln!(out, "{}: now served by {new}", host.host)?,
            (Some(old), None) => writeln!(out, "{}: no longer served (was {old})", host.host)?,
            (None, None) => writeln!(out, "{}", host.host)?,
        }
        for change in &host.routes {
            match change {
                RouteChange::Added { index, path } => writeln!(out, "  + routes[{index}] {path}")?,
                RouteChange::Removed { index, path } => writeln!(out, "  - routes[{index}] {path} (its old index)")?,
                RouteChange::Changed { index, path, what } => {
                    writeln!(out, "  ~ routes[{index}] {path}: {} changed", what.join(", "))?
                }
                RouteChange::Reordered {
                    index,
                    path,
                    old_place,
                    new_place,
                } => writeln!(
                    out,
                    "  ^ routes[{index}] {path}: tried {} instead of {} among the routes kept",
                    ordinal(*new_place),
                    ordinal(*old_place)
                )?,
            }
        }
        for witness in &host.witnesses {
            writeln!(out, "  {}", witness.request)?;
            for (name, value) in &witness.request.headers {
                writeln!(out, "      {name}: {value}")?;
            }
            writeln!(out, "    before: {}", witness.old)?;
            writeln!(out, "    after:  {}", witness.new)?;
        }
    }
    Ok(())
}

fn ordinal(place: usize) -> String {
    let n = place + 1;
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
