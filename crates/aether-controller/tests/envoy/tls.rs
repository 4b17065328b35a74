//! TLS by SNI on a real Envoy: the HTTPS listener the controller hands it
//! (listeners.json and SDS files, or LDS and SDS over gRPC), checked with
//! a rustls client that sends the SNI, trusts only the test CA and reads
//! the served certificate's serial.

use std::collections::BTreeSet;
use std::time::Instant;

use aether_e2e::edge::PATIENCE;
use aether_e2e::{Edge, Mode, wait_until};
use aether_testing::pki::{Issued, Leaf, TestCa, date_time_ymd};

use crate::controller;
use aether_testing::objects::object;

/// `namespace/name` claiming `hosts`: `/api` to `svc-NAME-api`, the rest to `svc-NAME`.
pub(crate) fn manifest(namespace: &str, name: &str, hosts: &[&str], tls: Option<&str>) -> String {
    let object = object(namespace, name)
        .hosts(hosts)
        .route("/api", &format!("svc-{name}-api"))
        .route("/", &format!("svc-{name}"));
    match tls {
        Some(secret) => object.tls(secret),
        None => object,
    }
    .manifest()
}

pub(crate) fn clusters(names: &[&str]) -> BTreeSet<String> {
    names
        .iter()
        .flat_map(|name| [format!("svc-{name}"), format!("svc-{name}-api")])
        .collect()
}

/// The edge of the first tests: an exact host and a wildcard with TLS, a
/// host without TLS under the wildcard, one elsewhere.
pub(crate) struct Fixture {
    pub(crate) ca: TestCa,
    api: Issued,
    wild: Issued,
    pub(crate) edge: Edge,
}

/// The manifests of [`fixture`].
pub(crate) fn fixture_text() -> String {
    [
        manifest("default", "api", &["api.example.com"], Some("api-tls")),
        manifest("platform", "tenants", &["*.example.com"], Some("wild-tls")),
        manifest("default", "plain", &["plain.example.com", "other.example.org"], None),
    ]
    .concat()
}

pub(crate) fn fixture(mode: Mode) -> Fixture {
    let ca = TestCa::new();
    let api = ca.issue(&Leaf::new(&["api.example.com"], 0x0a01));
    // A certificate's `*.example.com` names one label only (RFC 6125), while
    // the host `*.example.com` serves any depth: deeper names are named too.
    let wild = ca.issue(&Leaf::new(&["*.example.com", "*.b.example.com"], 0x0a02));
    let text = fixture_text();
    let edge = Edge::start_with_secrets(
        controller(),
        mode,
        &[("all.yaml", &text)],
        // The bad-secret test's objects too.
        &clusters(&[
            "api",
            "tenants",
            "plain",
            "missing",
            "expired",
            "mismatched",
            "malformed",
        ]),
        |dir| {
            aether_testing::pki::write_secret(dir, "default", "api-tls", &api.chain_pem, &api.key_pem);
            aether_testing::pki::write_secret(dir, "platform", "wild-tls", &wild.chain_pem, &wild.key_pem);
        },
    );
    // The listener comes with the first pass; over gRPC it may follow the routes.
    edge.wait_for_serial("api.example.com", &ca.der, &api.serial);
    Fixture { ca, api, wild, edge }
}

