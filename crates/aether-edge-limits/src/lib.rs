//! What the edge's Envoy (1.40) refuses of a spec the API's rules admit,
//! which no buf.validate or CEL rule can say: a regular expression its RE2
//! would not compile ([`re2`], rule [`RULE_RE2`]) and a route action it
//! would not take (rule [`RULE_ENVOY`]).
//!
//! Envoy refuses a whole route configuration, every host in it, for one
//! such route. The projection leaves the route out; the webhook denies the
//! object. Both ask [`route_problems`], the one decision, so the webhook
//! denies exactly what the edge leaves out.
//!
//! ```
//! use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, VirtualHostSpec, route_match::Path};
//! use aether_edge_limits::{RULE_RE2, edge_problems};
//!
//! let spec = VirtualHostSpec {
//!     hosts: vec!["api.example.com".into()],
//!     routes: vec![HttpRoute {
//!         r#match: Some(RouteMatch { path: Some(Path::Regex("[a-z]{200}".into())), ..Default::default() }),
//!         backend: Some(RouteBackend { service: "svc".into(), port: 0 }),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let problems = edge_problems(&spec);
//! assert_eq!(problems[0].field_path, "spec.routes[0].match.regex");
//! assert_eq!(problems[0].rule_id, RULE_RE2);
//! ```

#![deny(missing_docs)]

mod actions;
mod duration;
pub mod re2;
mod regexes;

use aether_api::config::v1::{HttpRoute, RouteMatch, VirtualHostSpec};
use aether_api::validate::Violation;

pub use actions::{RULE_ENVOY, header_value_literal};
pub use duration::{DurationError, parse_gateway_duration};
pub use regexes::{RULE_RE2, regex_problems};

/// Every problem for which the edge leaves a route of `spec` out, with its
/// field path, in listed order ([`route_problems`] of each route). The
/// webhook denies an object with any.
pub fn edge_problems(spec: &VirtualHostSpec) -> Vec<Violation> {
    spec.routes
        .iter()
        .enumerate()
        .flat_map(|(index, http_route)| route_problems(index, http_route))
        .collect()
}

/// Why the edge leaves route `index` out, if it does: a regular
/// expression RE2 would refuse (rule [`RULE_RE2`]), else an action Envoy
/// would refuse (rule [`RULE_ENVOY`]). Empty for a route the edge serves.
pub fn route_problems(index: usize, http_route: &HttpRoute) -> Vec<Violation> {
    if let Some(route_match) = &http_route.r#match {
        match_limits(route_match);
    }
    let problems = regexes::route_regex_problems(index, http_route);
    if !problems.is_empty() {
        return problems;
    }
    actions::action_problems(index, http_route)
}

/// What the edge refuses of each match field beyond the proto's rules:
/// every field named (no `..`), so a new match field fails to compile here
/// until someone decides whether Envoy refuses a value the rules admit. A
/// regular expression is marked `re2` in the proto instead, and checked
/// with the others ([`regexes`]).
fn match_limits(route_match: &RouteMatch) {
    let RouteMatch {
        // Prefix and exact paths: any the proto's pattern admits (measured
        // over every printable character); regex paths: `re2`.
        path: _,
        // Nine methods at most: their alternation stays far below RE2's
        // program limit (the projection's tests check it).
        methods: _,
        // Names and values bounded by the proto; regex values: `re2`.
        headers: _,
        // As headers.
        query_params: _,
    } = route_match;
}
