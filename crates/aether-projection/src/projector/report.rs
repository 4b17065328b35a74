//! What a projector hands out: the snapshot, with the report of what was not
//! projected as written.

use std::sync::Arc;

use super::{Entry, Projector};
use crate::snapshot::{Dependency, HostConflict, Lazy, LeftOut, LeftOutReason, Report, RoutesLeftOut, Snapshot};
use crate::tls;

impl Projector {
    /// The current output. The route table is shared whole (O(1)); the
    /// other parts are the ones the last snapshot shared, unless a change
    /// since can have altered them, in which case they are read again from
    /// their sorted maps.
    pub fn snapshot(&self) -> Snapshot {
        let derived = &self.derived;
        let (tls_chains, plain_hosts_under_tls_wildcards) = derived
            .tls
            .get_or_init(|| {
                let (chains, plain) = tls::chains(self.included.iter().filter_map(|key| match self.objects.get(key) {
                    Some(Entry::Valid(valid)) => Some((key, valid.domains.as_slice(), valid.secret.as_ref())),
                    _ => None,
                }));
                (chains.into(), plain.into())
            })
            .clone();
        let (report, report_index) = derived
            .report
            .get_or_init(|| (Arc::new(self.report()), Lazy::default()))
            .clone();
        Snapshot {
            routes: self.table.clone(),
            tls_routes: self.tls_table.clone(),
            route_configuration: Default::default(),
            dependencies: derived
                .dependencies
                .get_or_init(|| Dependency::group(self.dependencies.keys()).into())
                .clone(),
            tls_secrets: derived
                .tls_secrets
                .get_or_init(|| self.secrets.keys().cloned().collect())
                .clone(),
            tls_chains,
            plain_hosts_under_tls_wildcards,
            report,
            report_index,
        }
    }

    /// What was not projected as written: conflicts, objects left out,
    /// routes left out.
    fn report(&self) -> Report {
        let routes_left_out = self
            .included
            .iter()
            .filter_map(|key| match self.objects.get(key) {
                Some(Entry::Valid(valid)) if !valid.routes_left_out.is_empty() => Some(RoutesLeftOut {
                    object: key.clone(),
                    problems: valid.routes_left_out.clone(),
                }),
                _ => None,
            })
            .collect();
        let mut conflicts = Vec::new();
        for host in &self.contested {
            let Some(claimants) = self.claims.get(host) else {
                continue;
            };
            let mut ranked = claimants.iter();
            let Some(winner) = ranked.next() else { continue };
            conflicts.extend(ranked.map(|loser| HostConflict {
                host: host.clone(),
                winner: winner.key.clone(),
                loser: loser.key.clone(),
            }));
        }
        let mut left_out: Vec<LeftOut> = self
            .invalid
            .iter()
            .filter_map(|key| match self.objects.get(key) {
                Some(Entry::Invalid(problems)) => Some(LeftOut {
                    object: key.clone(),
                    reason: LeftOutReason::of_problems(problems.clone()),
                }),
                _ => None,
            })
            .chain(self.hostless.iter().map(|key| LeftOut {
                object: key.clone(),
                reason: LeftOutReason::NoHostsLeft,
            }))
            .collect();
        left_out.sort_by(|a, b| a.object.cmp(&b.object));
        Report {
            conflicts,
            left_out,
            routes_left_out,
            kept: self.kept.values().cloned().collect(),
        }
    }
}
