//! The status every VirtualHost should have, derived from a projection
//! snapshot, and the merge patch that sets it.
//!
//! The controller owns three condition types, written once with their
//! reasons in the proto ([`ConditionType`] and the reason enums; the API
//! reference's "Conditions", `generated/docs/virtualhost.md`): `Accepted`
//! ([`AcceptedReason`]), whether the edge serves the object as written;
//! `ResolvedRefs` ([`resolved_refs`]), whether its TLS secret could be
//! served; and `Programmed` ([`crate::programmed`]), whether the edge's Envoys
//! serve its current generation. Conditions of other types are kept as they
//! are; `lastTransitionTime` changes only when `status` flips (as
//! `meta.SetStatusCondition` does).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use aether_api::config::v1::{AcceptedReason, Condition, ConditionType, VirtualHostStatus};
use aether_api::validate::Violation;
use aether_projection::{LeftOutReason, ObjectKey, Snapshot, TlsSecret};
use jiff::Timestamp;
use prost::Message as _;
use serde_json::{Value, json};

use crate::programmed;
use crate::text::truncate;
use crate::tls::Resolutions;

pub mod resolved_refs;

/// The condition type the controller sets.
pub const ACCEPTED: &str = ConditionType::Accepted.condition_name();
/// Reason: served as written.
pub const REASON_ACCEPTED: &str = AcceptedReason::Accepted.condition_name();
/// Reason: an older object holds one or more of the hosts.
pub const REASON_HOST_CONFLICT: &str = AcceptedReason::HostConflict.condition_name();
/// Reason: served, but some routes are left out: their regular
/// expressions are ones Envoy would refuse (as Gateway API says of a route
/// partly invalid).
pub const REASON_PARTIALLY_INVALID: &str = AcceptedReason::PartiallyInvalid.condition_name();
/// Reason: the object breaks the API's rules.
pub const REASON_INVALID: &str = AcceptedReason::Invalid.condition_name();
/// Reason: the object uses a value (or a field it cannot do without) from a
/// newer API version than this build's; upgrading serves it.
pub const REASON_UNSUPPORTED: &str = AcceptedReason::Unsupported.condition_name();
/// The proto's bound on `Condition.message`.
pub const MAX_MESSAGE_CHARS: usize = 32_768;

/// What the controller last saw of an object: what its status is computed
/// from and compared with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    /// `metadata.generation` (0 where there is none, as for local files).
    pub generation: i64,
    /// The status as stored; `None` when the object has none yet.
    pub status: Option<VirtualHostStatus>,
    /// What the edge's Envoys say of `generation`; `None` (aetherctl,
    /// which sees no Envoy) leaves `Programmed` as stored.
    pub programmed: Option<programmed::Programmed>,
}

/// A status to write for one object.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusPatch {
    /// The object.
    pub key: ObjectKey,
    /// The whole desired status.
    pub status: VirtualHostStatus,
}

impl StatusPatch {
    /// The JSON merge patch body for the `/status` subresource. Every field
    /// the controller owns is written explicitly: `routeCount: 0` must be
    /// sent to clear an earlier count (the Kubernetes JSON form would omit a
    /// zero), and `conditions` is a list, which a merge patch replaces whole.
    pub fn merge_patch(&self) -> Value {
        let conditions: Vec<Value> = self
            .status
            .conditions
            .iter()
            .map(|condition| serde_json::to_value(condition).unwrap_or(Value::Null))
            .collect();
        json!({"status": {"conditions": conditions, "routeCount": self.status.route_count}})
    }

    /// [`StatusPatch::merge_patch`], each condition of a type the
    /// controller does not own ([`OWNED_CONDITIONS`]) sent as `stored` (the
    /// stored `status.conditions`, as written) holds it: a merge patch
    /// replaces the list whole, and the typed status holds only the fields
    /// this build knows, so another owner's condition (a newer writer's,
    /// say) would otherwise lose the rest.
    pub fn merge_patch_keeping(&self, stored: &[Value]) -> Value {
        let mut patch = self.merge_patch();
        if let Some(conditions) = patch["status"]["conditions"].as_array_mut() {
            for condition in conditions {
                let owned = condition["type"]
                    .as_str()
                    .is_some_and(|kind| OWNED_CONDITIONS.contains(&kind));
                if owned {
                    continue;
                }
                if let Some(as_stored) = stored.iter().find(|c| c["type"] == condition["type"]) {
                    *condition = as_stored.clone();
                }
            }
        }
        patch
    }
}

