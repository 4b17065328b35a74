//! Which route of the edge serves a request, and what it does with it.
//!
//! [`explain`] reads the edge's own configuration, the projection's
//! [`Snapshot`], as Envoy reads it: over HTTPS the filter chain the SNI
//! selects, then the virtual host by `Host` (exact, then the most specific
//! wildcard), then the routes in order, each matcher as Envoy matches it,
//! and the action of the first that matches. Every decision of the
//! projection (host owners, route order, routes left out, the normal form
//! of paths) is read from its output, never made again here; what is
//! Envoy's (matching, rewriting, redirects) is proven against the real
//! Envoy by the controller's real-Envoy suite (`tests/envoy/explain.rs`).
//!
//! ```
//! use aether_explain::{Outcome, Request, explain};
//! use aether_projection::{ProjectionConfig, VirtualHostObject, project};
//!
//! let objects: Vec<VirtualHostObject> = serde_json::from_value(serde_json::json!([{
//!     "namespace": "default", "name": "api",
//!     "spec": {
//!         "hosts": ["api.example.com"],
//!         "routes": [
//!             {"match": {"prefix": "/users", "methods": ["POST"]}, "backend": {"service": "writes"}},
//!             {"match": {"prefix": "/users"}, "backend": {"service": "users", "port": 8080}}
//!         ]
//!     }
//! }])).unwrap();
//! let snapshot = project(&objects, &ProjectionConfig::default()).unwrap();
//! let request = Request::parse("GET http://api.example.com/users/7", &[] as &[&str]).unwrap();
//! let explanation = explain(&snapshot, &objects, &request);
//! assert_eq!(explanation.routes.len(), 2, "the POST route is tried, then the next");
//! let Outcome::Forward { clusters, .. } = &explanation.outcome else { panic!() };
//! assert_eq!(clusters[0].cluster, "users:8080");
//! ```

#![deny(missing_docs)]

pub mod diff;
mod edge;
mod explanation;
mod outcome;
mod request;
mod routes;
pub mod witness;

#[cfg(test)]
#[path = "measured_tests.rs"]
mod measured_tests;

pub use explanation::{
    Claim, ClaimResult, Explanation, HeaderChange, HeaderValues, HostStep, Outcome, Retries, RouteResult, RouteStep,
    TlsStep, WeightedCluster,
};
pub use request::{MAX_LEN, Request, RequestError, Scheme};

use aether_projection::{LeftOutReason, MatchKind, Snapshot, VirtualHostObject, edge_normal_form, served_routes};

use routes::Miss;

/// Whether the whole of `text` fits `regex` as the edge's RE2 matches it:
/// on bytes (Envoy's RE2 runs in Latin-1), `\d \s \w \b` ASCII. An
/// expression Rust's `regex` cannot read as RE2 does is an error, never a
/// guess (the RE2 guard refuses it anyway). Held to RE2 itself by
/// `tests/re2_matching.rs`.
///
/// ```
/// assert_eq!(aether_explain::regex_full_match("/v[0-9]+", b"/v12"), Ok(true));
/// assert_eq!(aether_explain::regex_full_match("/v[0-9]+", b"/v12/x"), Ok(false));
/// ```
pub fn regex_full_match(regex: &str, text: &[u8]) -> Result<bool, String> {
    routes::full_match(regex, text).map_err(|miss| match miss {
        Miss::Unpredictable(why) | Miss::Failed { why, .. } => why,
    })
}

/// What the edge does with `request`, given the snapshot projected from
/// `objects` (the objects tell each route of a virtual host back to the
/// route written, and who else claims a host).
pub fn explain(snapshot: &Snapshot, objects: &[VirtualHostObject], request: &Request) -> Explanation {
    let path_sent = request.path_only();
    let routed_path = edge_normal_form(path_sent, MatchKind::Exact);
    let host = edge::routed_host(&request.host);
    let mut explanation = Explanation {
        request: request.clone(),
        routed_path: routed_path.clone(),
        tls: None,
        host: HostStep {
            host: host.clone(),
            served_by: None,
            domain: None,
            claims: Vec::new(),
        },
        routes: Vec::new(),
        outcome: Outcome::Unpredictable { why: String::new() },
        notes: Vec::new(),
    };
    explanation.outcome = run(snapshot, objects, request, &host, &mut explanation);
    explanation
}

