//! Each pass's `Programmed` answers: this replica's Envoys' (over xDS),
//! reported to the other replicas and combined with theirs.

use std::collections::{BTreeMap, HashSet};

use aether_projection::{ObjectKey, Snapshot};
use aether_xds::fleet::Applied;
use jiff::Timestamp;
use tokio::sync::watch;

use super::replicas::{self, reporter};
use super::{MAX_NAMED_ENVOYS, PROGRAMMED, Programmed};
use crate::status::Observed;
use crate::tls::Resolutions;
use crate::xds;

/// Why `Programmed` is `Unknown`: Envoy reads the files, and what it
/// applied of them is not seen.
const NOT_OBSERVED: &str = "Envoy reads its configuration from files: what it applied is not observed";

/// What `Programmed` keeps between passes.
#[derive(Default)]
pub(crate) struct Tracker {
    /// Objects the Envoys have not all applied (or refused, or none is
    /// connected): derived again when the fleet changes.
    pub(crate) awaiting: HashSet<ObjectKey>,
    /// With several replicas ([`replicas`]): where this one's report goes,
    /// the others' reports, and this one's identity.
    sharing: Option<(watch::Sender<Option<reporter::ReportBody>>, replicas::Peers, String)>,
    /// The objects in flight this replica's report carries.
    reportable: BTreeMap<ObjectKey, replicas::Answer>,
}

/// Whether `observed`'s stored `Programmed` is `True` at its generation.
fn programmed_at(observed: &Observed) -> bool {
    observed.status.as_ref().is_some_and(|status| {
        status.conditions.iter().any(|condition| {
            condition.r#type == PROGRAMMED
                && condition.status == "True"
                && condition.observed_generation == observed.generation
        })
    })
}

impl Tracker {
    /// Sends this replica's report through `sharing`, and combines the
    /// others' with its own answers; `identity` is this replica's.
    pub(crate) fn share_with_replicas(&mut self, sharing: &reporter::Sharing, identity: String) {
        self.sharing = Some((sharing.sender.clone(), sharing.peers.clone(), identity));
    }

    /// `key` is gone: nothing to await or report.
    pub(crate) fn forget(&mut self, key: &ObjectKey) {
        self.awaiting.remove(key);
        self.reportable.remove(key);
    }

    /// Sets each of `observed`'s `Programmed`: what `xds`'s fleet says of it
    /// in `snapshot` (not observed without xDS), combined with the live
    /// replicas' reports; sends this replica's report when it changed.
    pub(crate) fn fold(
        &mut self,
        xds: Option<&xds::Publisher>,
        snapshot: &Snapshot,
        resolutions: &Resolutions,
        observed: &mut BTreeMap<ObjectKey, Observed>,
    ) {
        let peers = self
            .sharing
            .as_ref()
            .map(|(_, peers, identity)| peers.live(identity, Timestamp::now()));
        let mut report_changed = false;
        for (key, observed) in observed.iter_mut() {
            let own = match xds {
                Some(publisher) => publisher.programmed(snapshot, resolutions, key),
                None => Programmed::NotObserved(NOT_OBSERVED.to_owned()),
            };
            if self.sharing.is_some() {
                let before = self.reportable.remove(key);
                if !programmed_at(observed) {
                    let answer = replicas::Answer {
                        generation: observed.generation,
                        programmed: own.clone(),
                    };
                    self.reportable.insert(key.clone(), answer);
                }
                report_changed |= before.as_ref() != self.reportable.get(key);
            }
            let programmed = match &peers {
                Some(peers) => {
                    let peers: Vec<&replicas::Report> = peers.iter().collect();
                    replicas::combine(own, &key.to_string(), observed.generation, &peers)
                }
                None => own,
            };
            if matches!(programmed, Programmed::Programmed { .. } | Programmed::NotObserved(_)) {
                self.awaiting.remove(key);
            } else {
                self.awaiting.insert(key.clone());
            }
            observed.programmed = Some(programmed);
        }
        if let (Some((sender, ..)), Some(publisher)) = (&self.sharing, xds)
            && (report_changed || sender.borrow().as_ref().map(|body| body.envoys) != Some(publisher.fleet().envoys()))
        {
            sender.send_replace(Some(reporter::ReportBody::new(
                publisher.fleet().envoys(),
                &self.reportable,
            )));
        }
    }
}

/// What the fleet's answer makes of an object's `Programmed` condition.
impl From<Applied> for Programmed {
    fn from(applied: Applied) -> Self {
        match applied {
            Applied::All { envoys, left_out } => Self::Programmed {
                envoys,
                left_out: named_few(left_out),
            },
            Applied::Pending {
                waiting,
                envoys,
                left_out,
            } => Self::Pending {
                // Counted before the names are cut to the first few.
                waiting: waiting.len(),
                named: waiting.into_iter().take(MAX_NAMED_ENVOYS).collect(),
                envoys,
                left_out: named_few(left_out),
            },
            Applied::Refused { envoy, resource, error } => Self::Rejected { envoy, resource, error },
            Applied::NoEnvoy => Self::NoEnvoy,
        }
    }
}

/// The first [`MAX_NAMED_ENVOYS`] of `envoys`, and how many more.
fn named_few(mut envoys: Vec<String>) -> Vec<String> {
    if envoys.len() > MAX_NAMED_ENVOYS {
        let more = envoys.len() - MAX_NAMED_ENVOYS;
        envoys.truncate(MAX_NAMED_ENVOYS);
        envoys.push(format!("and {more} more"));
    }
    envoys
}
