//! Random object sets with random secret references (valid, missing,
//! mismatched, expired), applied one after another to one running edge:
//! Envoy never rejects a listener, and every SNI gets exactly what the
//! projection and the secrets say (its owner's certificate, or a refused
//! handshake).

use std::collections::BTreeMap;

use aether_e2e::edge::{PATIENCE, projection};
use aether_e2e::{Edge, Mode, wait_until};
use aether_projection::covering_wildcards;
use aether_projection::listener::sds_secret_name;
use aether_testing::pki::{Issued, Leaf, TestCa, date_time_ymd, write_secret};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use crate::controller;
use crate::tls::{clusters, manifest};

/// Sets per test (each a change of a running edge).
const CASES: usize = 16;

const HOSTS: &[&str] = &[
    "api.example.com",
    "*.example.com",
    "shop.example.com",
    "*.shop.example.com",
    "a.b.example.com",
    "other.example.org",
];
/// Secret names: two good, and one of each fault.
const SECRETS: &[&str] = &["good-1", "good-2", "missing", "mismatched", "expired"];
const NAMESPACES: &[&str] = &["ns1", "ns2"];
const NAMES: &[&str] = &["v", "w", "x", "y", "z"];

/// The SNI that probes a host: itself, or a name only its wildcard covers.
fn probe(host: &str) -> String {
    host.strip_prefix("*.")
        .map_or_else(|| host.to_owned(), |suffix| format!("probe-z.{suffix}"))
}

/// One object: `(namespace, name, hosts, secret)`.
type Object = (String, String, Vec<String>, Option<String>);

fn objects() -> impl Strategy<Value = Vec<Object>> {
    let object = (
        prop::sample::select(NAMESPACES),
        prop::sample::select(NAMES),
        prop::sample::subsequence(HOSTS, 1..=3),
        prop::option::weighted(0.8, prop::sample::select(SECRETS)),
    )
        .prop_map(|(namespace, name, hosts, secret)| {
            (
                namespace.to_owned(),
                name.to_owned(),
                hosts.into_iter().map(str::to_owned).collect(),
                secret.map(str::to_owned),
            )
        });
    prop::collection::vec(object, 1..8).prop_map(|objects| {
        // One object per namespace/name.
        let by_key: BTreeMap<(String, String), Object> = objects
            .into_iter()
            .map(|object| ((object.0.clone(), object.1.clone()), object))
            .collect();
        by_key.into_values().collect()
    })
}

fn text(objects: &[Object]) -> String {
    objects
        .iter()
        .map(|(namespace, name, hosts, secret)| {
            let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
            manifest(namespace, name, &hosts, secret.as_deref())
        })
        .collect()
}

/// What Envoy must do for each probe: `Some(serial)` or `None` (refused),
/// as the projection's chains and the secrets' validity say, with Envoy's
/// most-specific-name-first SNI match.
fn expected(objects: &[Object], serials: &BTreeMap<String, String>) -> BTreeMap<String, Option<String>> {
    let snapshot = projection(&[&text(objects)]);
    let mut names: BTreeMap<String, Option<String>> = BTreeMap::new();
    for chain in snapshot.tls_chains.iter() {
        let secret = sds_secret_name(&chain.secret);
        let serial = secret.rsplit('/').next().and_then(|name| serials.get(name)).cloned();
        for name in &chain.server_names {
            names.insert(name.clone(), serial.clone());
        }
    }
    for name in snapshot.plain_hosts_under_tls_wildcards.iter() {
        names.insert(name.clone(), None);
    }
    HOSTS
        .iter()
        .map(|host| {
            let sni = probe(host);
            let outcome = std::iter::once(sni.clone())
                .chain(covering_wildcards(&sni))
                .find_map(|name| names.get(&name).cloned())
                .flatten();
            (sni, outcome)
        })
        .collect()
}

fn secrets(dir: &std::path::Path, good: &[(&str, &Issued)], other: &Issued, expired: &Issued) {
    for namespace in NAMESPACES {
        for (name, issued) in good {
            write_secret(dir, namespace, name, &issued.chain_pem, &issued.key_pem);
        }
        write_secret(dir, namespace, "mismatched", &good[0].1.chain_pem, &other.key_pem);
        write_secret(dir, namespace, "expired", &expired.chain_pem, &expired.key_pem);
    }
}

fn envoy_never_rejects_and_serves_what_the_secrets_allow(mode: Mode) {
    let ca = TestCa::new();
    let sans: Vec<&str> = HOSTS.to_vec();
    let good_1 = ca.issue(&Leaf::new(&sans, 0x0d01));
    let good_2 = ca.issue(&Leaf::new(&sans, 0x0d02));
    let other = ca.issue(&Leaf::new(&sans, 0x0d03));
    let expired = ca.issue(&Leaf {
        validity: Some((date_time_ymd(2020, 1, 1), date_time_ymd(2021, 1, 1))),
        ..Leaf::new(&sans, 0x0d04)
    });
    let serials: BTreeMap<String, String> = [
        ("good-1".to_owned(), good_1.serial.clone()),
        ("good-2".to_owned(), good_2.serial.clone()),
    ]
    .into();
    let names: Vec<String> = NAMESPACES
        .iter()
        .flat_map(|_| NAMES.iter().map(|name| (*name).to_owned()))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let edge = Edge::start_with_secrets(controller(), mode, &[], &clusters(&names), |dir| {
        secrets(dir, &[("good-1", &good_1), ("good-2", &good_2)], &other, &expired)
    });
    let mut runner = TestRunner::deterministic();
    // How many probes were served, and refused, over all sets.
    let (mut served, mut refused) = (0, 0);
    for case in 0..CASES {
        let set = objects().new_tree(&mut runner).expect("a set").current();
        edge.write("set.yaml", &text(&set));
        let want = expected(&set, &serials);
        let got = |edge: &Edge| -> BTreeMap<String, Option<String>> {
            want.keys()
                .map(|sni| (sni.clone(), edge.serial(sni, &ca.der).ok()))
                .collect()
        };
        wait_until(
            &format!("case {case}: every SNI as expected {want:?}"),
            PATIENCE,
            || format!("{:?}\n{set:?}\n{}", got(&edge), edge.logs()),
            || (got(&edge) == want).then_some(()),
        );
        assert_eq!(edge.listeners_rejected(), 0, "case {case}: {set:?}\n{}", edge.logs());
        served += want.values().filter(|outcome| outcome.is_some()).count();
        refused += want.values().filter(|outcome| outcome.is_none()).count();
    }
    // The sets exercised both outcomes.
    assert!(
        served >= CASES && refused >= CASES,
        "{served} served, {refused} refused"
    );
    assert_eq!(
        edge.envoy.stat("listener_manager.total_listeners_warming"),
        0,
        "{}",
        edge.logs()
    );
}

fn envoy_never_rejects(mode: Mode) {
    envoy_never_rejects_and_serves_what_the_secrets_allow(mode);
}

#[test]
fn random_sets_with_random_secrets_are_never_rejected_over_files() {
    envoy_never_rejects(Mode::Files);
}

#[test]
fn random_sets_with_random_secrets_are_never_rejected_over_xds() {
    envoy_never_rejects(Mode::Xds);
}