/// The condition types the controller writes; it keeps the others as
/// stored.
pub const OWNED_CONDITIONS: [&str; 3] = [ACCEPTED, resolved_refs::RESOLVED_REFS, programmed::PROGRAMMED];

/// How one object came out of the projection.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    accepted: bool,
    reason: &'static str,
    message: String,
    route_count: u32,
}

/// What the statuses read of an Envoy `VirtualHost`: its name, domains and
/// number of routes. prost skips every other field (and each route's
/// content), so this decodes in a fraction of the time of envoy-types'
/// whole message, which a pass at 50,000 objects would otherwise spend most
/// of its status work on. Tags are Envoy's; a test compares this with the
/// full decode.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct VirtualHostOutline {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, repeated, tag = "2")]
    pub domains: Vec<String>,
    #[prost(message, repeated, tag = "3")]
    pub routes: Vec<Skipped>,
}

/// A message whose content is skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Skipped {}

/// The snapshot indexed by object.
pub(crate) struct Index<'a> {
    /// Object left out for its problems → (the reason, the problems).
    invalid: HashMap<&'a ObjectKey, (&'static str, &'a [Violation])>,
    /// Loser → (host, winner), in the report's order (by host).
    lost: HashMap<&'a ObjectKey, Vec<(&'a str, &'a ObjectKey)>>,
    /// Served object → the problems of its routes left out.
    routes_left_out: HashMap<&'a ObjectKey, &'a [Violation]>,
    /// `namespace/name` → (domains, route count) of the served objects.
    served: HashMap<String, (Vec<String>, u32)>,
    /// Served object → the secret its hosts are served with.
    secret_of: HashMap<&'a ObjectKey, &'a TlsSecret>,
    /// Object served as its previous version → (the reason its newest is
    /// left out, the problems, the generation served).
    kept: HashMap<&'a ObjectKey, (&'static str, &'a [Violation], i64)>,
}

impl<'a> Index<'a> {
    /// The snapshot indexed for the objects `keys` (what a status needs of
    /// each), each looked up rather than found by walking every list, so
    /// that deriving a handful of statuses among 50,000 objects does not
    /// cost what deriving all of them does.
    pub(crate) fn new(
        snapshot: &'a Snapshot,
        keys: &BTreeMap<ObjectKey, Observed>,
    ) -> Result<Self, prost::DecodeError> {
        // The route count is read from what the edge is given, not from the
        // spec, so ROUTES shows what is served.
        let entry = |host: VirtualHostOutline| {
            let routes = u32::try_from(host.routes.len()).unwrap_or(u32::MAX);
            (host.name, (host.domains, routes))
        };
        let mut invalid = HashMap::new();
        let mut lost: HashMap<&ObjectKey, Vec<(&str, &ObjectKey)>> = HashMap::new();
        let mut routes_left_out = HashMap::new();
        let mut served = HashMap::new();
        let mut secret_of = HashMap::new();
        let mut kept = HashMap::new();
        // Each object looked up (by binary search, or in an index the
        // snapshot shares between passes), never a walk of every object.
        for key in keys.keys() {
            if let Some(left_out) = snapshot.left_out(key) {
                let reason = match left_out.reason {
                    LeftOutReason::Invalid { .. } => Some(REASON_INVALID),
                    LeftOutReason::Unsupported { .. } => Some(REASON_UNSUPPORTED),
                    LeftOutReason::NoHostsLeft => None,
                };
                if let (Some(reason), Some(problems)) = (reason, left_out.reason.problems()) {
                    invalid.insert(&left_out.object, (reason, problems));
                }
            }
            if let Some(previous) = snapshot.kept(key)
                && let Some(problems) = previous.newer.problems()
            {
                let reason = match previous.newer {
                    LeftOutReason::Unsupported { .. } => REASON_UNSUPPORTED,
                    _ => REASON_INVALID,
                };
                kept.insert(&previous.object, (reason, problems, previous.generation));
            }
            for conflict in snapshot.conflicts_lost_by(key) {
                lost.entry(&conflict.loser)
                    .or_default()
                    .push((conflict.host.as_str(), &conflict.winner));
            }
            if let Some(routes) = snapshot.routes_left_out(key) {
                routes_left_out.insert(&routes.object, routes.problems.as_slice());
            }
            if let Some(virtual_host) = snapshot.virtual_host(key) {
                let (name, outline) = entry(VirtualHostOutline::decode(virtual_host.as_ref())?);
                served.insert(name, outline);
            }
            if let Some(chain) = snapshot.tls_chain_of(key) {
                secret_of.insert(&chain.object, &chain.secret);
            }
        }
        Ok(Self {
            invalid,
            lost,
            routes_left_out,
            served,
            secret_of,
            kept,
        })
    }

