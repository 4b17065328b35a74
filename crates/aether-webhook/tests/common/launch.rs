//! The one launcher of the `aether-webhook` binary: its arguments, a wait
//! until it is ready, and a kill when the handle is dropped.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use aether_webhook::server::READYZ_PATH;

use super::Pki;

/// How long the binary may take to become ready or to exit.
const PATIENCE: Duration = Duration::from_secs(20);
/// How often readiness and exit are checked.
const POLL: Duration = Duration::from_millis(50);

/// The binary in local mode on a manifest directory, before it starts.
pub struct Launch {
    command: Command,
    client: reqwest::Client,
    addr: SocketAddr,
}

impl Launch {
    /// `binary` (the test's `CARGO_BIN_EXE_aether-webhook`) serving `pki`'s
    /// certificate on a free port, reading `manifests`; its output discarded.
    pub fn new(binary: impl Into<PathBuf>, pki: &Pki, manifests: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut command = Command::new(binary.into());
        command
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--tls-cert")
            .arg(&pki.cert)
            .arg("--tls-key")
            .arg(&pki.key)
            .arg("--manifests")
            .arg(manifests)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Self {
            command,
            client: pki.client(),
            addr,
        }
    }

    /// Adds arguments.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.command.args(args.into_iter().map(Into::into));
        self
    }

    /// Logs at `info` into `dir/stdout` and `dir/stderr`.
    pub fn logs_to(mut self, dir: &Path) -> Self {
        self.command
            .env("RUST_LOG", "info")
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
        self
    }

    /// Starts it and waits until `/readyz` answers 200.
    pub async fn ready(mut self) -> Webhook {
        let webhook = Webhook {
            child: self.command.spawn().unwrap(),
            client: self.client,
            addr: self.addr,
        };
        for _ in 0..PATIENCE.as_millis() / POLL.as_millis() {
            if let Ok(response) = webhook.client.get(webhook.url(READYZ_PATH)).send().await
                && response.status() == 200
            {
                return webhook;
            }
            tokio::time::sleep(POLL).await;
        }
        panic!("the binary did not become ready within {PATIENCE:?}");
    }
}

/// The running binary; killed when dropped.
pub struct Webhook {
    child: Child,
    /// A client trusting its certificate.
    pub client: reqwest::Client,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Webhook {
    /// The URL of `path` on it.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Sends it `SIGTERM` and waits for it to exit.
    pub async fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        for _ in 0..PATIENCE.as_millis() / POLL.as_millis() {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(POLL).await;
        }
        panic!("the binary did not exit within {PATIENCE:?} of SIGTERM");
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
