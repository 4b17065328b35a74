//! Which route a request takes when several match.
//!
//! A VirtualHost tries its routes as listed, or, with `routeOrder:
//! SPECIFICITY`, by Gateway API's precedence; a Gateway always tries them
//! by precedence. Both orders are [`aether_api::precedence`]'s. Where the
//! listed order puts two routes one request can match in the other order,
//! the request goes elsewhere after conversion. Gateway API leaves the
//! rank of regular expression paths to each implementation (the order
//! takes Envoy Gateway's), which is noted. A Gateway measures a prefix as
//! the HTTPRoute holds it, as written; the edge in the form its Envoy
//! compares: the same for most (a prefix without escapes such as `%7E`).

use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{HttpRoute, RouteOrder, VirtualHostSpec};
use aether_api::precedence;

use crate::{NoteKind, Notes};

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
/// API's precedence tries in the other order than the VirtualHost does;
/// with `SPECIFICITY`, one for the rank of regular expression paths (listed,
/// each such path's own note says it).
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
                 come after exact paths and before prefixes, as in Envoy Gateway",
            );
        }
        // Otherwise the same order as a Gateway's: both `by_specificity`.
        return;
    }
    // The HTTPRoute holds the paths as written: a Gateway measures them so.
    let gateway = precedence::by_specificity(&spec.routes, str::len);
    for (position, &later) in gateway.iter().enumerate() {
        // `earlier` is listed before `later` but tried after it.
        let swapped = gateway[position + 1..]
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
