//! `cargo xtask image`: what can be checked of the container images
//! without a registry or a container runtime. The Dockerfile
//! (`generated/deploy/image/`) is linted with hadolint; then each binary,
//! built here, gets the root file system its image would hold (the same
//! `rootfs.sh` the Dockerfile runs), which must hold nothing but the
//! binary, its libraries and the user entry, and the binary must run in it
//! as the pods' numeric user, through `chroot`: the controller makes one
//! pass over a manifest of `examples/`, the webhook prints its usage.
//!
//! Why not the images themselves: pulling the builder needs a registry,
//! and on machines where `podman run` cannot set the container's resource
//! limits (`setrlimit RLIMIT_NPROC: Operation not permitted` under some
//! virtual machines) nothing can be run in one. The chroot runs the same
//! bytes under the same user with the same files as the image's stage.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};

use crate::generators::deploy::BINARIES;
use crate::generators::deploy::image::{FOLDER, RUN_AS};
use crate::process::exec;

/// Lints the Dockerfile with `hadolint` (from the pinned tools in `bin`),
/// builds the binaries and runs each in its image's root file system.
pub fn check(root: &Path, bin: &Path) -> Result<()> {
    let folder = root.join(FOLDER);
    exec(
        Command::new(bin.join("hadolint"))
            .args(["--failure-threshold", "style"])
            .arg(folder.join("Dockerfile")),
    )?;
    for (name, binary) in build(root)? {
        let rootfs = tempfile::tempdir()?;
        let dir = rootfs.path();
        exec(Command::new("sh").arg(folder.join("rootfs.sh")).arg(&binary).arg(dir))?;
        only_what_the_binary_needs(dir, &name)?;
        run_as_the_pods_user(root, dir, &name)?;
        println!("image {name}: root file system checked, ran as {RUN_AS}:{RUN_AS}");
    }
    Ok(())
}

/// `cargo build` of the image binaries (the debug build: the same code and
/// libraries as the release build the Dockerfile makes), and where each is.
fn build(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .current_dir(root)
        .args(["build", "--message-format=json-render-diagnostics"]);
    for name in BINARIES {
        command.args(["-p", name, "--bin", name]);
    }
    let output = command.output().context("running cargo build")?;
    if !output.status.success() {
        bail!("{command:?} failed ({})", output.status);
    }
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let message: serde_json::Value = serde_json::from_str(line)?;
        if let (Some(name), Some(path)) = (message["target"]["name"].as_str(), message["executable"].as_str())
            && BINARIES.contains(&name)
        {
            found.push((name.to_owned(), PathBuf::from(path)));
        }
    }
    ensure!(
        found.len() == BINARIES.len(),
        "cargo build named {found:?}, not each of {BINARIES:?}"
    );
    Ok(found)
}

/// The tree holds the binary at `/name`, `/etc/passwd`, `/etc/group` and
/// shared libraries, and nothing else: no shell, no tools.
fn only_what_the_binary_needs(dir: &Path, name: &str) -> Result<()> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    for file in &files {
        let allowed = file == &format!("/{name}")
            || file == "/etc/passwd"
            || file == "/etc/group"
            || ((file.starts_with("/lib") || file.starts_with("/usr/lib")) && file.contains(".so"));
        ensure!(
            allowed,
            "the root file system of {name} holds {file}, which it does not need"
        );
    }
    ensure!(
        files.iter().any(|file| file.contains("ld-linux")),
        "no dynamic loader in {files:?}"
    );
    let passwd = std::fs::read_to_string(dir.join("etc/passwd"))?;
    ensure!(passwd.contains(&format!(":{RUN_AS}:{RUN_AS}:")), "passwd: {passwd}");
    Ok(())
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(root, &path, files)?;
        } else {
            files.push(format!("/{}", path.strip_prefix(root)?.display()));
        }
    }
    Ok(())
}

/// Runs the binary in `dir` as [`RUN_AS`] through `chroot --userspec`.
fn run_as_the_pods_user(root: &Path, dir: &Path, name: &str) -> Result<()> {
    let chroot = |args: &[&str]| {
        let mut command = Command::new("chroot");
        command
            .arg(format!("--userspec={RUN_AS}:{RUN_AS}"))
            .arg(dir)
            .arg(format!("/{name}"))
            .args(args);
        command
    };
    if name == crate::generators::deploy::controller::NAME {
        // One local-mode pass: reads a manifest, writes the edge's files
        // into a directory only the pods' user may write.
        std::fs::create_dir(dir.join("manifests"))?;
        std::fs::copy(root.join("examples/proposal.yaml"), dir.join("manifests/proposal.yaml"))?;
        let out = dir.join("out");
        std::fs::create_dir(&out)?;
        exec(Command::new("chown").arg(format!("{RUN_AS}:{RUN_AS}")).arg(&out))?;
        exec(&mut chroot(&["--manifests", "/manifests", "--out", "/out", "--once"]))?;
        let routes = std::fs::read_to_string(out.join("routes.json")).context("the pass wrote no routes.json")?;
        ensure!(routes.contains("\"virtualHosts\""), "routes.json: {routes}");
    } else {
        let output = chroot(&["--help"]).output()?;
        let usage = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success() && usage.contains("Usage:"),
            "{name} --help: {usage}"
        );
    }
    Ok(())
}
