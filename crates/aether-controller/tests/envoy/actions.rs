//! Phase 2 actions on a real Envoy, through the example of each feature
//! (`examples/action-*.yaml`): a weighted split counted over many
//! requests, a split of weight 0 answered 500, prefix, whole-path and
//! Host rewrites as the backend sees them, each redirect's status and
//! `Location`, headers set, added and removed on both sides, a timeout
//! answered 504, and retry overrides (attempts, conditions, per-try
//! timeout) counted in Envoy's statistics.

use std::path::Path;

use aether_e2e::backends::{DELAY_HEADER, STATUS_HEADER};
use aether_e2e::edge::clusters;
use aether_e2e::http::Response;
use aether_e2e::{Edge, Mode, Served};

use crate::edge;

const FEATURES: &[&str] = &[
    "action-weights.yaml",
    "action-rewrite.yaml",
    "action-redirect.yaml",
    "action-headers.yaml",
    "action-timeouts-retries.yaml",
];

/// Requests sent to the 90/10 split.
const SPLIT_REQUESTS: usize = 2000;
/// The canary's share must land within 6%..14% of them (120..=280
/// requests): ±4 points around 10%. The count is Binomial(2000, 0.1) if
/// Envoy splits as weighted (mean 200, standard deviation 13.4, so the
/// bounds are 6 deviations away); the exact binomial probability of
/// falling outside is 6.0e-9, summed over both tails. A test that fails
/// here has found a split that is not 90/10, not bad luck.
const CANARY_RANGE: std::ops::RangeInclusive<usize> = 120..=280;

fn manifests() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    FEATURES
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("examples/{name}: {e}"));
            ((*name).to_owned(), text)
        })
        .collect()
}

fn start(mode: Mode) -> Edge {
    let files = manifests();
    let texts: Vec<&str> = files.iter().map(|(_, text)| text.as_str()).collect();
    let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let clusters = clusters(&texts);
    // Every weighted backend is in the dependency set, so has a cluster.
    for cluster in ["svc-api:8080", "svc-api-canary", "svc-drained"] {
        assert!(clusters.contains(cluster), "{cluster} not among {clusters:?}");
    }
    edge(mode, &pairs, &clusters)
}

fn send(edge: &Edge, host: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    aether_e2e::http::request(edge.envoy.listener(), "GET", host, path, headers)
        .unwrap_or_else(|e| panic!("GET {host}{path}: {e}\n{}", edge.logs()))
}

/// The backend's echo of a request that must reach one.
fn echo(edge: &Edge, host: &str, path: &str, headers: &[(&str, &str)]) -> (Served, Response) {
    let response = send(edge, host, path, headers);
    assert_eq!(
        response.status,
        200,
        "{host}{path}: {:?}\n{}",
        String::from_utf8_lossy(&response.body),
        edge.logs()
    );
    let served = serde_json::from_slice(&response.body).expect("a backend's answer");
    (served, response)
}

fn weights(edge: &Edge) {
    let mut canary = 0;
    for i in 0..SPLIT_REQUESTS {
        let (served, _) = echo(edge, "weights.example.org", &format!("/api/{i}"), &[]);
        match served.cluster.as_str() {
            "svc-api-canary" => canary += 1,
            "svc-api:8080" => {}
            other => panic!("/api/{i} reached {other}"),
        }
        assert_eq!(served.path, format!("/api/{i}"));
    }
    eprintln!("{:?}: canary took {canary} of {SPLIT_REQUESTS}", edge.mode);
    assert!(
        CANARY_RANGE.contains(&canary),
        "the canary took {canary} of {SPLIT_REQUESTS} requests, outside {CANARY_RANGE:?}"
    );
    // Weight 0 only: Gateway API's 500, never the backend.
    let drained = send(edge, "weights.example.org", "/drained/x", &[]);
    assert_eq!(drained.status, 500, "{:?}", String::from_utf8_lossy(&drained.body));
    assert_eq!(
        edge.cluster("weights.example.org", "/other").as_deref(),
        Some("svc-web")
    );
}

