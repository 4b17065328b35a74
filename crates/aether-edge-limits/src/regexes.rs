//! Which regular expressions of a route the edge cannot serve.
//!
//! The places are not listed here: [`Regexes`], generated from the fields
//! the proto marks `(aether.config.v1.re2)`, lists them, so a regex field
//! added to the proto is guarded once it is marked.

use std::borrow::Cow;

use aether_api::config::v1::{HttpRoute, VirtualHostSpec};
use aether_api::regexes::Regexes;
use aether_api::validate::{FieldPath, Validate, Violation};

use crate::re2;

/// The rule id of a regular expression the edge's RE2 cannot compile
/// (see [`re2`]).
pub const RULE_RE2: &str = "re2";

/// Every regular expression of `spec` Envoy would refuse, with its field
/// path and why: the routes holding one are left out of the edge, and the
/// webhook denies the object.
pub fn regex_problems(spec: &VirtualHostSpec) -> Vec<Violation> {
    spec.routes
        .iter()
        .enumerate()
        .flat_map(|(index, route)| route_regex_problems(index, route))
        .collect()
}

/// The regular expressions of route `index` that Envoy would refuse.
pub(crate) fn route_regex_problems(index: usize, route: &HttpRoute) -> Vec<Violation> {
    let mut problems = Vec::new();
    let spec = FieldPath::root(VirtualHostSpec::ROOT);
    let routes = spec.field("routes");
    route.visit_regexes(&routes.index(index), &mut |path, regex| {
        if let Err(refusal) = re2::check(regex) {
            // The field's path is written out only for a refused regex.
            problems.push(Violation {
                field_path: path.to_string(),
                rule_id: RULE_RE2,
                message: Cow::Owned(refusal.to_string()),
            });
        }
    });
    problems
}
