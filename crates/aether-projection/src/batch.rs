//! The one-off projection of a whole set over flat vectors: objects sorted
//! by key, host claims grouped by host, then one pass that writes the output
//! in key order. Cheaper than filling the incremental structure's ordered
//! maps only to read them once. It shares no dedup code with [`Projector`](crate::Projector),
//! so the property test that compares the two checks each against the other.

use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, HashSet};

use aether_api::validate::Violation;

use crate::config::ProjectionConfig;
use crate::envoy;
use crate::input::VirtualHostObject;
use crate::projector::ProjectError;
use crate::route_table::RouteTable;
use crate::snapshot::{Dependency, HostConflict, LeftOut, LeftOutReason, Report, RoutesLeftOut, Snapshot};
use crate::tls::{self, TlsSecret};
use crate::validation;

/// Projects a set of VirtualHost objects in one go. Takes objects or
/// references to them.
///
/// ```
/// use aether_projection::{ProjectionConfig, VirtualHostObject, project};
///
/// let object: VirtualHostObject = serde_json::from_value(serde_json::json!({
///     "namespace": "default", "name": "api",
///     "spec": {
///         "hosts": ["api.example.com"],
///         "routes": [{"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}}]
///     }
/// })).unwrap();
/// let snapshot = project(vec![object], &ProjectionConfig::default()).unwrap();
/// let virtual_host = &snapshot.route_configuration().unwrap().virtual_hosts[0];
/// assert_eq!(virtual_host.name, "default/api");
/// assert_eq!(virtual_host.domains, ["api.example.com"]);
/// assert_eq!(snapshot.dependencies[0].ports, [8080]);
/// ```
pub fn project<O: Borrow<VirtualHostObject>>(
    objects: impl IntoIterator<Item = O>,
    config: &ProjectionConfig,
) -> Result<Snapshot, ProjectError> {
    let input: Vec<O> = objects.into_iter().collect();
    // Sorting references moves 8 bytes per swap instead of a whole object.
    let mut objects: Vec<&VirtualHostObject> = input.iter().map(Borrow::borrow).collect();
    objects.sort_unstable_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    if let Some(pair) = objects
        .windows(2)
        .find(|pair| pair[0].namespace == pair[1].namespace && pair[0].name == pair[1].name)
    {
        return Err(ProjectError::DuplicateObject(pair[0].key()));
    }
    let problems: Vec<Vec<Violation>> = objects.iter().map(|object| validation::problems(object)).collect();

    // Every claim of a valid object, grouped by host. Objects are in key
    // order, so the index breaks ties of age by namespace/name: the rank is
    // (untimed, created, index), the same order as `Rank`. Grouping by hash
    // rather than sorting all claims keeps this linear; only contested hosts
    // (a few) are sorted, for the report.
    let mut claims: HashMap<Cow<'_, str>, Vec<Claim>> = HashMap::with_capacity(objects.len());
    for (index, object) in objects.iter().enumerate() {
        if problems[index].is_empty() {
            let created = object.creation_timestamp;
            for (position, host) in object.spec.hosts.iter().enumerate() {
                let host = if host.bytes().any(|b| b.is_ascii_uppercase()) {
                    Cow::Owned(host.to_ascii_lowercase())
                } else {
                    Cow::Borrowed(host.as_str())
                };
                claims.entry(host).or_default().push(Claim {
                    rank: (created.is_none(), created, index),
                    position,
                });
            }
        }
    }

    // Which host positions each object wins (a valid spec has at most 16
    // hosts; a u64 mask leaves room), and the conflicts, by host then rank.
    let mut won = vec![0u64; objects.len()];
    let mut contested = Vec::new();
    for (host, group) in &mut claims {
        if group.len() > 1 {
            group.sort_unstable_by_key(|claim| claim.rank);
            contested.push((host, &*group));
        }
        let winner = &group[0];
        won[winner.rank.2] |= 1 << winner.position;
    }
    contested.sort_unstable_by_key(|(host, _)| *host);
    let mut conflicts = Vec::new();
    for (host, group) in contested {
        let winner = objects[group[0].rank.2].key();
        conflicts.extend(group[1..].iter().map(|loser| HostConflict {
            host: host.clone().into_owned(),
            winner: winner.clone(),
            loser: objects[loser.rank.2].key(),
        }));
    }

    let retry = envoy::retry_policy(&config.retry);
    let mut routes = RouteTable::new(&config.route_configuration_name);
    // Sets by hash, sorted once at the end: many routes share few backends,
    // and sorting every route's pair would be the one O(routes log routes).
    let mut dependencies: HashSet<(&str, u32)> = HashSet::new();
    let mut tls_secrets = HashSet::new();
    let mut left_out = Vec::new();
    let mut routes_left_out = Vec::new();
    let mut served = Vec::new();
    for ((object, problems), won) in objects.iter().zip(problems).zip(won) {
        if !problems.is_empty() {
            left_out.push(LeftOut {
                object: object.key(),
                reason: LeftOutReason::of_problems(problems),
            });
            continue;
        }
        if won == 0 {
            left_out.push(LeftOut {
                object: object.key(),
                reason: LeftOutReason::NoHostsLeft,
            });
            continue;
        }
        let domains: Vec<String> = object
            .spec
            .hosts
            .iter()
            .enumerate()
            .filter(|(position, _)| won & (1 << position) != 0)
            .map(|(_, host)| host.to_ascii_lowercase())
            .collect();
        let (encoded, problems) = envoy::encoded_routes(&object.spec, retry.as_ref());
        if !problems.is_empty() {
            routes_left_out.push(RoutesLeftOut {
                object: object.key(),
                problems,
            });
        }
        let key = object.key();
        routes.insert(
            key.clone(),
            envoy::virtual_host_entry(&key.to_string(), &domains, &encoded),
        );
        dependencies.extend(object.spec.routes.iter().flat_map(envoy::route_backends));
        let secret = TlsSecret::of(object);
        tls_secrets.extend(secret.clone());
        served.push((object.key(), domains, secret));
    }
    let (tls_chains, plain_hosts_under_tls_wildcards) = tls::chains(
        served
            .iter()
            .map(|(key, domains, secret)| (key, domains.as_slice(), secret.as_ref())),
    );
    let mut dependencies: Vec<(String, u32)> = dependencies
        .into_iter()
        .map(|(service, port)| (service.to_owned(), port))
        .collect();
    dependencies.sort_unstable();
    let mut tls_secrets: Vec<TlsSecret> = tls_secrets.into_iter().collect();
    tls_secrets.sort_unstable();
    Ok(Snapshot {
        routes,
        route_configuration: Default::default(),
        dependencies: Dependency::group(&dependencies).into(),
        tls_secrets: tls_secrets.into(),
        tls_chains: tls_chains.into(),
        plain_hosts_under_tls_wildcards: plain_hosts_under_tls_wildcards.into(),
        report: Report {
            conflicts,
            left_out,
            routes_left_out,
            kept: Vec::new(),
        }
        .into(),
        report_index: Default::default(),
        chain_by_object: Default::default(),
    })
}

/// One valid object's claim on a host.
struct Claim {
    /// (untimed, created, object index): lower wins.
    rank: (bool, Option<jiff::Timestamp>, usize),
    /// The host's index in the object's `hosts`.
    position: usize,
}
