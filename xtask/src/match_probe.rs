//! `cargo xtask match-probe`: proof that the compiler names every consumer
//! of a match field. In a scratch copy of the checkout, a field is added to
//! `RouteMatch` and codegen run; `cargo check` must then fail in each crate
//! of [`DECIDERS`], on its exhaustive destructuring of the match.
//!
//! A crate that fails hides its dependents from the compiler, so each
//! round takes rustc's own suggestion (`probe: _`) where it reported the
//! field missing, and checks again, until everything compiles; the crates
//! reported on the way are the ones that had to decide.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use cargo_metadata::Message;
use cargo_metadata::diagnostic::{Diagnostic, DiagnosticSpan};

/// The crates that must each decide about a new match field: the
/// projection (Envoy's matcher), the edge limits (what Envoy refuses),
/// the Gateway API converter and `aether-api`'s precedence.
pub const DECIDERS: &[&str] = &[
    "aether-api",
    "aether-edge-limits",
    "aether-projection",
    "aether-gateway-api",
];

/// The field the probe adds, as a new contributor would.
const FIELD: &str = "probe";

/// Rounds of fixes before the probe gives up: one per crate of a
/// dependency chain is enough.
const MAX_ROUNDS: usize = 12;

pub fn run(root: &Path) -> Result<()> {
    let scratch = root.join("target/match-probe");
    let tree = scratch.join("tree");
    if tree.exists() {
        std::fs::remove_dir_all(&tree).with_context(|| format!("removing {}", tree.display()))?;
    }
    copy_checkout(root, &tree)?;
    add_field(&tree.join("api/aether/config/v1/virtual_host.proto"))?;
    crate::codegen::run(&tree, false).context("codegen in the scratch copy")?;

    let mut deciders = BTreeSet::new();
    for round in 1..=MAX_ROUNDS {
        let errors = check(&tree, &scratch.join("target"))?;
        if errors.is_empty() {
            let missing: Vec<_> = DECIDERS.iter().filter(|c| !deciders.contains(**c)).collect();
            ensure!(
                missing.is_empty(),
                "a new RouteMatch field compiled in {missing:?} without a decision: destructure the match \
                 there with every field named (no `..`)"
            );
            println!("match-probe: `{FIELD}` had to be decided in {deciders:?} ({round} rounds)");
            return Ok(());
        }
        // One fix a file a round: a fix moves the offsets of the others.
        let mut fixed = BTreeSet::new();
        for (package, diagnostic) in errors {
            let Some(fix) = ignore_suggestion(&diagnostic) else {
                bail!(
                    "{package}: an error the probe cannot take rustc's suggestion for:\n{}",
                    diagnostic.rendered.unwrap_or(diagnostic.message)
                );
            };
            if fixed.insert(fix.file_name.clone()) {
                apply(&tree, fix)?;
            }
            deciders.insert(package);
        }
    }
    bail!("still not compiling after {MAX_ROUNDS} rounds")
}

/// The checkout's files (tracked and untracked, not ignored) under `to`.
fn copy_checkout(root: &Path, to: &Path) -> Result<()> {
    let listed = Command::new("git")
        .current_dir(root)
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .output()
        .context("git ls-files")?;
    ensure!(listed.status.success(), "git ls-files failed");
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).context("a file name that is not UTF-8")?;
        let from = root.join(name);
        let target = to.join(name);
        // Listed but deleted in the working tree.
        let Ok(metadata) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        std::fs::create_dir_all(target.parent().expect("a file has a parent"))?;
        if metadata.is_symlink() {
            // A crate's `generated` link to the workspace's: kept a link.
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &target)
                .with_context(|| format!("linking {name}"))?;
        } else {
            std::fs::copy(&from, &target).with_context(|| format!("copying {name}"))?;
        }
    }
    Ok(())
}

fn add_field(proto: &Path) -> Result<()> {
    let text = std::fs::read_to_string(proto)?;
    let opening = "message RouteMatch {\n";
    ensure!(text.contains(opening), "{}: no `{opening}`", proto.display());
    std::fs::write(
        proto,
        text.replacen(
            opening,
            &format!("{opening}  // A field no consumer knows yet.\n  string {FIELD} = 99;\n"),
            1,
        ),
    )?;
    Ok(())
}

/// The errors of checking the deciders' libraries (the decisions live
/// there), with the package each is in.
fn check(tree: &Path, target: &Path) -> Result<Vec<(String, Diagnostic)>> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(tree)
        .args(["check", "--keep-going", "--lib", "--message-format=json"])
        .env("CARGO_TARGET_DIR", target)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for package in DECIDERS {
        command.args(["--package", package]);
    }
    let mut child = command.spawn().context("cargo check")?;
    let stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut errors = Vec::new();
    for message in Message::parse_stream(stdout) {
        if let Message::CompilerMessage(message) = message?
            && message.message.level == cargo_metadata::diagnostic::DiagnosticLevel::Error
            && message.message.spans.iter().any(|s| s.is_primary)
        {
            let package = message.target.name.replace('_', "-");
            errors.push((package, message.message));
        }
    }
    child.wait()?;
    Ok(errors)
}

/// rustc's "explicitly ignore it" suggestion for a pattern missing the
/// probe's field (E0027), if that is what `diagnostic` is.
fn ignore_suggestion(diagnostic: &Diagnostic) -> Option<&DiagnosticSpan> {
    if diagnostic.code.as_ref().is_none_or(|code| code.code != "E0027")
        || !diagnostic.message.contains(&format!("`{FIELD}`"))
    {
        return None;
    }
    diagnostic.children.iter().flat_map(|child| &child.spans).find(|span| {
        span.suggested_replacement
            .as_deref()
            .is_some_and(|r| r.contains(&format!("{FIELD}: _")))
    })
}

fn apply(tree: &Path, span: &DiagnosticSpan) -> Result<()> {
    let path: PathBuf = tree.join(&span.file_name);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let replacement = span.suggested_replacement.as_deref().unwrap_or_default();
    let (start, end) = (span.byte_start as usize, span.byte_end as usize);
    ensure!(
        end <= text.len() && start <= end,
        "{}: a span outside the file",
        path.display()
    );
    let fixed = format!("{}{replacement}{}", &text[..start], &text[end..]);
    std::fs::write(&path, fixed)?;
    Ok(())
}