/// The steps, filling `explanation` in as they go; returns the outcome.
fn run(
    snapshot: &Snapshot,
    objects: &[VirtualHostObject],
    request: &Request,
    host: &str,
    explanation: &mut Explanation,
) -> Outcome {
    if let Some((name, _)) = request.headers.iter().find(|(name, _)| name.contains('_')) {
        return Outcome::Respond {
            status: 400,
            why: format!(
                "the edge refuses header names with `_` (`{name}`): headers_with_underscores_action REJECT_REQUEST"
            ),
        };
    }
    if request.method.eq_ignore_ascii_case("CONNECT") {
        // Measured on Envoy 1.40: `CONNECT /path HTTP/1.1` is answered 400
        // by the codec before any route is tried (CONNECT asks for a
        // `host:port` target, and the edge proxies no CONNECT).
        return Outcome::Respond {
            status: 400,
            why: "the edge refuses CONNECT requests: it proxies no tunnel".to_owned(),
        };
    }
    // Measured on Envoy 1.40 over every printable ASCII character and a few
    // above: these anywhere in the request target are refused by its
    // HTTP/1 codec (`^ ` { | }` are escaped instead: `edge_normal_form`).
    if let Some(refused) = request
        .path
        .chars()
        .find(|c| matches!(c, '"' | '#' | '<' | '>') || !c.is_ascii())
    {
        return Outcome::Respond {
            status: 400,
            why: format!("Envoy refuses `{refused}` in a request's path or query: escape it"),
        };
    }
    let path_sent = request.path_only();
    let lower = path_sent.to_ascii_lowercase();
    if stray_percent(path_sent) {
        // Measured on Envoy 1.40: a `%` that begins no escape is kept, or
        // written `%25` when decoding what follows would make it begin one
        // (`/%%44f` is routed as `/%25Df`, `/a%%41` as `/a%A`).
        return Outcome::Unpredictable {
            why: "the path holds a `%` that begins no escape, which Envoy normalizes in ways not modelled".to_owned(),
        };
    }
    if lower.contains("%00") {
        return Outcome::Respond {
            status: 400,
            why: "the path holds `%00`, which Envoy refuses".to_owned(),
        };
    }
    if lower.contains("%2f") || lower.contains("%5c") {
        explanation.notes.push(format!(
            "the path holds an escaped slash: Envoy first redirects the client to `{}`; what follows is for that request",
            explanation.routed_path
        ));
    }
    let (config, tls) = match edge::route_configuration(snapshot, request) {
        Ok(found) => found,
        Err(outcome) => return *outcome,
    };
    if tls.is_some() {
        explanation
            .notes
            .push("over HTTPS, every TLS secret is taken to be present (offline, none is read)".to_owned());
    }
    explanation.tls = tls;
    let found = edge::virtual_host(&config, host);
    // Who owns the host is the projection's decision, the same on every
    // listener: read from the plain configuration, which names every owner
    // (a chain's names only its own object, the rest misdirected).
    let owner_domain = match &explanation.tls {
        None => found.as_ref().map(|(_, domain)| domain.clone()),
        Some(_) => snapshot
            .route_configuration()
            .ok()
            .and_then(|plain| edge::virtual_host(&plain, host).map(|(_, domain)| domain)),
    };
    explanation.host.claims = claims(snapshot, objects, host, owner_domain.as_deref());
    let Some((virtual_host, domain)) = found else {
        return Outcome::Respond {
            status: 404,
            why: format!("no object serves `{host}`"),
        };
    };
    explanation.host.domain = Some(domain);
    let Some(key) = edge::object_of(virtual_host) else {
        // The chain's `misdirected` virtual host: every route answers 421.
        return virtual_host.routes.first().map_or(
            Outcome::Unpredictable {
                why: "an empty virtual host".to_owned(),
            },
            |route| outcome::outcome(route, request, &explanation.routed_path),
        );
    };
    explanation.host.served_by = Some(key.clone());
    if virtual_host.require_tls != 0 {
        return Outcome::Unpredictable {
            why: format!("{key} is redirected to HTTPS (--tls-hosts-over-plain-http=redirect): ask with https://"),
        };
    }
    let Some(object) = objects.iter().find(|object| object.key() == key) else {
        return Outcome::Unpredictable {
            why: format!("{key} is served but not among the objects read"),
        };
    };
    let indices = served_routes(&object.spec);
    if indices.len() != virtual_host.routes.len() {
        return Outcome::Unpredictable {
            why: format!("{key}'s served routes do not line up with its spec (a previous version is served?)"),
        };
    }
    if let Some(left_out) = snapshot.routes_left_out(&key) {
        for problem in &left_out.problems {
            explanation.notes.push(format!(
                "{key}: {} is left out of the edge: {}",
                problem.field_path, problem.message
            ));
        }
    }
    let tried = virtual_host.routes.iter().zip(indices.iter().copied());
    for (at, (route, index)) in tried.enumerate() {
        let path = routes::describe(route);
        match routes::try_route(route, request, &explanation.routed_path) {
            Ok(()) => {
                explanation.routes.push(RouteStep {
                    index,
                    path,
                    result: RouteResult::Matched,
                });
                // The rest of the effective order, for the whole picture.
                for (route, index) in virtual_host.routes.iter().zip(indices.iter().copied()).skip(at + 1) {
                    explanation.routes.push(RouteStep {
                        index,
                        path: routes::describe(route),
                        result: RouteResult::NotTried,
                    });
                }
                let changed = route
                    .response_headers_to_add
                    .iter()
                    .filter_map(|o| o.header.as_ref().map(|h| &h.key));
                if changed
                    .chain(&route.response_headers_to_remove)
                    .any(|name| outcome::overwritten_by_envoy(name))
                {
                    explanation.notes.push(
                        "the route changes the response header `server`, which Envoy then writes over: clients get `server: envoy`".to_owned(),
                    );
                }
                return outcome::outcome(route, request, &explanation.routed_path);
            }
            Err(Miss::Failed { matcher, why }) => explanation.routes.push(RouteStep {
                index,
                path,
                result: RouteResult::Failed { matcher, why },
            }),
            Err(Miss::Unpredictable(why)) => {
                return Outcome::Unpredictable {
                    why: format!("{key} spec.routes[{index}]: {why}"),
                };
            }
        }
    }
    Outcome::Respond {
        status: 404,
        why: format!("no route of {key} matches"),
    }
}

