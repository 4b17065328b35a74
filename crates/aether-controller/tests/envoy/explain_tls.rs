//! `explain` over https against a real Envoy: the filter chain by server
//! name (exact, wildcard at any depth, a host served without TLS refused,
//! an unknown name refused), the object's routes on its chain, and a Host
//! the chain does not serve (a connection reused for another host)
//! answered 421. Every pair of server name and Host of the TLS fixture,
//! each with the witness requests of the routes of the object it names.

use aether_e2e::Mode;
use aether_e2e::edge::projection;
use aether_explain::{Outcome, Request, explain, witness};

use crate::explain::agrees;
use crate::tls::{fixture, fixture_text};

/// Server names and hosts asked with: the fixture's hosts, deeper and
/// unknown names under its wildcard, and names nobody serves.
const NAMES: &[&str] = &[
    "api.example.com",
    "foo.example.com",
    "a.b.example.com",
    "plain.example.com",
    "other.example.org",
    "example.com",
    "unknown.example.net",
];

fn check(mode: Mode) {
    let text = fixture_text();
    let snapshot = projection(&[&text]);
    let objects = aether_manifests::parse_manifests(&text).expect("the fixture parses");
    let fixture = fixture(mode);
    let plain = snapshot.route_configuration().expect("the projection decodes");
    let (mut compared, mut refused, mut disagreements) = (0, 0, Vec::new());
    let (mut forwarded, mut misdirected) = (0, 0);
    for sni in NAMES {
        for host in NAMES {
            // The witness paths of every route of the object serving `host`
            // over plain HTTP (the same routes its chain has), or `/`.
            let routes = plain
                .virtual_hosts
                .iter()
                .filter(|vh| {
                    vh.domains
                        .iter()
                        .any(|d| d == host || d.strip_prefix('*').is_some_and(|s| host.ends_with(s)))
                })
                .flat_map(|vh| &vh.routes);
            let mut requests: Vec<Request> = routes.flat_map(|route| witness::requests(host, route)).collect();
            requests.push(Request::parse(&format!("GET https://{host}/"), &[] as &[&str]).expect("a request"));
            for mut request in requests {
                request.scheme = aether_explain::Scheme::Https;
                request.server_name = Some((*sni).to_owned());
                request.host = (*host).to_owned();
                let predicted = explain(&snapshot, &objects, &request).outcome;
                let headers: Vec<(&str, &str)> =
                    request.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                let answer = aether_e2e::tls::request(
                    fixture.edge.https_addr(),
                    sni,
                    &request.method,
                    &request.host,
                    &request.path,
                    &headers,
                    &fixture.ca.der,
                );
                let verdict = match (&predicted, answer) {
                    (Outcome::HandshakeRefused { .. }, Err(_)) => {
                        refused += 1;
                        Ok(())
                    }
                    (Outcome::HandshakeRefused { why }, Ok(response)) => Err(format!(
                        "predicted a refused handshake ({why}), Envoy answered {}",
                        response.status
                    )),
                    (_, Err(e)) => Err(format!("Envoy refused the connection ({e}), predicted {predicted:?}")),
                    (Outcome::Unpredictable { why }, Ok(_)) => Err(format!("unpredictable: {why}")),
                    (_, Ok(response)) => agrees(&predicted, &response),
                };
                compared += 1;
                forwarded += usize::from(matches!(predicted, Outcome::Forward { .. }));
                misdirected += usize::from(predicted.status() == Some(aether_projection::MISDIRECTED_STATUS));
                if let Err(why) = verdict {
                    disagreements.push(format!("{request} (SNI {sni}): {why}"));
                }
            }
        }
    }
    eprintln!(
        "{mode:?}: {compared} https requests compared: {forwarded} forwarded, {misdirected} misdirected (421), \
         {refused} handshakes refused, as predicted"
    );
    assert!(
        disagreements.is_empty(),
        "{} of {compared} disagree:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    // Not vacuous: each way a request can go over https is among them.
    assert!(
        refused > 0 && forwarded > 20 && misdirected > 10,
        "{compared} compared: {forwarded} forwarded, {misdirected} misdirected, {refused} refused"
    );
}

#[test]
fn envoy_does_what_explain_predicts_over_https_over_files() {
    check(Mode::Files);
}

#[test]
fn envoy_does_what_explain_predicts_over_https_over_xds() {
    check(Mode::Xds);
}
