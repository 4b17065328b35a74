//! The Envoys connected to this server and what each applied (what the
//! controller's `Programmed` condition is made of).
//!
//! Every xDS stream is a member of the fleet while it lasts. Per type it
//! serves, a stream keeps, by nonce, the publications it sent whole
//! (`Acks`): once Envoy answers the response that completed its sync
//! with a publication, it holds that publication (each resource of it that
//! it asks for), but for the resources it refused. Publications and items
//! are numbered ([`crate::resources`]), so what a change needs is the
//! numbers of the resources carrying it ([`Need`]), and an Envoy meets a
//! need once it holds a publication at least as new, asks for the resource
//! and did not refuse it.
//!
//! An Envoy that disconnects stays expected, by its node id, for the
//! absence grace: an edit made while it restarts waits for it
//! ([`Applied::Pending`]) rather than being called applied by the Envoys
//! left. Its return is
//! known by its node id: give each Envoy its own (`--service-node`).
//!
//! An Envoy that does not answer costs only itself: a stream that has not
//! answered a sync, not read a publication, or not asked for a type it
//! serves for the answer deadline ([`DEFAULT_ANSWER_DEADLINE`], from the
//! oldest such wait) is left out of what is applied
//! (`edge-3 (not answering)` in `left_out`) until it answers, and the
//! fleet tells the change when the deadline passes. Alone, it is waited
//! for still, named so. The clock is tokio's (a paused one in tests).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Weak;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::time::Instant;

/// How an Envoy that gave no node id is named.
pub(crate) const NO_NODE_ID: &str = "(no node id)";
/// How long a disconnected Envoy stays expected by default.
pub const DEFAULT_ABSENCE_GRACE: Duration = Duration::from_secs(120);
/// Envoys gone that are expected at most: past it the one gone longest
/// is forgotten. An edge serves up to `MAX_CONNECTIONS` (1,024) Envoys at
/// once; more gone within the grace are node ids churning, not Envoys
/// restarting.
pub const MAX_ABSENT_ENVOYS: usize = 1024;
/// Nodes reported one by one at most ([`Fleet::reports_by_node`]); the
/// others are merged into one, [`OTHER_NODES`]: what a metrics registry
/// makes a series of stays bounded whatever node ids clients send.
pub const MAX_REPORTED_NODES: usize = 1024;
/// The node the reports past [`MAX_REPORTED_NODES`] are merged into.
pub const OTHER_NODES: &str = "(other nodes)";
/// The bytes of a node id kept: a Kubernetes pod name is at most 253.
pub const MAX_NODE_ID_BYTES: usize = 256;
/// How long a stream may wait on its Envoy by default (an answer, a read,
/// a first request of a type) before it is left out of what is applied:
/// Envoy answers in milliseconds, and applies 50,000 route configurations
/// in seconds.
pub const DEFAULT_ANSWER_DEADLINE: Duration = Duration::from_secs(60);
/// Syncs a stream keeps unanswered at most; past it the oldest is
/// forgotten (its Envoy is then not counted as holding it until a later
/// answer), so an Envoy that never answers costs a bounded memory.
const MAX_UNANSWERED: usize = 64;

/// What a change (the controller's: an object's generation) needs of each
/// Envoy: one resource carrying it, at least as new as the item published
/// with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// The resource's type URL.
    pub type_url: &'static str,
    /// Its name.
    pub name: String,
    /// Its item's number ([`crate::resources::Item::seq`]).
    pub seq: u64,
}