fn sni_selects_the_certificate_and_tls_routes_as_plain(mode: Mode) {
    let Fixture { ca, api, wild, edge } = fixture(mode);
    let serial = |sni: &str| edge.serial(sni, &ca.der);
    assert_eq!(serial("api.example.com").unwrap(), api.serial, "exact host");
    assert_eq!(serial("foo.example.com").unwrap(), wild.serial, "wildcard host");
    assert_eq!(serial("a.b.example.com").unwrap(), wild.serial, "wildcard, two labels");
    // Hosts without tls: refused, even under the TLS wildcard.
    for sni in [
        "plain.example.com",
        "other.example.org",
        "example.com",
        "unknown.example.net",
    ] {
        let refused = serial(sni);
        assert!(refused.is_err(), "{sni} got a certificate: {refused:?}");
    }
    // Over TLS, every request is routed as over plain HTTP.
    for (host, path) in [
        ("api.example.com", "/api/users"),
        ("api.example.com", "/"),
        ("foo.example.com", "/api/x"),
        ("a.b.example.com", "/z"),
    ] {
        let plain = edge.served(host, path).expect("served over plain HTTP");
        let tls = edge.served_tls(host, path, &ca.der).expect("served over TLS");
        assert_eq!(
            (&tls.cluster, &tls.path, &tls.host),
            (&plain.cluster, &plain.path, &plain.host),
            "{host}{path}"
        );
        // The backend learns how the client came.
        assert_eq!(tls.header_values("x-forwarded-proto"), ["https"], "{host}{path}");
        assert_eq!(plain.header_values("x-forwarded-proto"), ["http"], "{host}{path}");
    }
    // A chain serves its object's hosts alone: any other Host on its
    // connection is misdirected (421), whether no object serves it, the
    // wildcard's certificate covers another object's host (a client
    // coalescing connections), or that host is served without TLS.
    for (sni, host) in [
        ("foo.example.com", "nothing.example.net"),
        ("foo.example.com", "api.example.com"),
        ("foo.example.com", "plain.example.com"),
        ("api.example.com", "foo.example.com"),
    ] {
        let response = edge.get_tls(sni, host, "/", &ca.der).unwrap();
        assert_eq!(
            response.status,
            aether_projection::MISDIRECTED_STATUS as u16,
            "{sni} {host}"
        );
    }
    assert_eq!(edge.listeners_rejected(), 0, "{}", edge.logs());
    let (status, reason, message) = edge.resolved_refs("default/api");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ResolvedRefs"),
        "{message}"
    );
    assert_eq!(edge.resolved_refs("default/plain").0, "True");
}

#[test]
fn sni_selects_the_certificate_and_tls_routes_as_plain_over_files() {
    sni_selects_the_certificate_and_tls_routes_as_plain(Mode::Files);
}

#[test]
fn sni_selects_the_certificate_and_tls_routes_as_plain_over_xds() {
    sni_selects_the_certificate_and_tls_routes_as_plain(Mode::Xds);
}

/// Rewriting a secret's files is served by the same Envoy and controller
/// processes within [`PATIENCE`]; the measured time is printed.
fn rotation_needs_no_restart(mode: Mode) {
    let Fixture { ca, api, wild, edge } = fixture(mode);
    let (envoy, controller) = (edge.envoy.id(), edge.controller_id());
    let listener_updates = edge.envoy.stat(aether_e2e::edge_tls::LDS_UPDATE_SUCCESS);
    for serial in [0x0b01, 0x0b02, 0x0b03] {
        let rotated = ca.issue(&Leaf::new(&["api.example.com"], serial));
        let started = Instant::now();
        edge.write_secret("default", "api-tls", &rotated);
        edge.wait_for_serial("api.example.com", &ca.der, &rotated.serial);
        println!(
            "{mode:?}: rotation {serial:#x} served after {} ms",
            started.elapsed().as_millis()
        );
        assert_ne!(rotated.serial, api.serial);
        // The other chain is untouched.
        assert_eq!(edge.serial("foo.example.com", &ca.der).unwrap(), wild.serial);
    }
    assert_eq!((edge.envoy.id(), edge.controller_id()), (envoy, controller));
    // A certificate is swapped by SDS: the listener itself is not updated.
    assert_eq!(
        edge.envoy.stat(aether_e2e::edge_tls::LDS_UPDATE_SUCCESS),
        listener_updates,
        "{}",
        edge.logs()
    );
    assert_eq!(edge.listeners_rejected(), 0);
}

#[test]
fn rotation_is_served_without_a_restart_over_files() {
    rotation_needs_no_restart(Mode::Files);
}

#[test]
fn rotation_is_served_without_a_restart_over_xds() {
    rotation_needs_no_restart(Mode::Xds);
}

