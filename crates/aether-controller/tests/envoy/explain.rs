//! `aether_explain::explain` against the real Envoy: for random valid sets
//! (those of `properties.rs`), once Envoy runs a set, requests read off
//! every served route (`aether_explain::witness`) and noise around them
//! (header names in another case, the query reordered, a port in `Host`,
//! deeper wildcard hosts, a host nobody serves, a header name with `_`)
//! go through Envoy, and what Envoy did is compared with the prediction:
//! the status, the cluster, the path and `Host` the backend received, the
//! headers the route changes, a redirect's `Location`, and the response
//! headers the route changes. `AETHER_EXPLAIN_CASES` sets the sets per
//! mode (default [`DEFAULT_CASES`]).

use std::collections::{BTreeMap, BTreeSet};

use aether_e2e::edge::{clusters, projection};
use aether_e2e::http::Response;
use aether_e2e::{Edge, Mode, Served};
use aether_explain::{HeaderChange, Outcome, Request, explain};
use aether_projection::{Snapshot, VirtualHostObject};
use aether_specgen::Rng;

use crate::edge;
use crate::properties::{object_set, wait_running};

mod noise;

use noise::{Probe, probes};

/// Sets per mode when `AETHER_EXPLAIN_CASES` is unset.
const DEFAULT_CASES: usize = 64;

/// The most of the requests whose outcome `explain` may leave
/// unpredictable, in percent.
const MAX_UNPREDICTABLE_PERCENT: usize = 10;

/// The value the backend is asked to send each response header with.
const ECHOED: &str = "from-backend";