/// What the fleet says of a set of [`Need`]s.
///
/// An Envoy that refused a resource needed is left out while another
/// Envoy holds that resource or has yet to answer it (see
/// [`Fleet::applied`]): one broken client does not make a change
/// `Refused` for the Envoys that take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Every Envoy counted holds them.
    All {
        /// How many Envoys.
        envoys: usize,
        /// The Envoys left out of the count, by node id and why
        /// (`edge-3 (refused it)`), in the order they joined.
        left_out: Vec<String>,
    },
    /// Some Envoys do not yet.
    Pending {
        /// Their node ids (`(no node id)` for one that gave none, a
        /// disconnected one marked so), in the order they joined.
        waiting: Vec<String>,
        /// Of how many Envoys.
        envoys: usize,
        /// The Envoys left out of the count, as for [`Applied::All`].
        left_out: Vec<String>,
    },
    /// An Envoy refused a resource needed, and no Envoy holds it or is yet
    /// to answer it.
    Refused {
        /// The Envoy, by node id.
        envoy: String,
        /// The resource: its type's short name and its name.
        resource: String,
        /// Envoy's `error_detail` message.
        error: String,
    },
    /// No Envoy is expected.
    NoEnvoy,
}

/// Whether a stream's Envoy holds what a [`Need`] asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Holds {
    Yes,
    NotYet,
    /// The stream does not serve the type.
    NotServed,
    /// Envoy refused it, saying this.
    Refused(String),
}

/// A stream as the fleet sees it.
pub(crate) trait Member: Send + Sync {
    /// The node id its Envoy gave, once it did.
    fn node(&self) -> Option<String>;
    /// Whether its Envoy holds `need`.
    fn holds(&self, need: &Need) -> Holds;
    /// Since when it waits on its Envoy for `type_url` (an answer, a read,
    /// or a first request), if it does and serves it.
    fn waiting_since(&self, type_url: &str) -> Option<Instant>;
    /// Its oldest wait, of any type.
    fn oldest_wait(&self) -> Option<Instant>;
    /// What its Envoy answered so far, per type it asked for.
    fn report(&self) -> Report;
}

/// The node id a stream's Envoy gave, as the fleet keeps it: its first
/// [`MAX_NODE_ID_BYTES`] (cut on a character), `None` when empty.
pub(crate) fn node_id(id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    let mut end = id.len().min(MAX_NODE_ID_BYTES);
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    Some(id[..end].to_owned())
}

/// What one stream's Envoy answered (or, merged, a node's streams), for
/// the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// How many streams it tells of.
    pub streams: usize,
    /// The node id, once given.
    pub node: Option<String>,
    /// Per type asked for (its short name, `RouteConfiguration`): the
    /// newest publication held.
    pub held: Vec<(&'static str, u64)>,
    /// Responses refused.
    pub nacks: u64,
    /// When Envoy last answered.
    pub last_answer: Option<SystemTime>,
    /// How long the oldest sync not answered yet has waited.
    pub behind: Duration,
}

impl Report {
    /// Adds what `other` (another stream's) tells.
    fn merge(&mut self, other: Report) {
        self.streams += other.streams;
        self.held.extend(other.held);
        self.nacks += other.nacks;
        self.last_answer = self.last_answer.max(other.last_answer);
        self.behind = self.behind.max(other.behind);
    }

    /// Adds what `acks` (of `type_url`) tells.
    pub(crate) fn add(&mut self, type_url: &'static str, acks: &Acks) {
        self.held.push((short_type(type_url), acks.held));
        self.nacks += acks.nacks;
        self.last_answer = self.last_answer.max(acks.last_answer);
        if let Some(since) = acks.waiting_since() {
            self.behind = self.behind.max(since.elapsed());
        }
    }
}

/// What one stream's Envoy holds of one type, by the responses it answered.
#[derive(Debug, Default)]
pub(crate) struct Acks {
    /// The newest publication Envoy holds.
    held: u64,
    /// Syncs with a publication not answered yet: the nonce of the last
    /// response they needed, the publication's number, and when.
    unanswered: VecDeque<(u64, u64, Instant)>,
    /// Responses refused.
    nacks: u64,
    /// When Envoy last answered.
    last_answer: Option<SystemTime>,
    /// The nonce of the last response sent of this type, and of the last answered.
    last_sent: u64,
    last_answered: u64,
    /// The publication of the last sync.
    last_synced: u64,
    /// Since when a publication newer than the last sync waits to be
    /// sent (the stream does not read).
    behind: Option<Instant>,
    /// Resources Envoy refused (a response of one), with its message.
    refused: HashMap<String, String>,
    /// A response of several resources refused whole (state of the world),
    /// with its message: Envoy holds none of what it brought.
    refused_whole: Option<String>,
}

