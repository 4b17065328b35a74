//! What tests of a projection read off a [`Snapshot`], written once for
//! this crate's tests and `aetherctl`'s.

use crate::Snapshot;

/// `(virtual host name, domains)` of the plain-HTTP route table, in order.
pub fn domains(snapshot: &Snapshot) -> Vec<(String, Vec<String>)> {
    snapshot
        .route_configuration()
        .expect("the snapshot has a route table")
        .virtual_hosts
        .iter()
        .map(|vh| (vh.name.clone(), vh.domains.clone()))
        .collect()
}

/// `(host, winner, loser)` of each host conflict, in the report's order.
pub fn conflicts(snapshot: &Snapshot) -> Vec<(String, String, String)> {
    snapshot
        .report
        .conflicts
        .iter()
        .map(|c| (c.host.clone(), c.winner.to_string(), c.loser.to_string()))
        .collect()
}
