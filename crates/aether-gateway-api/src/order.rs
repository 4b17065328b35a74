//! Which route a request takes when several match.
//!
//! A VirtualHost (`routeOrder` absent or `LISTED`) takes the first listed
//! route that matches. Gateway API takes the match of highest precedence:
//! an exact path, then the longest path prefix, then a method, then the
//! most header matches, then the most query parameter matches; ties keep
//! rule order. Where sorting the routes by that precedence changes their
//! order, a request both match can go elsewhere after conversion.

use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{HttpRoute, VirtualHostSpec};

use crate::{NoteKind, Notes};

/// Gateway API's precedence of a route's match, greatest first when sorted
/// in reverse: (exact path, prefix length).
fn precedence(route: &HttpRoute) -> (bool, usize) {
    match route.r#match.as_ref().and_then(|matched| matched.path.as_ref()) {
        Some(Path::Exact(_)) => (true, 0),
        Some(Path::Prefix(prefix)) => (false, prefix.len()),
        None => (false, 0),
    }
}

/// Whether one request can match both paths (character-wise, as the
/// VirtualHost compares; a route without a path is taken to match all).
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
/// API's precedence tries in the other order than the list.
pub(crate) fn check(spec: &VirtualHostSpec, notes: &mut Notes) {
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