impl Acks {
    /// A response of this type went out as `nonce`.
    pub(crate) fn sent(&mut self, nonce: u64) {
        self.last_sent = nonce;
    }

    /// Publication `seq` came: unless the stream synced with it, it waits
    /// from now to be sent. Returns when, if it starts waiting now.
    pub(crate) fn published(&mut self, seq: u64) -> Option<Instant> {
        if seq <= self.last_synced || self.behind.is_some() {
            return None;
        }
        let now = Instant::now();
        self.behind = Some(now);
        Some(now)
    }

    /// Everything publication `seq` owes was sent (the last of it as the
    /// last response sent). Returns since when the stream waits for an
    /// answer, if it starts waiting now.
    pub(crate) fn synced(&mut self, seq: u64) -> Option<Instant> {
        self.last_synced = self.last_synced.max(seq);
        let since = self.behind.take();
        if self.last_answered >= self.last_sent {
            self.held = self.held.max(seq);
            None
        } else if let Some(last) = self.unanswered.back_mut()
            && last.0 == self.last_sent
        {
            last.1 = last.1.max(seq);
            None
        } else {
            if self.unanswered.len() == MAX_UNANSWERED {
                self.unanswered.pop_front();
            }
            let since = since.unwrap_or_else(Instant::now);
            self.unanswered.push_back((self.last_sent, seq, since));
            Some(since)
        }
    }

    /// Since when the stream waits on its Envoy: its oldest sync not
    /// answered, or a publication not sent.
    pub(crate) fn waiting_since(&self) -> Option<Instant> {
        let unanswered = self.unanswered.front().map(|(_, _, since)| *since);
        match (unanswered, self.behind) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Envoy took response `nonce`, which carried `names`.
    pub(crate) fn acked(&mut self, nonce: u64, names: &[String]) {
        self.last_answer = Some(SystemTime::now());
        for name in names {
            self.refused.remove(name);
        }
        self.refused_whole = None;
        self.answered(nonce);
    }

    /// Envoy refused response `nonce`, which carried `names`, saying
    /// `error`. A response of one resource names it; one of several is
    /// either sent again a resource at a time (`retried`, delta: nothing
    /// is held yet) or refused whole (state of the world).
    pub(crate) fn refused(&mut self, nonce: u64, names: &[String], error: &str, retried: bool) {
        self.nacks += 1;
        self.last_answer = Some(SystemTime::now());
        match names {
            [name] => {
                self.refused.insert(name.clone(), error.to_owned());
                self.answered(nonce);
            }
            _ if retried => {}
            _ => self.refused_whole = Some(error.to_owned()),
        }
    }

    fn answered(&mut self, nonce: u64) {
        self.last_answered = self.last_answered.max(nonce);
        while let Some(&(last, seq, _)) = self.unanswered.front()
            && last <= nonce
        {
            self.held = self.held.max(seq);
            self.unanswered.pop_front();
        }
    }

    /// Whether Envoy holds `need`, given whether the stream asks for it.
    pub(crate) fn holds(&self, asks: bool, need: &Need) -> Holds {
        if let Some(error) = self.refused.get(&need.name) {
            return Holds::Refused(error.clone());
        }
        if asks && self.held >= need.seq {
            return Holds::Yes;
        }
        match &self.refused_whole {
            Some(error) if asks => Holds::Refused(error.clone()),
            _ => Holds::NotYet,
        }
    }
}

/// The members of one replica's fleet, and the Envoys recently gone.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    members: Mutex<Members>,
    /// Counts the changes: a member's answer, a join, a leave, a deadline.
    changes: watch::Sender<u64>,
    grace: Duration,
    answer_deadline: Duration,
    /// The one timer that tells when a wait passes the answer deadline.
    alarm: Mutex<Alarm>,
}

