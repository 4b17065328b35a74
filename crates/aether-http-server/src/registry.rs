//! The open connections: the bound, what each is doing, and which one to
//! evict when a new connection needs room.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::Config;
use crate::metrics::CloseReason;

/// The connections of one listener.
pub(crate) struct Registry {
    /// Times below are milliseconds since this instant (atomics hold no Instant).
    epoch: Instant,
    max: usize,
    state: Mutex<State>,
    /// Wakes the acceptor: a connection closed or became idle.
    changed: Notify,
}

#[derive(Default)]
struct State {
    next_id: u64,
    open: HashMap<u64, Arc<Conn>>,
    /// Connections told to close to make room, not closed yet.
    evicting: usize,
}

/// Connections that have not served a request yet are not evicted before
/// they are this old: on a healthy server a real client completes its
/// handshake and sends its first request well within it. Evicting younger
/// ones lets a flood of connections that reconnect evict each other, and
/// every real client, before any handshake ends; work in progress is
/// thrown away and throughput collapses (measured before this rule: 22 of
/// 2,000 flood connections held and no review answered at a bound of 512).
/// With it, a flood beyond the bound is taken in at most `max` connections
/// a second and the rest wait their turn in the backlog.
pub(crate) const SPARED_FOR: Duration = Duration::from_secs(1);

/// When a new connection can have a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// Now: a free slot, an eviction under way, or one to evict.
    Now,
    /// Once the oldest young connection has been spared long enough.
    At(Instant),
    /// When a connection closes or becomes idle ([`Registry::changed`]).
    Later,
}

/// What the acceptor may do with a new connection.
pub(crate) enum Admission {
    /// It has a slot.
    Admitted(Arc<Conn>),
    /// Not yet: an eviction was started (its close is [`Registry::changed`]),
    /// or there is none to start before this.
    Wait(Room),
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // The state stays consistent across a panic (each update is one step).
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            epoch: Instant::now(),
            max: max.max(1),
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        })
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn at(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.state).open.len()
    }

    /// Resolves when a connection closes or becomes idle (or spuriously).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The idle connection to evict first, if it may be evicted now; else
    /// when it may. A young one is waited for rather than passed over: the
    /// next in line would be a client's keep-alive connection.
    fn victim(&self, state: &State) -> (Option<Arc<Conn>>, Option<u64>) {
        // A scan of at most `max` entries, once per accept at the bound.
        let first = state
            .open
            .values()
            .filter(|conn| conn.is_idle() && !conn.is_evicted())
            .min_by_key(|conn| (conn.rank(), conn.idle_since.load(Ordering::Acquire), conn.id));
        let Some(first) = first else {
            return (None, None);
        };
        let eligible = first.accepted_at + SPARED_FOR.as_millis() as u64;
        if !first.served.load(Ordering::Acquire) && eligible > self.now_ms() {
            return (None, Some(eligible));
        }
        (Some(first.clone()), None)
    }

    /// When a new connection could have a slot (accepting before then
    /// would only hold it).
    pub(crate) fn room(&self) -> Room {
        let state = lock(&self.state);
        if state.open.len() < self.max || state.evicting > 0 {
            return Room::Now;
        }
        match self.victim(&state) {
            (Some(_), _) => Room::Now,
            (None, Some(next)) => Room::At(self.at(next)),
            (None, None) => Room::Later,
        }
    }

    /// A slot for a new connection, or the eviction that makes one.
    pub(crate) fn admit(self: &Arc<Self>) -> Admission {
        let mut state = lock(&self.state);
        if state.open.len() < self.max {
            state.next_id += 1;
            let now = self.now_ms();
            let conn = Arc::new(Conn {
                id: state.next_id,
                registry: self.clone(),
                accepted_at: now,
                in_flight: AtomicUsize::new(0),
                served: AtomicBool::new(false),
                ready: AtomicBool::new(false),
                idle_since: AtomicU64::new(now),
                head_started: AtomicU64::new(0),
                evicted: AtomicBool::new(false),
                write_timed_out: AtomicBool::new(false),
                wake: Notify::new(),
            });
            state.open.insert(conn.id, conn.clone());
            return Admission::Admitted(conn);
        }
        if state.evicting > 0 {
            return Admission::Wait(Room::Later);
        }
        match self.victim(&state) {
            (Some(victim), _) => {
                state.evicting += 1;
                victim.evicted.store(true, Ordering::Release);
                victim.wake.notify_one();
                Admission::Wait(Room::Later)
            }
            (None, Some(next)) => Admission::Wait(Room::At(self.at(next))),
            (None, None) => Admission::Wait(Room::Later),
        }
    }

    fn remove(&self, conn: &Conn) {
        let mut state = lock(&self.state);
        if state.open.remove(&conn.id).is_some() && conn.evicted.load(Ordering::Acquire) {
            state.evicting -= 1;
        }
        drop(state);
        self.changed.notify_one();
    }
}