fn rewrites(edge: &Edge) {
    let host = "rewrite.example.org";
    // Prefix: the matched prefix swapped, the rest and the query kept.
    for (path, expected) in [
        ("/api/users/7?x=1", "/v2/users/7?x=1"),
        ("/api", "/v2"),
        ("/api/", "/v2/"),
        ("/apis", "/v2s"),
    ] {
        let (served, _) = echo(edge, host, path, &[]);
        assert_eq!(
            (served.cluster.as_str(), served.path.as_str()),
            ("svc-api", expected),
            "{path}"
        );
        assert_eq!(served.host, host, "{path}");
    }
    // The whole path, and the Host.
    let (served_status, _) = echo(edge, host, "/status?verbose=1", &[]);
    assert_eq!(
        (served_status.path.as_str(), served_status.host.as_str()),
        ("/healthz?verbose=1", "health.internal")
    );
    // The Host alone: the path as sent.
    let (legacy, _) = echo(edge, host, "/legacy/a/b", &[]);
    assert_eq!(
        (legacy.path.as_str(), legacy.host.as_str()),
        ("/legacy/a/b", "legacy.internal")
    );
}

fn redirects(edge: &Edge) {
    let host = "redirect.example.org";
    for (path, status, location) in [
        ("/old/page?q=1", 301, "https://new.example.com:8443/new/page?q=1"),
        ("/secure/x", 302, "https://redirect.example.org:443/secure/x"),
        ("/other/y?z", 303, "http://other.example.org/other/y?z"),
        ("/temporary", 307, "http://redirect.example.org/elsewhere"),
        ("/moved?keep=1", 308, "http://redirect.example.org/here?keep=1"),
    ] {
        let response = send(edge, host, path, &[]);
        assert_eq!(
            (response.status, response.header("location")),
            (status, Some(location)),
            "{path}"
        );
        // Response header changes apply to a redirect's response too.
        let cache_control = (path == "/temporary").then_some("no-store");
        assert_eq!(response.header("cache-control"), cache_control, "{path}");
    }
}