    /// For a served object, `Some(its secret)` (`Some(None)`: it has no
    /// `tls`); `None` for an object the edge does not serve.
    fn served_secret(&self, key: &ObjectKey) -> Option<Option<&'a TlsSecret>> {
        self.served
            .contains_key(&key.to_string())
            .then(|| self.secret_of.get(key).copied())
    }

    /// How `key` came out: for an object served as its previous version,
    /// why its newest is left out, then how the previous one is served
    /// (`routeCount` counts its routes): `Accepted=False`, since what was
    /// last written is not served.
    fn verdict(&self, key: &ObjectKey) -> Verdict {
        let verdict = self.served_verdict(key);
        let Some(&(reason, problems, generation)) = self.kept.get(key) else {
            return verdict;
        };
        let generation = if generation > 0 {
            format!(" (generation {generation})")
        } else {
            String::new()
        };
        Verdict {
            accepted: false,
            reason,
            message: format!(
                "{}; serving the previous version{generation}: {}",
                left_out(problems),
                verdict.message
            ),
            route_count: verdict.route_count,
        }
    }

    /// How `key`'s version held by the projection comes out.
    fn served_verdict(&self, key: &ObjectKey) -> Verdict {
        if let Some(&(reason, problems)) = self.invalid.get(key) {
            return Verdict {
                accepted: false,
                reason,
                message: left_out(problems),
                route_count: 0,
            };
        }
        let served = self.served.get(&key.to_string());
        let lost = self.lost.get(key);
        let mut message = String::new();
        if let Some(lost) = lost {
            for (i, (host, winner)) in lost.iter().enumerate() {
                let sep = if i == 0 { "" } else { "; " };
                let _ = write!(message, "{sep}host {host} is served by the older VirtualHost {winner}");
            }
        }
        let mut routes_left_out = String::new();
        for problem in self.routes_left_out.get(key).copied().unwrap_or_default() {
            let _ = write!(
                routes_left_out,
                "route left out: {}: {} ({}); ",
                problem.field_path, problem.message, problem.rule_id
            );
        }
        match (served, lost) {
            (Some((domains, routes)), None) => Verdict {
                accepted: true,
                reason: if routes_left_out.is_empty() {
                    REASON_ACCEPTED
                } else {
                    REASON_PARTIALLY_INVALID
                },
                message: format!("{routes_left_out}serving {}", domains.join(", ")),
                route_count: *routes,
            },
            (Some((domains, routes)), Some(_)) => Verdict {
                accepted: true,
                reason: REASON_HOST_CONFLICT,
                message: format!("{message}; {routes_left_out}still serving {}", domains.join(", ")),
                route_count: *routes,
            },
            (None, _) => Verdict {
                accepted: false,
                reason: REASON_HOST_CONFLICT,
                message: if message.is_empty() {
                    // Not reachable from a consistent snapshot; said plainly if it is.
                    "left out: no host left".to_owned()
                } else {
                    format!("left out: {message}")
                },
                route_count: 0,
            },
        }
    }
}

/// `left out: ` and every problem, with its field path and rule.
fn left_out(problems: &[Violation]) -> String {
    let mut message = String::from("left out: ");
    for (i, problem) in problems.iter().enumerate() {
        let sep = if i == 0 { "" } else { "; " };
        let _ = write!(
            message,
            "{sep}{}: {} ({})",
            problem.field_path, problem.message, problem.rule_id
        );
    }
    message
}

/// The time statuses are derived at.
pub(crate) struct Now {
    /// As `lastTransitionTime` holds it: whole seconds, as Kubernetes
    /// stores times, so that a round trip through the API server changes
    /// nothing.
    stamp: String,
    /// In Unix seconds, which certificates are judged at.
    second: i64,
}

