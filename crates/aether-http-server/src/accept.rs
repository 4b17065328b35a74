//! Accepting with back-off: a failing accept never spins.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::metrics::ListenerMetrics;

/// The first pause after a failed accept; each further failure doubles it.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
/// The longest pause: a descriptor freed is used within a second.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Errors about the one pending connection (it was reset or aborted before
/// accept took it): the next pending one is fine, so retry at once.
fn about_one_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// What a run of failed accepts has done so far.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// Failures in the current burst (0: none).
    failures: u64,
    pause: Duration,
    since: Option<Instant>,
}

/// What to do after a failed accept.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Failed {
    /// How long to wait before the next accept.
    pub(crate) pause: Duration,
    /// Whether this failure starts a burst (logged; the rest are not).
    pub(crate) first: bool,
}

impl Backoff {
    pub(crate) fn failed(&mut self, error: &io::Error) -> Failed {
        if about_one_connection(error) {
            return Failed {
                pause: Duration::ZERO,
                first: false,
            };
        }
        self.failures += 1;
        let first = self.failures == 1;
        self.pause = if first {
            self.since = Some(Instant::now());
            FIRST_PAUSE
        } else {
            (self.pause * 2).min(MAX_PAUSE)
        };
        Failed {
            pause: self.pause,
            first,
        }
    }

    /// An accept succeeded: the burst, if any, is over (its failures and
    /// length returned, for the log).
    pub(crate) fn succeeded(&mut self) -> Option<(u64, Duration)> {
        let failures = std::mem::take(&mut self.failures);
        let since = self.since.take()?;
        (failures > 0).then(|| (failures, since.elapsed()))
    }
}

/// The next connection of `listener`; failed accepts are counted, logged
/// once per burst and retried after [`Backoff`]'s pause.
pub(crate) async fn accept(
    name: &str,
    listener: &TcpListener,
    backoff: &mut Backoff,
    metrics: &ListenerMetrics,
) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok(accepted) => {
                if let Some((failures, lasted)) = backoff.succeeded() {
                    info!(
                        listener = name,
                        failures,
                        lasted_ms = lasted.as_millis() as u64,
                        "accepting again"
                    );
                }
                return accepted;
            }
            Err(error) => {
                metrics.accept_errors.inc();
                let failed = backoff.failed(&error);
                if failed.first {
                    warn!(listener = name, %error,
                        "accept failed; retrying with growing pauses (up to 1 s) until it succeeds");
                } else {
                    debug!(listener = name, %error, pause_ms = failed.pause.as_millis() as u64, "accept failed");
                }
                if !failed.pause.is_zero() {
                    tokio::time::sleep(failed.pause).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emfile() -> io::Error {
        io::Error::from_raw_os_error(24)
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_double_to_a_second_and_a_burst_is_logged_once() {
        let mut backoff = Backoff::default();
        let pauses: Vec<_> = (0..10).map(|_| backoff.failed(&emfile())).collect();
        assert!(pauses[0].first);
        assert!(pauses[1..].iter().all(|failed| !failed.first));
        let millis: Vec<u128> = pauses.iter().map(|failed| failed.pause.as_millis()).collect();
        assert_eq!(millis, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        // 30 s of EMFILE costs about 30 accepts, not a spinning core.
        let mut spent = Duration::ZERO;
        let mut attempts = 0;
        while spent < Duration::from_secs(30) {
            spent += backoff.failed(&emfile()).pause;
            attempts += 1;
        }
        assert!(attempts <= 31, "{attempts}");

        tokio::time::advance(Duration::from_secs(3)).await;
        let (failures, lasted) = backoff.succeeded().unwrap();
        assert_eq!((failures, lasted), (10 + attempts, Duration::from_secs(3)));
        // A new burst starts over, and is logged again.
        assert_eq!(backoff.succeeded(), None);
        assert_eq!(
            backoff.failed(&emfile()),
            Failed {
                pause: FIRST_PAUSE,
                first: true
            }
        );
    }

    #[test]
    fn an_aborted_connection_is_retried_at_once_and_starts_no_burst() {
        let mut backoff = Backoff::default();
        for kind in [io::ErrorKind::ConnectionAborted, io::ErrorKind::ConnectionReset] {
            assert_eq!(
                backoff.failed(&io::Error::from(kind)),
                Failed {
                    pause: Duration::ZERO,
                    first: false
                }
            );
        }
        assert_eq!(backoff.succeeded(), None);
    }
}
