//! Child processes that cannot outlive their test, and waiting for things.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process, its output captured in a log file; killed (`SIGKILL`)
/// and reaped when dropped.
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `command` with stdout and stderr appended to `log`. Panics,
    /// naming `name`, if it cannot start.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Self {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|err| panic!("{name}: cannot open {}: {err}", log.display()));
        let err = out.try_clone().expect("a log file handle clones");
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|err| panic!("{name}: cannot start {command:?}: {err}"));
        Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills it with `SIGKILL` (no clean-up of its own) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it (`SIGSTOP`) until [`Process::resume`]: frozen mid-work, it
    /// reads, writes and answers nothing, yet keeps its connections.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets it run again after [`Process::pause`].
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    // procps's `kill`, as util-linux's `prlimit` below: no libc binding for two signals.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .unwrap_or_else(|err| panic!("{}: cannot run kill {signal}: {err}", self.name));
        assert!(status.success(), "{}: kill {signal} failed: {status}", self.name);
    }

    /// What it has written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of its log, headed by its name, for a failure
    /// message.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        let tail = all[all.len().saturating_sub(lines)..].join("\n");
        format!("--- last {lines} lines of {}'s log ---\n{tail}", self.name)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `command` run under an open-file limit of `limit` (soft and hard), by
/// util-linux's `prlimit`, which execs it: the child keeps its pid. `None`:
/// `command` as it is.
pub fn with_open_files(command: Command, limit: Option<u64>) -> Command {
    let Some(limit) = limit else {
        return command;
    };
    let mut limited = Command::new("prlimit");
    limited
        .arg(format!("--nofile={limit}:{limit}"))
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => limited.env(key, value),
            None => limited.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        limited.current_dir(dir);
    }
    limited
}

/// A TCP port on 127.0.0.1 that was free a moment ago, and that no other
/// call in this process has given: the kernel may hand the same ephemeral
/// port to two binds in a row once the first is released, and two such
/// ports in one Envoy bootstrap (admin and listener) made it refuse to start.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("binding an ephemeral port on 127.0.0.1")
            .port();
        if given.insert(port) {
            return port;
        }
    }
}

/// Polls `check` every 20 ms until it gives a value; panics naming `what`
/// (and with `context()`, e.g. a process's log) after `timeout`. The
/// timeout is a bound on a hang, not a measurement: it is many times what
/// the wait takes.
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    context: impl Fn() -> String,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}\n{}", context());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
