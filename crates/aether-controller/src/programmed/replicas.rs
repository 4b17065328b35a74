//! What each replica's Envoys say of the objects in flight, shared through
//! the API server, so that the Lease holder's `Programmed` speaks for every
//! Envoy of the edge, not only those connected to it.
//!
//! Every replica serving xDS writes one ConfigMap, `aether-programmed-ID`
//! in the Lease's namespace ([`report_name`], labelled [`REPORT_LABEL`]),
//! holding its [`Report`]: how many Envoys it serves and, for each object
//! whose stored `Programmed` is not `True` at its generation (the objects
//! in flight: an edit, or every object at a first start), what its own
//! Envoys say at the generation it holds. It writes it when that changes,
//! at most every [`MIN_INTERVAL`], and at least every third of its
//! `ttlSeconds` ([`DEFAULT_TTL`], `--programmed-report-ttl-secs`); a report
//! not renewed within its time to live is the report of a replica gone,
//! and no longer counts.
//!
//! The holder watches the reports and combines ([`combine`]) its own
//! answer with those of the live replicas that serve Envoys: a refusal
//! is `Rejected` only when no other replica's Envoys applied the object
//! or are yet to answer, and otherwise its Envoy is left out, named
//! `(refused it)`, as the fleet of one replica does; an answer for an
//! older generation, or none yet, is `Pending` (that replica has not
//! served the generation yet); the Envoys programmed add up. A follower
//! that lags behind thus never confirms a generation it has not seen, and
//! a replica that dies holds objects `Pending` for its report's time to
//! live at most.
//!
//! Write rate: at most one write per replica per [`MIN_INTERVAL`] (0.5/s),
//! and one per heartbeat when idle (0.1/s at the default 30 s), whatever
//! the number of objects or Envoys: 100 Envoys over 3 replicas cost 0.3
//! writes/s idle and 1.5/s at most. A report carries at most [`MAX_ANSWERS`] objects
//! (`truncated` beyond, and the holder then counts those left out as not
//! answered), which keeps a ConfigMap under ~300 KiB; the rest are reported
//! as the first ones are programmed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{MAX_NAMED_ENVOYS, Programmed};

pub mod reporter;

/// The label every report carries (value [`REPORT_LABEL_VALUE`]).
pub const REPORT_LABEL: &str = "app.kubernetes.io/component";
/// The value of [`REPORT_LABEL`].
pub const REPORT_LABEL_VALUE: &str = "programmed-report";
/// The key of the report in the ConfigMap's `data`.
pub const REPORT_KEY: &str = "report.json";
/// A report not renewed for this long is a replica gone.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);
/// A replica writes its report at most this often.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);

/// How often a report of time to live `ttl` is renewed, changed or not.
pub fn heartbeat(ttl: Duration) -> Duration {
    ttl / 3
}

/// How often at most it is written.
pub fn min_interval(ttl: Duration) -> Duration {
    MIN_INTERVAL.min(heartbeat(ttl) / 2)
}
/// Objects a report carries at most.
pub const MAX_ANSWERS: usize = 2_000;

/// The ConfigMap holding replica `identity`'s report.
pub fn report_name(identity: &str) -> String {
    format!("aether-programmed-{identity}")
}

/// One replica's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The replica (its `--identity`).
    pub replica: String,
    /// When it was written.
    pub renew_time: Timestamp,
    /// How long it holds without a renewal.
    pub ttl_seconds: u64,
    /// Envoys connected to the replica now.
    pub envoys: usize,
    /// By `namespace/name`: what its Envoys say of the object.
    pub answers: BTreeMap<String, Answer>,
    /// Objects in flight were left out (beyond [`MAX_ANSWERS`]).
    pub truncated: bool,
}

/// What a replica's Envoys say of one object at one generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The generation the replica holds of it.
    pub generation: i64,
    /// What its Envoys say.
    pub programmed: Programmed,
}

impl Report {
    /// Whether it still holds at `now`.
    pub fn live(&self, now: Timestamp) -> bool {
        let ttl = i64::try_from(self.ttl_seconds).unwrap_or(i64::MAX);
        self.renew_time.as_second().saturating_add(ttl) > now.as_second()
    }
}

/// The holder's `Programmed` for `key` at `generation`: its `own` answer,
/// combined with the live `peers`' (see the module documentation).
pub fn combine(own: Programmed, key: &str, generation: i64, peers: &[&Report]) -> Programmed {
    if matches!(own, Programmed::NotObserved(_)) {
        return own;
    }
    let mut parts = vec![own];
    for peer in peers.iter().filter(|peer| peer.envoys > 0) {
        parts.push(match peer.answers.get(key) {
            Some(answer) if answer.generation == generation => answer.programmed.clone(),
            // Not seen at this generation yet, or left out of a full report.
            _ => Programmed::Pending {
                named: vec![format!("replica {}", peer.replica)],
                waiting: peer.envoys,
                envoys: peer.envoys,
                left_out: Vec::new(),
            },
        });
    }
    // The fleet's rule, across replicas: a refusal is the answer only when
    // no other replica's Envoys hold the object or are yet to answer;
    // otherwise the refuser is left out, named, as within one replica.
    let overruled = parts
        .iter()
        .any(|part| matches!(part, Programmed::Programmed { .. } | Programmed::Pending { .. }));
    let (mut envoys, mut waiting, mut named, mut left_out) = (0, 0, Vec::new(), Vec::new());
    let mut refusers = Vec::new();
    let mut any = false;
    for part in parts {
        match part {
            Programmed::Programmed {
                envoys: n,
                left_out: out,
            } => {
                (envoys, any) = (envoys + n, true);
                left_out.extend(out);
            }
            Programmed::Pending {
                named: names,
                waiting: w,
                envoys: n,
                left_out: out,
            } => {
                envoys += n;
                waiting += w;
                named.extend(names);
                left_out.extend(out);
                any = true;
            }
            Programmed::Rejected { .. } if !overruled => return part,
            Programmed::Rejected { envoy, .. } => refusers.push(format!("{envoy} (refused it)")),
            Programmed::NoEnvoy | Programmed::NotObserved(_) => {}
        }
    }
    left_out.extend(refusers);
    if !any {
        return Programmed::NoEnvoy;
    }
    // Each part names its first few already; together, the first few.
    left_out.truncate(MAX_NAMED_ENVOYS);
    if waiting == 0 {
        return Programmed::Programmed { envoys, left_out };
    }
    named.truncate(MAX_NAMED_ENVOYS);
    Programmed::Pending {
        named,
        waiting,
        envoys,
        left_out,
    }
}

/// The other replicas' reports, as last seen, shared by the watch that
/// reads them and the passes that combine them.
#[derive(Debug, Clone, Default)]
pub struct Peers {
    reports: Arc<Mutex<BTreeMap<String, Report>>>,
}

impl Peers {
    /// Sets (or, `None`, drops) the report of the ConfigMap `name`.
    pub fn put(&self, name: &str, report: Option<Report>) {
        let mut reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        match report {
            Some(report) => reports.insert(name.to_owned(), report),
            None => reports.remove(name),
        };
    }

    /// The reports live at `now`, but `identity`'s own.
    pub fn live(&self, identity: &str, now: Timestamp) -> Vec<Report> {
        let reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        reports
            .values()
            .filter(|report| report.replica != identity && report.live(now))
            .cloned()
            .collect()
    }

    /// Whether any report is held (then expiries are looked for).
    pub fn is_empty(&self) -> bool {
        self.reports.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }
}

#[cfg(test)]
mod tests;
