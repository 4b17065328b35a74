//! Which route a request takes when several match.
//!
//! A VirtualHost with `routeOrder` absent or `LISTED` takes the first
//! listed route that matches. Gateway API takes the match of highest
//! precedence: an exact path, then the longest path prefix, then a method,
//! then the most header matches, then the most query parameter matches;
//! ties keep rule order. Where that precedence puts two routes one request
//! can match in the other order, the request goes elsewhere after
//! conversion. `SPECIFICITY` is that precedence already, but for regular
//! expression paths, which Gateway API leaves to each implementation (this
//! API ranks them after exact paths and before prefixes).

use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{HttpRoute, RouteOrder, VirtualHostSpec};

use crate::{NoteKind, Notes};

/// Gateway API's precedence of a route's match, greatest first when sorted
/// in reverse: exact path, prefix length, a method, headers, query
/// parameters. A regular expression path has no rank there: it is ranked
/// as a prefix of its length, and any route with one may overlap.
fn precedence(route: &HttpRoute) -> (bool, usize, bool, usize, usize) {
    let Some(matched) = &route.r#match else {
        return (false, 0, false, 0, 0);
    };
    let (exact, length) = match &matched.path {
        Some(Path::Exact(_)) => (true, 0),
        Some(Path::Prefix(value) | Path::Regex(value)) => (false, value.len()),
        None => (false, 0),
    };
    (
        exact,
        length,
        !matched.methods.is_empty(),
        matched.headers.len(),
        matched.query_params.len(),
    )
}

/// Whether one request can match both paths (character-wise, as the
/// VirtualHost compares; a regular expression, or no path, may match any).
fn may_overlap(a: &HttpRoute, b: &HttpRoute) -> bool {
    let path = |route: &HttpRoute| route.r#match.as_ref().and_then(|matched| matched.path.clone());
    match (path(a), path(b)) {
        (Some(Path::Exact(a)), Some(Path::Exact(b))) => a == b,
        (Some(Path::Exact(exact)), Some(Path::Prefix(prefix)))
        | (Some(Path::Prefix(prefix)), Some(Path::Exact(exact))) => exact.starts_with(&prefix),
        (Some(Path::Prefix(a)), Some(Path::Prefix(b))) => a.starts_with(&b) || b.starts_with(&a),
        _ => true,
    }
}

/// A note for the first two routes a request can both match that Gateway
/// API's precedence tries in the other order than the VirtualHost does.
pub(crate) fn check(spec: &VirtualHostSpec, notes: &mut Notes) {
    let has_regex = |route: &HttpRoute| {
        matches!(
            route.r#match.as_ref().and_then(|matched| matched.path.as_ref()),
            Some(Path::Regex(_))
        )
    };
    if spec.route_order == RouteOrder::Specificity as i32 {
        if spec.routes.iter().any(has_regex) {
            notes.push(
                "spec.routeOrder",
                NoteKind::Differs,
                "Gateway API leaves the precedence of regular expression paths to each implementation; here they \
                 come after exact paths and before prefixes",
            );
        }
        return;
    }
    let mut sorted: Vec<usize> = (0..spec.routes.len()).collect();
    // Stable: ties keep list order, as Gateway API keeps rule order.
    sorted.sort_by_key(|&index| std::cmp::Reverse(precedence(&spec.routes[index])));
    for (position, &later) in sorted.iter().enumerate() {
        // `earlier` is listed before `later` but tried after it.
        let swapped = sorted[position + 1..]
            .iter()
            .find(|&&earlier| earlier < later && may_overlap(&spec.routes[earlier], &spec.routes[later]));
        if let Some(&earlier) = swapped {
            notes.push(
                "spec.routes",
                NoteKind::Differs,
                format!(
                    "Gateway API tries routes by precedence (exact path, longest prefix, method, headers, query \
                     parameters), not in list order: routes[{later}] comes before routes[{earlier}], listed before \
                     it, so a request both match goes to routes[{later}]'s backend after conversion"
                ),
            );
            return;
        }
    }
}
