//! How long a pass whose files could not be written (or whose status
//! patches failed) waits before it is tried again, in both modes: a full
//! disk, a read-only volume, a lost mount or an API server in trouble does
//! not heal in a quarter of a second, and retrying at once would write (and
//! log) about three times a second until it does.

use std::time::Duration;

/// The wait after the first failure: 500 ms.
pub const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The longest wait: 30 s, doubled to from [`FIRST_RETRY`] in six failures.
/// An edit of the input does not wait for it: it runs a pass at once.
pub const MAX_RETRY: Duration = Duration::from_secs(30);

/// Exponential back-off for failing passes: [`FIRST_RETRY`], doubling each
/// failure up to [`MAX_RETRY`], back to the first after a success.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Records a failure; how long to wait before trying again.
    pub fn failed(&mut self) -> Duration {
        let wait = FIRST_RETRY.saturating_mul(1 << self.failures.min(16)).min(MAX_RETRY);
        self.failures = self.failures.saturating_add(1);
        wait
    }

    /// Records a success: the next failure waits [`FIRST_RETRY`] again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_half_a_second_to_the_cap_and_a_success_starts_again() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..10).map(|_| backoff.failed().as_millis() as u64).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]);
        for _ in 0..100 {
            assert_eq!(backoff.failed(), MAX_RETRY);
        }
        backoff.succeeded();
        assert_eq!(backoff.failed(), FIRST_RETRY);
    }
}