/// Missing, expired, mismatched and malformed secrets: their chains are
/// left out (their hosts refused), with a status saying which secret and
/// why; every other chain is served and Envoy rejects nothing.
fn bad_secrets_leave_only_their_chain_out(mode: Mode) {
    let Fixture { ca, api, wild, edge } = fixture(mode);
    let expired = ca.issue(&Leaf {
        validity: Some((date_time_ymd(2020, 1, 1), date_time_ymd(2021, 1, 1))),
        ..Leaf::new(&["expired.example.net"], 0x0c01)
    });
    let other = ca.issue(&Leaf::new(&["x.example.net"], 0x0c02));
    let mismatched = ca.issue(&Leaf::new(&["mismatched.example.net"], 0x0c03));
    edge.write_secret("default", "expired-tls", &expired);
    aether_testing::pki::write_secret(
        edge.secrets_dir(),
        "default",
        "mismatched-tls",
        &mismatched.chain_pem,
        &other.key_pem,
    );
    aether_testing::pki::write_secret(
        edge.secrets_dir(),
        "default",
        "malformed-tls",
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
        &other.key_pem,
    );
    let bad = [
        ("missing", "missing.example.net", "not found"),
        (
            "expired",
            "expired.example.net",
            "the certificate expired at 2021-01-01T00:00:00Z",
        ),
        (
            "mismatched",
            "mismatched.example.net",
            "tls.key is not the key of the first certificate",
        ),
        (
            "malformed",
            "malformed.example.net",
            "tls.crt: a certificate does not parse",
        ),
    ];
    let mut text: String = bad
        .iter()
        .map(|(name, host, _)| manifest("default", name, &[host], Some(&format!("{name}-tls"))))
        .collect();
    text.push_str(&manifest("default", "api", &["api.example.com"], Some("api-tls")));
    text.push_str(&manifest("platform", "tenants", &["*.example.com"], Some("wild-tls")));
    edge.write("all.yaml", &text);
    wait_until(
        "every bad secret's status",
        PATIENCE,
        || edge.logs(),
        || {
            bad.iter()
                .all(|(name, _, _)| edge.resolved_refs(&format!("default/{name}")).0 == "False")
                .then_some(())
        },
    );
    for (name, host, why) in bad {
        let (status, reason, message) = edge.resolved_refs(&format!("default/{name}"));
        assert_eq!((status.as_str(), reason.as_str()), ("False", "InvalidCertificateRef"));
        assert!(
            message.starts_with(&format!("secret default/{name}-tls: ")) && message.contains(why),
            "{name}: {message}"
        );
        assert!(edge.serial(host, &ca.der).is_err(), "{host} got a certificate");
        // Still routed over plain HTTP (over gRPC, once Envoy has the routes
        // the status was written with).
        edge.wait_for(host, "/", Some(&format!("svc-{name}")));
    }
    assert_eq!(edge.serial("api.example.com", &ca.der).unwrap(), api.serial);
    assert_eq!(edge.serial("foo.example.com", &ca.der).unwrap(), wild.serial);
    assert_eq!(edge.listeners_rejected(), 0, "{}", edge.logs());

    // Fixed: the chain appears, served by the same Envoy.
    let fixed = ca.issue(&Leaf::new(&["mismatched.example.net"], 0x0c04));
    edge.write_secret("default", "mismatched-tls", &fixed);
    edge.wait_for_serial("mismatched.example.net", &ca.der, &fixed.serial);
    // The pass publishes before it writes the status: Envoy may be first.
    wait_until(
        "the fixed secret's status",
        PATIENCE,
        || edge.logs(),
        || (edge.resolved_refs("default/mismatched").0 == "True").then_some(()),
    );
    assert_eq!(edge.listeners_rejected(), 0, "{}", edge.logs());
}

#[test]
fn bad_secrets_leave_only_their_chain_out_over_files() {
    bad_secrets_leave_only_their_chain_out(Mode::Files);
}

#[test]
fn bad_secrets_leave_only_their_chain_out_over_xds() {
    bad_secrets_leave_only_their_chain_out(Mode::Xds);
}