impl Now {
    pub(crate) fn new(now: Timestamp) -> Self {
        Self {
            stamp: format!("{now:.0}"),
            second: now.as_second(),
        }
    }
}

/// The status `key` should have, given what it has now. `now` stamps a
/// condition whose status flips (or that first appears). With `tls`, the
/// `ResolvedRefs` condition is set too ([`resolved_refs`], its certificate
/// judged at `now`); without (aetherctl, which reads no secrets), it is
/// left as stored.
pub(crate) fn desired(
    index: &Index<'_>,
    key: &ObjectKey,
    observed: &Observed,
    now: &Now,
    tls: Option<&Resolutions>,
) -> VirtualHostStatus {
    let stamp = now.stamp.as_str();
    let verdict = index.verdict(key);
    let mut conditions = observed.status.clone().unwrap_or_default().conditions;
    put_condition(
        &mut conditions,
        Condition {
            r#type: ACCEPTED.to_owned(),
            status: if verdict.accepted { "True" } else { "False" }.to_owned(),
            observed_generation: observed.generation,
            last_transition_time: String::new(),
            reason: verdict.reason.to_owned(),
            message: verdict.message,
        },
        stamp,
    );
    if let Some(tls) = tls {
        match resolved_refs::resolved_refs(index.served_secret(key), tls, now.second) {
            Some((status, reason, message)) => put_condition(
                &mut conditions,
                Condition {
                    r#type: resolved_refs::RESOLVED_REFS.to_owned(),
                    status: status.to_owned(),
                    observed_generation: observed.generation,
                    last_transition_time: String::new(),
                    reason: reason.to_owned(),
                    message,
                },
                stamp,
            ),
            None => conditions.retain(|c| c.r#type != resolved_refs::RESOLVED_REFS),
        }
    }
    if let Some(answer) = &observed.programmed {
        let (status, reason, message) = programmed::condition(verdict.accepted, answer);
        put_condition(
            &mut conditions,
            Condition {
                r#type: programmed::PROGRAMMED.to_owned(),
                status: status.to_owned(),
                observed_generation: observed.generation,
                last_transition_time: String::new(),
                reason: reason.to_owned(),
                message,
            },
            stamp,
        );
    }
    VirtualHostStatus {
        conditions,
        route_count: verdict.route_count,
    }
}

/// Sets `condition` in `conditions` (replacing the one of its type, or
/// appending it), its message cut to the proto's bound; its
/// `lastTransitionTime` is kept while its status stays, `now` when it
/// flips or appears (as `meta.SetStatusCondition` does).
fn put_condition(conditions: &mut Vec<Condition>, mut condition: Condition, now: &str) {
    let previous = conditions.iter().position(|c| c.r#type == condition.r#type);
    condition.last_transition_time = match previous.map(|i| &conditions[i]) {
        Some(old) if old.status == condition.status && !old.last_transition_time.is_empty() => {
            old.last_transition_time.clone()
        }
        _ => now.to_owned(),
    };
    condition.message = truncate(condition.message, MAX_MESSAGE_CHARS);
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

/// The status every object of `observed` should have, in key order. With
/// `tls`, the `ResolvedRefs` condition is set too ([`resolved_refs`]);
/// without (aetherctl, which reads no secrets), it is left as stored.
pub fn statuses(
    snapshot: &Snapshot,
    tls: Option<&Resolutions>,
    observed: &BTreeMap<ObjectKey, Observed>,
    now: Timestamp,
) -> Result<Vec<StatusPatch>, prost::DecodeError> {
    let index = Index::new(snapshot, observed)?;
    let now = Now::new(now);
    Ok(observed
        .iter()
        .map(|(key, observed)| StatusPatch {
            key: key.clone(),
            status: desired(&index, key, observed, &now, tls),
        })
        .collect())
}

/// Every status that differs from what is stored, in key order.
pub fn patches(
    snapshot: &Snapshot,
    tls: Option<&Resolutions>,
    observed: &BTreeMap<ObjectKey, Observed>,
    now: Timestamp,
) -> Result<Vec<StatusPatch>, prost::DecodeError> {
    let mut all = statuses(snapshot, tls, observed, now)?;
    all.retain(|patch| observed[&patch.key].status.as_ref() != Some(&patch.status));
    Ok(all)
}

#[cfg(test)]
mod tests;
