//! Coalescing bursts of changes into one reconcile.
//!
//! A reconcile runs once no change has arrived for `quiet` (so a burst, such
//! as `kubectl apply -f dir/` or the controller's own status writes coming
//! back as watch events, costs one pass), but at most `max_delay` after the
//! first change of the burst (so a steady stream of changes cannot starve
//! the output).

use std::time::{Duration, Instant};

/// Default quiet period.
pub const DEFAULT_QUIET: Duration = Duration::from_millis(250);
/// Default longest delay after the first change.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(2);

/// When the next reconcile is due.
#[derive(Debug, Clone)]
pub struct Debouncer {
    quiet: Duration,
    max_delay: Duration,
    /// First and latest change since the last reconcile.
    pending: Option<(Instant, Instant)>,
}

impl Debouncer {
    /// A debouncer with these periods.
    pub fn new(quiet: Duration, max_delay: Duration) -> Self {
        Self {
            quiet,
            max_delay,
            pending: None,
        }
    }

    /// Records a change at `now`.
    pub fn change(&mut self, now: Instant) {
        self.pending = Some(match self.pending {
            Some((first, _)) => (first, now),
            None => (now, now),
        });
    }

    /// When the pending changes should be reconciled; `None` when there are none.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending
            .map(|(first, last)| (last + self.quiet).min(first + self.max_delay))
    }

    /// Whether a reconcile is due at `now`; if so, forgets the pending changes.
    pub fn take_due(&mut self, now: Instant) -> bool {
        let due = self.deadline().is_some_and(|deadline| deadline <= now);
        if due {
            self.pending = None;
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_reconciled_once_after_the_quiet_period() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let mut debouncer = Debouncer::new(ms(100), ms(1000));
        assert_eq!(debouncer.deadline(), None);
        assert!(!debouncer.take_due(start));
        for step in 0..5 {
            debouncer.change(start + ms(step * 50));
        }
        assert_eq!(debouncer.deadline(), Some(start + ms(300)));
        assert!(!debouncer.take_due(start + ms(299)));
        assert!(debouncer.take_due(start + ms(300)));
        assert!(
            !debouncer.take_due(start + ms(400)),
            "nothing pending after the reconcile"
        );
    }

    #[test]
    fn a_steady_stream_is_reconciled_at_the_longest_delay() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let mut debouncer = Debouncer::new(ms(100), ms(1000));
        for step in 0..30 {
            debouncer.change(start + ms(step * 50));
        }
        assert_eq!(debouncer.deadline(), Some(start + ms(1000)));
    }
}
