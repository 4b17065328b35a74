//! Which regular expressions of a route's match the edge cannot serve.

use std::borrow::Cow;

use aether_api::config::v1::{RouteMatch, VirtualHostSpec, header_match, query_param_match, route_match::Path};
use aether_api::validate::Violation;

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
        .filter_map(|(index, route)| route.r#match.as_ref().map(|m| (index, m)))
        .flat_map(|(index, route_match)| route_regex_problems(index, route_match))
        .collect()
}

/// The regular expressions of route `index`'s match that Envoy would refuse.
pub(crate) fn route_regex_problems(index: usize, route_match: &RouteMatch) -> Vec<Violation> {
    let mut problems = Vec::new();
    // The field's path is written out only for a refused regex.
    let mut check = |regex: &str, field: &dyn Fn() -> String| {
        if let Err(refusal) = re2::check(regex) {
            problems.push(Violation {
                field_path: format!("spec.routes[{index}].match{}", field()),
                rule_id: RULE_RE2,
                message: Cow::Owned(refusal.to_string()),
            });
        }
    };
    if let Some(Path::Regex(regex)) = &route_match.path {
        check(regex, &|| ".regex".to_owned());
    }
    for (i, header) in route_match.headers.iter().enumerate() {
        if let Some(header_match::Value::Regex(regex)) = &header.value {
            check(regex, &|| format!(".headers[{i}].regex"));
        }
    }
    for (i, param) in route_match.query_params.iter().enumerate() {
        if let Some(query_param_match::Value::Regex(regex)) = &param.value {
            check(regex, &|| format!(".queryParams[{i}].regex"));
        }
    }
    problems
}
