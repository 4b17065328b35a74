//! Running the `aetherctl` binary for real, bounded in time and memory, and
//! writing its input files.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// A bound on a hang, not a measurement: a run takes well under a second.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Address space allowed to the binary, in KiB: far above what a manifest
/// needs (tens of MiB), far below what an unbounded expansion would take.
pub const MEMORY_KIB: u32 = 1024 * 1024;
pub const SIXTEEN_MIB: usize = 16 * 1024 * 1024;

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args`; panics if it is still running after
/// [`TIMEOUT`] (then killed) or was killed by a signal.
pub fn aetherctl<S: Into<OsString> + Clone>(args: &[S]) -> Run {
    run(args, None)
}

/// [`aetherctl`], with `stdin` as its standard input (from a file: nothing
/// can block on a pipe the binary does not read to its end).
pub fn aetherctl_with_stdin<S: Into<OsString> + Clone>(args: &[S], stdin: impl AsRef<[u8]>) -> Run {
    run(args, Some(stdin.as_ref()))
}

fn run<S: Into<OsString> + Clone>(args: &[S], stdin: Option<&[u8]>) -> Run {
    let scratch = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (scratch.path().join("stdout"), scratch.path().join("stderr"));
    // Output goes to files, not pipes: nothing can block on a full pipe.
    let mut command = if cfg!(unix) {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_aetherctl"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_aetherctl"))
    };
    let started = Instant::now();
    let mut child = command
        .args(args.iter().cloned().map(Into::into))
        .stdin(match stdin {
            Some(bytes) => {
                let path = scratch.path().join("stdin");
                std::fs::write(&path, bytes).unwrap();
                Stdio::from(File::open(path).unwrap())
            }
            None => Stdio::null(),
        })
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let Some(status) = child.wait_timeout(TIMEOUT).unwrap() else {
        child.kill().unwrap();
        child.wait().unwrap();
        panic!("aetherctl still running after {TIMEOUT:?}");
    };
    let code = status
        .code()
        .unwrap_or_else(|| panic!("aetherctl killed by a signal ({status}) after {:?}", started.elapsed()));
    Run {
        code,
        stdout: std::fs::read_to_string(out_path).unwrap(),
        stderr: std::fs::read_to_string(err_path).unwrap(),
    }
}

/// Writes `dir/name`.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The proposal's manifest (`examples/proposal.yaml`).
pub fn proposal() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/proposal.yaml")).unwrap()
}
