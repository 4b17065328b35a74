//! The order in which routes are tried: as listed, or by specificity
//! (`routeOrder`, [`RouteOrder`]).
//!
//! Specificity is Gateway API's HTTPRoute precedence: an `exact` path, then
//! the longest path prefix, then a method, then the most header matches,
//! then the most query parameter matches; ties keep the listed order.
//! Gateway API leaves regular expression paths to each implementation;
//! here they come after `exact` paths and before prefixes, where Envoy
//! Gateway puts them. This is the one definition of that order: the edge's
//! (the projection) and a Gateway's (the Gateway API converter) are both
//! read from it.
//!
//! How long a prefix is depends on who compares it, so the caller measures
//! it: the edge compares paths in the form its Envoy normalizes requests to
//! (`/%7Eu` is `/~u` there), a Gateway compares them as an HTTPRoute holds
//! them. For a path already in that form (most are: one without escapes
//! such as `%7E`) both measures agree.
//!
//! ```
//! use aether_api::config::v1::{HttpRoute, RouteMatch, RouteOrder, VirtualHostSpec, route_match::Path};
//! use aether_api::precedence;
//!
//! let route = |path| HttpRoute {
//!     r#match: Some(RouteMatch { path: Some(path), ..RouteMatch::default() }),
//!     ..HttpRoute::default()
//! };
//! let mut spec = VirtualHostSpec {
//!     routes: vec![route(Path::Prefix("/".into())), route(Path::Exact("/healthz".into()))],
//!     ..VirtualHostSpec::default()
//! };
//! assert_eq!(precedence::route_order(&spec, str::len), [0, 1]);
//! spec.route_order = RouteOrder::Specificity.into();
//! assert_eq!(precedence::route_order(&spec, str::len), [1, 0]);
//! ```

use std::cmp::Reverse;

use crate::config::v1::{HttpRoute, RouteMatch, RouteOrder, VirtualHostSpec, route_match::Path};

/// The indices of `spec.routes` in the order they are tried: as listed, or,
/// with `routeOrder: SPECIFICITY`, [`by_specificity`]. `prefix_len` is the
/// length of a `prefix` path as the router compares it.
pub fn route_order(spec: &VirtualHostSpec, prefix_len: impl Fn(&str) -> usize) -> Vec<usize> {
    if spec.route_order == RouteOrder::Specificity as i32 {
        by_specificity(&spec.routes, prefix_len)
    } else {
        (0..spec.routes.len()).collect()
    }
}

/// The indices of `routes`, most specific first (the module's order), ties
/// in listed order: a stable sort, as Gateway API keeps rule order.
/// `prefix_len` is the length of a `prefix` path as the router compares it.
pub fn by_specificity(routes: &[HttpRoute], prefix_len: impl Fn(&str) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..routes.len()).collect();
    order.sort_by_cached_key(|&index| Specificity::of(routes[index].r#match.as_ref(), &prefix_len));
    order
}

/// A route's rank, lower first: the field order is the precedence.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Specificity {
    path_kind: PathKind,
    /// The longest prefix first.
    longer_prefix: Reverse<usize>,
    /// Routes with `methods` before those without.
    no_methods: bool,
    /// More header matches first.
    more_headers: Reverse<usize>,
    /// More query parameter matches first.
    more_query_params: Reverse<usize>,
}

/// The kinds of path, in their precedence.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PathKind {
    Exact,
    Regex,
    Prefix,
    /// No path: not in a valid object, so last.
    Absent,
}

impl Specificity {
    fn of(route_match: Option<&RouteMatch>, prefix_len: impl Fn(&str) -> usize) -> Self {
        // Every field named (no `..`): a new match field fails to compile
        // here until its rank is decided.
        let Some(RouteMatch {
            path,
            methods,
            headers,
            query_params,
        }) = route_match
        else {
            return Specificity {
                path_kind: PathKind::Absent,
                longer_prefix: Reverse(0),
                no_methods: true,
                more_headers: Reverse(0),
                more_query_params: Reverse(0),
            };
        };
        let (path_kind, length) = match path {
            Some(Path::Exact(_)) => (PathKind::Exact, 0),
            Some(Path::Regex(_)) => (PathKind::Regex, 0),
            Some(Path::Prefix(prefix)) => (PathKind::Prefix, prefix_len(prefix)),
            None => (PathKind::Absent, 0),
        };
        Specificity {
            path_kind,
            longer_prefix: Reverse(length),
            no_methods: methods.is_empty(),
            more_headers: Reverse(headers.len()),
            more_query_params: Reverse(query_params.len()),
        }
    }
}