/// When the fleet next looks for waits past the answer deadline, and when
/// it last did.
struct Alarm {
    armed: Option<Instant>,
    last_rung: Instant,
}

#[derive(Default)]
struct Members {
    next: u64,
    live: BTreeMap<u64, Arc<dyn Member>>,
    /// Node ids of Envoys gone, expected until then, gone longest first
    /// (the grace is one), each once, at most [`MAX_ABSENT_ENVOYS`].
    absent: VecDeque<(String, Instant)>,
}

/// A stream's place in the fleet, given up when dropped.
pub(crate) struct Membership {
    fleet: Fleet,
    id: u64,
}

impl Drop for Membership {
    fn drop(&mut self) {
        let grace = self.fleet.inner.grace;
        let gone = {
            let mut members = self.fleet.lock();
            let gone = members.live.remove(&self.id).and_then(|member| member.node());
            let now = Instant::now();
            members.forget_absent(now);
            match gone {
                Some(node) if !grace.is_zero() => {
                    members.absent.retain(|(absent, _)| *absent != node);
                    if members.absent.len() == MAX_ABSENT_ENVOYS {
                        members.absent.pop_front();
                    }
                    members.absent.push_back((node, now + grace));
                    Some(now + grace)
                }
                _ => None,
            }
        };
        // Told again when it is no longer expected.
        if let Some(until) = gone {
            self.fleet.arm(until);
        }
        self.fleet.changed();
    }
}

impl Members {
    /// Forgets the Envoys gone whose grace is over.
    fn forget_absent(&mut self, now: Instant) {
        while self.absent.front().is_some_and(|(_, until)| *until <= now) {
            self.absent.pop_front();
        }
    }
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let members = self.lock();
        f.debug_struct("Fleet")
            .field("live", &members.live.len())
            .field("absent", &members.absent.len())
            .finish()
    }
}

impl Default for Fleet {
    fn default() -> Self {
        Self::new(DEFAULT_ABSENCE_GRACE)
    }
}

impl Fleet {
    /// A fleet whose Envoys stay expected `grace` after they disconnect,
    /// and are left out when they do not answer within
    /// [`DEFAULT_ANSWER_DEADLINE`].
    pub fn new(grace: Duration) -> Self {
        Self::with_answer_deadline(grace, DEFAULT_ANSWER_DEADLINE)
    }

