//! The bytes of request bodies held at once, all connections together.
//!
//! A body takes its share (its declared length, or the largest body when it
//! declares none) before it is read, and gives it back once answered. A
//! share that does not fit waits until it does or its deadline passes.
//! Waiters are not served in order of arrival: whichever fits when bytes
//! come back goes, so a small review is never held up behind a large body
//! waiting for room (tokio's `Semaphore` is fair, and would hold it).
//! Every holder is bounded in time by the body timeout, so a waiter's wait
//! is too.

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

/// See the module documentation.
pub struct Budget {
    available: Mutex<usize>,
    returned: Notify,
}

/// Bytes taken from a [`Budget`], given back when dropped.
pub struct Share<'a> {
    budget: &'a Budget,
    bytes: usize,
}

impl Budget {
    pub fn new(bytes: usize) -> Self {
        Self {
            available: Mutex::new(bytes),
            returned: Notify::new(),
        }
    }

    fn try_take(&self, bytes: usize) -> Option<Share<'_>> {
        let mut available = self.available.lock().unwrap_or_else(PoisonError::into_inner);
        if *available < bytes {
            return None;
        }
        *available -= bytes;
        Some(Share { budget: self, bytes })
    }

    /// `bytes` of the budget, waited for until `deadline` at most.
    pub async fn take(&self, bytes: usize, deadline: Instant) -> Option<Share<'_>> {
        loop {
            let returned = self.returned.notified();
            let mut returned = std::pin::pin!(returned);
            // Registered before the check, so a return in between wakes it.
            returned.as_mut().enable();
            if let Some(share) = self.try_take(bytes) {
                return Some(share);
            }
            tokio::time::timeout_at(deadline, returned).await.ok()?;
        }
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        *self.budget.available.lock().unwrap_or_else(PoisonError::into_inner) += self.bytes;
        self.budget.returned.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_share_waits_for_room_until_its_deadline_and_small_ones_pass_a_large_waiter() {
        let budget = Budget::new(100);
        let held = budget.try_take(80).unwrap();
        let later = |ms| Instant::now() + Duration::from_millis(ms);
        // 50 does not fit before its deadline: refused.
        assert!(budget.take(50, later(500)).await.is_none());
        // While 50 waits, 20 fits at once.
        let (large, ()) = tokio::join!(budget.take(50, later(1000)), async {
            let small = budget.take(20, later(10)).await;
            assert!(small.is_some());
            drop(small);
            tokio::time::sleep(Duration::from_millis(100)).await;
            // The large one gets its share once the held bytes come back.
            drop(held);
        });
        let large = large.expect("taken once 80 came back");
        assert_eq!(large.bytes, 50);
        drop(large);
        assert!(budget.try_take(100).is_some());
    }
}