/// One open connection, shared by its task, its I/O, its request guards and
/// the registry.
pub(crate) struct Conn {
    id: u64,
    registry: Arc<Registry>,
    accepted_at: u64,
    in_flight: AtomicUsize,
    /// Whether a request has started on it.
    served: AtomicBool,
    /// Whether its TLS handshake (if any) is done.
    ready: AtomicBool,
    /// When it last became idle (accepted, handshake done, request ended).
    idle_since: AtomicU64,
    /// HTTP/1: when the first byte of the next request's head came while
    /// idle, plus one (0: none).
    head_started: AtomicU64,
    evicted: AtomicBool,
    write_timed_out: AtomicBool,
    /// Wakes the connection's watcher: evicted, idle again, a head started.
    wake: Notify,
}

impl Conn {
    /// The TLS handshake is done: the first request's time starts now.
    pub(crate) fn ready(&self) {
        self.idle_since.store(self.registry.now_ms(), Ordering::Release);
        self.ready.store(true, Ordering::Release);
    }

    /// Eviction order, lowest first (then the longest idle), among those
    /// not spared for their youth ([`SPARED_FOR`]):
    /// 0. never served, handshake done: a real client sends its request
    ///    right after its handshake, so one that stays silent goes first;
    /// 1. never served, still in its handshake (a slow or stalled one);
    /// 2. served, now idle: a client's keep-alive connection.
    fn rank(&self) -> u8 {
        if self.served.load(Ordering::Acquire) {
            2
        } else if self.ready.load(Ordering::Acquire) {
            0
        } else {
            1
        }
    }

    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    pub(crate) fn has_served(&self) -> bool {
        self.served.load(Ordering::Acquire)
    }

    pub(crate) fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once the connection is chosen for eviction.
    pub(crate) async fn evicted(&self) {
        loop {
            let notified = self.wake.notified();
            if self.is_evicted() {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn write_timed_out(&self) -> bool {
        self.write_timed_out.load(Ordering::Acquire)
    }

    pub(crate) fn set_write_timed_out(&self) {
        self.write_timed_out.store(true, Ordering::Release);
    }

    /// Bytes arrived (HTTP/1): if no request is in flight, a head has begun.
    pub(crate) fn bytes_read(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0 && self.head_started.load(Ordering::Acquire) == 0 {
            self.head_started.store(self.registry.now_ms() + 1, Ordering::Release);
            self.wake.notify_one();
        }
    }

    /// A request started; it counts until the guard drops.
    pub(crate) fn begin(self: &Arc<Self>) -> RequestGuard {
        self.served.store(true, Ordering::Release);
        self.head_started.store(0, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        RequestGuard(self.clone())
    }

    fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle_since.store(self.registry.now_ms(), Ordering::Release);
            self.wake.notify_one();
            self.registry.changed.notify_one();
        }
    }

    /// When the connection must close if nothing changes, and why; `None`
    /// while a request is in flight.
    fn deadline(&self, config: &Config) -> Option<(Instant, CloseReason)> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.registry.at(self.idle_since.load(Ordering::Acquire));
        let mut deadline = if self.served.load(Ordering::Acquire) {
            (since + config.idle_timeout, CloseReason::IdleTimeout)
        } else {
            (since + config.first_request_timeout, CloseReason::FirstRequestTimeout)
        };
        let head = self.head_started.load(Ordering::Acquire);
        if head > 0 {
            let head = self.registry.at(head - 1) + config.header_timeout;
            if head < deadline.0 {
                deadline = (head, CloseReason::HeaderTimeout);
            }
        }
        Some(deadline)
    }

    /// Resolves with the reason the connection must close: evicted, or a
    /// timeout that ran out while no request was in flight.
    pub(crate) async fn expired(&self, config: &Config) -> CloseReason {
        loop {
            let notified = self.wake.notified();
            if self.is_evicted() {
                return CloseReason::Evicted;
            }
            match self.deadline(config) {
                None => notified.await,
                Some((at, reason)) if at <= Instant::now() => return reason,
                Some((at, _)) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = notified => {}
                    }
                }
            }
        }
    }
}

/// Counts one request in flight while it lives.
pub(crate) struct RequestGuard(Arc<Conn>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Holds a connection's slot; frees it when the connection's task ends.
pub(crate) struct Slot(pub(crate) Arc<Conn>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.registry.remove(&self.0);
    }
}