fn headers(edge: &Edge) {
    let host = "headers.example.org";
    let (served, response) = echo(
        edge,
        host,
        "/",
        &[
            ("x-team", "b"),
            ("x-via", "client"),
            ("x-debug", "1"),
            ("x-echo-response-cache-control", "max-age=60"),
            ("x-echo-response-x-served-by", "backend"),
            ("x-echo-response-x-internal", "secret"),
        ],
    );
    // Request side: set overwrites, add appends, remove removes.
    assert_eq!(served.header_values("x-team"), ["a"]);
    assert_eq!(served.header_values("x-discount"), ["50%"]);
    assert_eq!(served.header_values("x-via"), ["client", "edge"]);
    assert!(served.header_values("x-debug").is_empty(), "{served:?}");
    // Response side.
    let values = |name: &str| -> Vec<&str> {
        response
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(values("cache-control"), ["no-store"]);
    assert_eq!(values("x-served-by"), ["backend", "edge"]);
    assert!(values("x-internal").is_empty(), "{:?}", response.headers);
    // Without the client's or the backend's headers: set and add both add.
    let (plain, response) = echo(edge, host, "/plain", &[]);
    assert_eq!(plain.header_values("x-team"), ["a"]);
    assert_eq!(plain.header_values("x-via"), ["edge"]);
    assert_eq!(response.header("x-served-by"), Some("edge"));
}

fn timeouts(edge: &Edge) {
    let host = "timeouts.example.org";
    // Slower than the route's 1 s: Envoy answers 504 itself.
    let slow = send(edge, host, "/slow", &[(DELAY_HEADER, "3000")]);
    assert_eq!(slow.status, 504, "{:?}", String::from_utf8_lossy(&slow.body));
    // Within it: the backend's answer.
    let (fast, _) = echo(edge, host, "/slow", &[(DELAY_HEADER, "100")]);
    assert_eq!(fast.cluster, "svc-slow");
    // Another route is not bounded by /slow's timeout (Envoy's default 15 s).
    let (other, _) = echo(edge, host, "/other", &[(DELAY_HEADER, "1500")]);
    assert_eq!(other.cluster, "svc-web");
}

/// Requests sent to each failing route.
const FAILING_REQUESTS: u64 = 5;

fn retries(edge: &Edge) {
    let host = "timeouts.example.org";
    let stat = |cluster: &str, name: &str| edge.envoy.stat(&format!("cluster.{cluster}.{name}"));
    let (flaky_before, web_before) = (
        stat("svc-flaky", "upstream_rq_retry"),
        stat("svc-web", "upstream_rq_retry"),
    );
    for _ in 0..FAILING_REQUESTS {
        // The override retries a 503 three times: four tries, all 503.
        let flaky = send(edge, host, "/flaky", &[(STATUS_HEADER, "503")]);
        assert_eq!(flaky.status, 503);
        // The default policy does not retry a 503 (the backend got it).
        let web = send(edge, host, "/web", &[(STATUS_HEADER, "503")]);
        assert_eq!(web.status, 503);
    }
    // Envoy counts a retry when it sends it, before the stats are read.
    let flaky_retries = aether_e2e::wait_until(
        "Envoy's retry count of svc-flaky",
        aether_e2e::edge::PATIENCE,
        || edge.logs(),
        || {
            let retries = stat("svc-flaky", "upstream_rq_retry") - flaky_before;
            (retries >= 3 * FAILING_REQUESTS).then_some(retries)
        },
    );
    let web_retries = stat("svc-web", "upstream_rq_retry") - web_before;
    eprintln!(
        "{:?}: upstream_rq_retry svc-flaky +{flaky_retries}, svc-web +{web_retries}; upstream_rq_total svc-flaky {}",
        edge.mode,
        stat("svc-flaky", "upstream_rq_total")
    );
    assert_eq!(flaky_retries, 3 * FAILING_REQUESTS);
    assert_eq!(web_retries, 0);
    assert_eq!(stat("svc-flaky", "upstream_rq_retry_limit_exceeded"), FAILING_REQUESTS);

    // `perTryTimeout: 2s`: a backend 3 s late times out each of the four
    // tries (each retried, as `5xx` covers a try's timeout), then 504.
    let timeouts_before = stat("svc-flaky", "upstream_rq_per_try_timeout");
    let late = send(edge, host, "/flaky", &[(DELAY_HEADER, "3000")]);
    assert_eq!(late.status, 504, "{:?}", String::from_utf8_lossy(&late.body));
    let per_try_timeouts = aether_e2e::wait_until(
        "Envoy's per-try timeout count of svc-flaky",
        aether_e2e::edge::PATIENCE,
        || edge.logs(),
        || {
            let count = stat("svc-flaky", "upstream_rq_per_try_timeout") - timeouts_before;
            (count >= 4).then_some(count)
        },
    );
    eprintln!(
        "{:?}: upstream_rq_per_try_timeout svc-flaky +{per_try_timeouts}",
        edge.mode
    );
    assert_eq!(per_try_timeouts, 4);
}

fn check(mode: Mode) {
    let edge = start(mode);
    weights(&edge);
    rewrites(&edge);
    redirects(&edge);
    headers(&edge);
    timeouts(&edge);
    retries(&edge);
    assert_eq!(edge.rejected(), 0, "{}", edge.logs());
}

#[test]
fn each_action_acts_on_real_requests_over_files() {
    check(Mode::Files);
}

#[test]
fn each_action_acts_on_real_requests_over_xds() {
    check(Mode::Xds);
}
