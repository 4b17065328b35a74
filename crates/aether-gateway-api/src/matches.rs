//! A route's match as HTTPRoute matches.

use aether_api::config::v1::RouteMatch;
use aether_api::config::v1::route_match::Path;
use gateway_api::httproutes::{HttpRouteRulesMatches, HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType};

use crate::{NoteKind, Notes};

/// The HTTPRoute matches (any one matching) of the route match at `path`.
pub(crate) fn convert(matched: Option<&RouteMatch>, path: &str, notes: &mut Notes) -> Vec<HttpRouteRulesMatches> {
    let path_match = match matched.and_then(|matched| matched.path.as_ref()) {
        Some(Path::Exact(value)) => Some(path_value(HttpRouteRulesMatchesPathType::Exact, value)),
        Some(Path::Prefix(value)) => {
            prefix_note(value, &format!("{path}.prefix"), notes);
            Some(path_value(HttpRouteRulesMatchesPathType::PathPrefix, value))
        }
        None => None,
    };
    vec![HttpRouteRulesMatches {
        path: path_match,
        ..HttpRouteRulesMatches::default()
    }]
}

fn path_value(kind: HttpRouteRulesMatchesPathType, value: &str) -> HttpRouteRulesMatchesPath {
    HttpRouteRulesMatchesPath {
        r#type: Some(kind),
        value: Some(value.to_owned()),
    }
}

/// A VirtualHost prefix is compared character by character; a Gateway API
/// `PathPrefix` element by element (`/users` matches `/users/7`, not
/// `/users2`; a trailing `/` is ignored, so `/api/` matches `/api`). Only
/// `/` means the same in both.
fn prefix_note(value: &str, path: &str, notes: &mut Notes) {
    if value == "/" {
        return;
    }
    let example = if let Some(without) = value.strip_suffix('/') {
        format!("PathPrefix {value} also matches {without}, which this prefix does not")
    } else {
        format!(
            "PathPrefix {value} does not match {value}x, which this prefix does (it matches {value} and {value}/...)"
        )
    };
    notes.push(
        path,
        NoteKind::Differs,
        format!("Gateway API compares path prefixes by segment, not by character: {example}"),
    );
}