    /// [`Fleet::new`], its streams left out when they wait on their Envoy
    /// longer than `answer_deadline`.
    pub fn with_answer_deadline(grace: Duration, answer_deadline: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                members: Mutex::new(Members::default()),
                changes: watch::channel(0).0,
                grace,
                answer_deadline,
                alarm: Mutex::new(Alarm {
                    armed: None,
                    last_rung: Instant::now(),
                }),
            }),
        }
    }

    /// A member started waiting on its Envoy at `since`: the fleet looks
    /// again once that wait passes the answer deadline. One timer for the
    /// fleet (waits start later and later, so it rings first, and arms
    /// itself again for the next wait to pass, or grace to end).
    pub(crate) fn waiting_from(&self, since: Instant) {
        self.arm(since + self.inner.answer_deadline);
    }

    /// Rings at `at`, unless armed to ring before.
    fn arm(&self, at: Instant) {
        let mut alarm = self.inner.alarm.lock().unwrap_or_else(PoisonError::into_inner);
        if alarm.armed.is_some_and(|armed| armed <= at) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        alarm.armed = Some(at);
        let fleet = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            tokio::time::sleep_until(at).await;
            if let Some(inner) = Weak::upgrade(&fleet) {
                Fleet { inner }.ring();
            }
        });
    }

    /// Tells the change if a wait passed the answer deadline, or an Envoy
    /// gone its grace, since the last ring, and arms the alarm for the next.
    fn ring(&self) {
        let now = Instant::now();
        let last = {
            let mut alarm = self.inner.alarm.lock().unwrap_or_else(PoisonError::into_inner);
            if alarm.armed.is_some_and(|armed| armed <= now) {
                alarm.armed = None;
            }
            std::mem::replace(&mut alarm.last_rung, now)
        };
        let (members, absent): (Vec<Arc<dyn Member>>, Vec<Instant>) = {
            let mut members = self.lock();
            let absent = members.absent.iter().map(|(_, until)| *until).collect();
            members.forget_absent(now);
            (members.live.values().cloned().collect(), absent)
        };
        let waits = members
            .iter()
            .filter_map(|member| member.oldest_wait())
            .map(|since| since + self.inner.answer_deadline);
        let (mut passed, mut next) = (false, None::<Instant>);
        for deadline in waits.chain(absent) {
            if deadline <= now {
                passed |= deadline > last;
            } else {
                next = Some(next.map_or(deadline, |next| next.min(deadline)));
            }
        }
        if passed {
            self.changed();
        }
        if let Some(next) = next {
            self.arm(next);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Members> {
        // Each update is one step: the state is consistent after a panic.
        self.inner.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `member` joins until the membership is dropped.
    pub(crate) fn join(&self, member: Arc<dyn Member>) -> Membership {
        let id = {
            let mut members = self.lock();
            members.next += 1;
            let id = members.next;
            members.live.insert(id, member);
            id
        };
        self.changed();
        Membership {
            fleet: self.clone(),
            id,
        }
    }

    /// A member's Envoy answered (or anything else a status may follow).
    pub fn changed(&self) {
        self.inner.changes.send_modify(|count| *count += 1);
    }

    /// Changes as they happen: whoever waits for [`Fleet::applied`] follows them.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// How many Envoys are expected: the streams open, and the Envoys gone
    /// within their grace.
    pub fn envoys(&self) -> usize {
        let mut members = self.lock();
        members.forget_absent(Instant::now());
        let live: Vec<Option<String>> = members.live.values().map(|member| member.node()).collect();
        let absent = members
            .absent
            .iter()
            .filter(|(node, _)| !live.iter().any(|live| live.as_deref() == Some(node)))
            .count();
        live.len() + absent
    }

    /// What each node's streams answered so far (one report per node id,
    /// `(no node id)` for streams that gave none), in node id order: at
    /// most [`MAX_REPORTED_NODES`], the others merged into [`OTHER_NODES`].
    /// Only the streams open: a node gone is no longer reported.
    pub fn reports_by_node(&self) -> Vec<(String, Report)> {
        let members: Vec<Arc<dyn Member>> = self.lock().live.values().cloned().collect();
        let mut by_node: BTreeMap<String, Report> = BTreeMap::new();
        for report in members.iter().map(|member| member.report()) {
            let node = report.node.clone().unwrap_or_else(|| NO_NODE_ID.to_owned());
            by_node
                .entry(node.clone())
                .or_insert_with(|| Report {
                    node: Some(node),
                    ..Report::default()
                })
                .merge(report);
        }
        let mut reports: Vec<(String, Report)> = Vec::with_capacity(by_node.len().min(MAX_REPORTED_NODES + 1));
        let mut other: Option<Report> = None;
        for (node, report) in by_node {
            if reports.len() < MAX_REPORTED_NODES {
                reports.push((node, report));
            } else {
                other
                    .get_or_insert_with(|| Report {
                        node: Some(OTHER_NODES.to_owned()),
                        ..Report::default()
                    })
                    .merge(report);
            }
        }
        reports.extend(other.map(|report| (OTHER_NODES.to_owned(), report)));
        reports
    }

    /// What the fleet says of a change that `needs` these: every Envoy
    /// expected (the streams serving a type needed, and the Envoys gone
    /// within their grace) holds them, or some are waited for, or one
    /// refused them. The rule for refusals: an Envoy that refused a
    /// resource is left out (named in `left_out`) while another Envoy holds
    /// that resource or is yet to answer it; the change is
    /// [`Applied::Refused`] only when every Envoy that answered it refused
    /// it.
    pub fn applied(&self, needs: &[Need]) -> Applied {
        let mut members = self.lock();
        let now = Instant::now();
        members.forget_absent(now);
        // What each stream's Envoy says of each need, in the order they
        // joined, and whether it waits on its Envoy past the deadline for one
        // it does not hold yet.
        let deadline = self.inner.answer_deadline;
        let silent = |member: &Arc<dyn Member>, need: &Need| {
            member
                .waiting_since(need.type_url)
                .is_some_and(|since| since + deadline <= now)
        };
        let answers: Vec<(Option<String>, Vec<Holds>, bool)> = members
            .live
            .values()
            .map(|member| {
                let holds: Vec<Holds> = needs.iter().map(|need| member.holds(need)).collect();
                let silent = needs
                    .iter()
                    .zip(&holds)
                    .any(|(need, holds)| *holds == Holds::NotYet && silent(member, need));
                (member.node(), holds, silent)
            })
            .collect();
        // Whether an Envoy answering holds need `index`, or is yet to answer it.
        let answered = |index: usize| {
            answers
                .iter()
                .any(|(_, holds, silent)| holds[index] == Holds::Yes || (holds[index] == Holds::NotYet && !silent))
        };
        let (mut envoys, mut waiting) = (0, Vec::new());
        // Each left out, and whether for not answering.
        let mut left_out: Vec<(String, bool)> = Vec::new();
        let mut first_refusal = None;
        for (node, holds, silent) in &answers {
            let named = || node.clone().unwrap_or_else(|| NO_NODE_ID.to_owned());
            if let Some((index, Holds::Refused(error))) = holds
                .iter()
                .enumerate()
                .find(|(_, holds)| matches!(holds, Holds::Refused(_)))
            {
                let need = &needs[index];
                let refused = Applied::Refused {
                    envoy: named(),
                    resource: format!("{} {}", short_type(need.type_url), need.name),
                    error: error.clone(),
                };
                if !answered(index) {
                    return refused;
                }
                left_out.push((format!("{} (refused it)", named()), false));
                first_refusal.get_or_insert(refused);
                continue;
            }
            if holds.iter().all(|holds| *holds == Holds::NotServed) {
                continue;
            }
            if *silent {
                left_out.push((format!("{} (not answering)", named()), true));
                continue;
            }
            envoys += 1;
            if holds.contains(&Holds::NotYet) {
                waiting.push(named());
            }
        }
        for (node, _) in &members.absent {
            if !answers.iter().any(|(live, _, _)| live.as_ref() == Some(node)) {
                envoys += 1;
                waiting.push(format!("{node} (disconnected)"));
            }
        }
        if envoys == 0 && left_out.iter().any(|(_, silent)| *silent) {
            // Nobody else to count: they are waited for, named so.
            let (waiting, refusers): (Vec<_>, Vec<_>) = left_out.into_iter().partition(|(_, silent)| *silent);
            return Applied::Pending {
                envoys: waiting.len(),
                waiting: waiting.into_iter().map(|(envoy, _)| envoy).collect(),
                left_out: refusers.into_iter().map(|(envoy, _)| envoy).collect(),
            };
        }
        let left_out: Vec<String> = left_out.into_iter().map(|(envoy, _)| envoy).collect();
        if envoys == 0 {
            // Each refused what another took: a refusal all the same.
            return first_refusal.unwrap_or(Applied::NoEnvoy);
        }
        if waiting.is_empty() {
            return Applied::All { envoys, left_out };
        }
        Applied::Pending {
            waiting,
            envoys,
            left_out,
        }
    }
}

/// `RouteConfiguration` of `type.googleapis.com/envoy.config.route.v3.RouteConfiguration`.
fn short_type(type_url: &str) -> &str {
    type_url.rsplit('.').next().unwrap_or(type_url)
}

#[cfg(test)]
mod tests;