/// Whether `path` holds a `%` not followed by two hex digits.
fn stray_percent(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.iter().enumerate().any(|(at, b)| {
        *b == b'%'
            && !(bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// Every object listing `host` or a wildcard covering it: the owner of the
/// domain that took the request (`taken`), those that lost a domain to an
/// older object, those serving a less specific wildcard, those left out.
fn claims(snapshot: &Snapshot, objects: &[VirtualHostObject], host: &str, taken: Option<&str>) -> Vec<Claim> {
    let mut claims: Vec<Claim> = Vec::new();
    for object in objects {
        let Some(domain) = object.spec.hosts.iter().find(|listed| covers(listed, host)) else {
            continue;
        };
        let key = object.key();
        let result = if let Some(conflict) = snapshot.conflicts_lost_by(&key).find(|c| &c.host == domain) {
            ClaimResult::LostTo(conflict.winner.clone())
        } else if let Some(left_out) = snapshot.left_out(&key) {
            ClaimResult::LeftOut(left_out_why(&left_out.reason))
        } else if taken == Some(domain.as_str()) {
            ClaimResult::Owner
        } else {
            ClaimResult::LessSpecific
        };
        claims.push(Claim {
            object: key,
            domain: domain.clone(),
            created: object.creation_timestamp.map(|t| t.to_string()),
            result,
        });
    }
    let rank = |claim: &Claim| match claim.result {
        ClaimResult::Owner => 0,
        ClaimResult::LostTo(_) => 1,
        ClaimResult::LessSpecific => 2,
        ClaimResult::LeftOut(_) => 3,
    };
    claims.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.object.cmp(&b.object)));
    claims
}

/// Whether a listed host (exact or `*.` wildcard) covers `host`.
fn covers(listed: &str, host: &str) -> bool {
    listed == host || aether_projection::covering_wildcards(host).any(|wildcard| wildcard == listed)
}

fn left_out_why(reason: &LeftOutReason) -> String {
    match reason {
        LeftOutReason::Invalid { problems } | LeftOutReason::Unsupported { problems } => {
            let first = problems
                .first()
                .map(|p| format!("{}: {}", p.field_path, p.message))
                .unwrap_or_default();
            format!("invalid ({} problems; first {first})", problems.len())
        }
        LeftOutReason::NoHostsLeft => "every host it lists went to an older object".to_owned(),
    }
}