fn cases() -> usize {
    std::env::var("AETHER_EXPLAIN_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// What came of the requests of a run.
#[derive(Default)]
struct Tally {
    compared: usize,
    skipped_head: usize,
    by_outcome: BTreeMap<&'static str, usize>,
    unpredictable: BTreeMap<String, usize>,
    disagreements: Vec<String>,
    /// Disagreements by the kind of request and what differed.
    by_kind: BTreeMap<(&'static str, String), usize>,
}

/// The sets of a run, drawn before the edge starts so that it has a
/// backend for every cluster they send to.
fn sets(seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..cases())
        .map(|_| {
            object_set(&mut rng)
                .iter()
                .map(|object| format!("---\n{}\n", serde_json::to_string(object).expect("JSON")))
                .collect()
        })
        .collect()
}

fn check(mode: Mode, seed: u64) {
    let texts = sets(seed);
    let every_cluster: BTreeSet<String> = texts.iter().flat_map(|text| clusters(&[text])).collect();
    let edge = edge(mode, &[("set.yaml", &texts[0])], &every_cluster);
    let mut tally = Tally::default();
    for (case, text) in texts.iter().enumerate() {
        let snapshot = projection(&[text]);
        let objects = aether_manifests::parse_manifests(text).expect("the set parses");
        edge.write("set.yaml", text);
        let expected = snapshot.route_configuration().expect("the projection decodes");
        wait_running(&edge, &expected, &format!("case {case}"), text);
        for probe in probes(&snapshot) {
            tally.run(&edge, &snapshot, &objects, probe, case);
        }
    }
    let unpredictable: usize = tally.unpredictable.values().sum();
    eprintln!(
        "{mode:?}: {} requests compared with Envoy over {} sets, {unpredictable} unpredictable, {} HEAD skipped; outcomes {:?}",
        tally.compared,
        texts.len(),
        tally.skipped_head,
        tally.by_outcome
    );
    for (why, count) in &tally.unpredictable {
        eprintln!("  unpredictable x{count}: {why}");
    }
    for ((kind, what), count) in &tally.by_kind {
        eprintln!("  disagreement x{count}: {kind}: {what}");
    }
    assert!(
        tally.disagreements.is_empty(),
        "{mode:?}: {} of {} requests where Envoy disagrees with explain:\n{}",
        tally.by_kind.values().sum::<usize>(),
        tally.compared,
        tally
            .disagreements
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    assert!(
        unpredictable * 100 <= (tally.compared + unpredictable) * MAX_UNPREDICTABLE_PERCENT,
        "{mode:?}: {unpredictable} unpredictable beside {} compared",
        tally.compared
    );
    assert!(
        tally.compared >= 50 * texts.len() / 2,
        "{mode:?}: too few requests compared"
    );
}

/// Sends `request` through Envoy's plain listener with `headers` (the
/// request's, or the same spelled otherwise on the wire).
pub(crate) fn send(edge: &Edge, request: &Request, headers: &[(String, String)]) -> std::io::Result<Response> {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    aether_e2e::http::request(
        edge.envoy.listener(),
        &request.method,
        &request.host,
        &request.path,
        &headers,
    )
}

impl Tally {
    fn run(&mut self, edge: &Edge, snapshot: &Snapshot, objects: &[VirtualHostObject], probe: Probe, case: usize) {
        let mut request = probe.request;
        // The harness's client reads a body as long as `content-length`
        // says, which a HEAD response never has.
        if request.method == "HEAD" {
            self.skipped_head += 1;
            return;
        }
        let mut explanation = explain(snapshot, objects, &request);
        // The client sends each request header the route changes, so that
        // a set replaces, an add appends to and a removal drops its value.
        if probe.sends_changed
            && let Outcome::Forward { request_headers, .. } = &explanation.outcome
            && !request_headers.is_empty()
        {
            for header in request_headers {
                request.headers.push((header.name.clone(), "from-client".to_owned()));
            }
            explanation = explain(snapshot, objects, &request);
        }
        // Ask the backend to send each response header the route changes,
        // so that a change to it shows.
        if let Outcome::Forward { response_headers, .. } = &explanation.outcome {
            let names: BTreeSet<&str> = response_headers.iter().map(HeaderChange::name).collect();
            if !names.is_empty() {
                for name in names {
                    let asked = format!("{}{name}", aether_e2e::backends::RESPONSE_HEADER_PREFIX);
                    request.headers.push((asked, ECHOED.to_owned()));
                }
                explanation = explain(snapshot, objects, &request);
            }
        }
        let kind = match &explanation.outcome {
            Outcome::Forward { .. } => "forward",
            Outcome::Redirect { .. } => "redirect",
            Outcome::Respond { .. } => "respond",
            Outcome::HandshakeRefused { .. } => "handshake refused",
            Outcome::Unpredictable { why } => {
                // The reason without the object and route it names.
                let reason = why.rsplit(": ").next().unwrap_or(why);
                *self.unpredictable.entry(reason.to_owned()).or_default() += 1;
                return;
            }
        };
        *self.by_outcome.entry(kind).or_default() += 1;
        self.compared += 1;
        let response = send(edge, &request, &probe.wire.headers(&request.headers))
            .unwrap_or_else(|e| panic!("{request}: {e}\n{}", edge.logs()));
        // explain answers for the request the client makes after Envoy's
        // redirect of an escaped slash (it says so in a note): Envoy's own
        // answer is that redirect.
        let lower = request.path_only().to_ascii_lowercase();
        let refused = explanation.outcome.status() == Some(400);
        if !refused && (lower.contains("%2f") || lower.contains("%5c")) {
            if !(301..=308).contains(&response.status) {
                self.disagreements.push(format!(
                    "case {case}: {request}: no redirect of an escaped slash: {}",
                    response.status
                ));
            }
            return;
        }
        if let Err(why) = agrees(&explanation.outcome, &response) {
            let what = why.split(':').next().unwrap_or_default().to_owned();
            let count = self.by_kind.entry((probe.kind, what)).or_default();
            *count += 1;
            // Two examples of each kind are enough to read.
            if *count > 2 {
                return;
            }
            self.disagreements.push(format!(
                "case {case} ({}): {request} {:?}{}\n  {why}\n  predicted {:?}\n  routes tried {:?}",
                probe.kind,
                request.headers,
                probe.wire.describe(),
                explanation.outcome,
                explanation.routes
            ));
        }
    }
}

/// Whether Envoy's `response` is what `outcome` predicts; if not, how not.
pub(crate) fn agrees(outcome: &Outcome, response: &aether_e2e::http::Response) -> Result<(), String> {
    let status = u32::from(response.status);
    let same = |what: &str, predicted: &dyn std::fmt::Debug, got: &dyn std::fmt::Debug| {
        let (predicted, got) = (format!("{predicted:?}"), format!("{got:?}"));
        if predicted == got {
            Ok(())
        } else {
            Err(format!("{what}: predicted {predicted}, Envoy {got}"))
        }
    };
    match outcome {
        Outcome::Forward {
            clusters,
            path,
            host,
            request_headers,
            response_headers,
            ..
        } => {
            same("status", &200, &status)?;
            let served: Served = serde_json::from_slice(&response.body).map_err(|e| {
                format!(
                    "not the backend's answer ({e}): {}",
                    String::from_utf8_lossy(&response.body)
                )
            })?;
            if !clusters.iter().any(|c| c.cluster == served.cluster) {
                return Err(format!("cluster: predicted {clusters:?}, Envoy {}", served.cluster));
            }
            same("path", path, &served.path)?;
            same("host", host, &served.host)?;
            for header in request_headers {
                same(
                    &format!("request header {}", header.name),
                    &header.values,
                    &served.header_values(&header.name),
                )?;
            }
            response_changes(response_headers, true, response)
        }
        Outcome::Redirect {
            status: predicted,
            location,
            response_headers,
        } => {
            same("status", predicted, &status)?;
            same("location", &Some(location.as_str()), &response.header("location"))?;
            response_changes(response_headers, false, response)
        }
        Outcome::Respond { status: predicted, .. } => same("status", predicted, &status),
        Outcome::HandshakeRefused { .. } | Outcome::Unpredictable { .. } => Ok(()),
    }
}

/// The response headers the route changes, against Envoy's response: the
/// changes applied to what the backend was asked to send (`echoed`), or,
/// for the edge's own answer, to nothing.
fn response_changes(
    changes: &[HeaderChange],
    echoed: bool,
    response: &aether_e2e::http::Response,
) -> Result<(), String> {
    let names: BTreeSet<&str> = changes.iter().map(HeaderChange::name).collect();
    let mut expected: Vec<(String, String)> = if echoed {
        names
            .iter()
            .map(|name| ((*name).to_owned(), ECHOED.to_owned()))
            .collect()
    } else {
        Vec::new()
    };
    HeaderChange::apply(changes, &mut expected);
    for name in names {
        let predicted: Vec<&str> = expected
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        let got: Vec<&str> = response
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        if predicted != got {
            return Err(format!(
                "response header {name}: predicted {predicted:?}, Envoy {got:?}"
            ));
        }
    }
    Ok(())
}

#[test]
fn envoy_does_what_explain_predicts_over_files() {
    check(Mode::Files, 36);
}

#[test]
fn envoy_does_what_explain_predicts_over_xds() {
    check(Mode::Xds, 37);
}
