//! A route's actions as HTTPRoute filters and timeouts: `redirect` as a
//! RequestRedirect, `rewrite` as a URLRewrite, the header changes as
//! Request- and ResponseHeaderModifiers, `timeout` as `timeouts.request`.
//! `retries` has no standard HTTPRoute field (Gateway API's `retry` is
//! experimental), so it is left out with a note.

use aether_api::config::v1::{HeaderModifier, HttpRoute, route_redirect, route_rewrite};
use gateway_api::httproutes::{
    HttpRouteRulesFilters, HttpRouteRulesFiltersRequestHeaderModifier, HttpRouteRulesFiltersRequestHeaderModifierAdd,
    HttpRouteRulesFiltersRequestHeaderModifierSet, HttpRouteRulesFiltersRequestRedirect,
    HttpRouteRulesFiltersRequestRedirectPath, HttpRouteRulesFiltersRequestRedirectPathType,
    HttpRouteRulesFiltersRequestRedirectScheme, HttpRouteRulesFiltersResponseHeaderModifier,
    HttpRouteRulesFiltersResponseHeaderModifierAdd, HttpRouteRulesFiltersResponseHeaderModifierSet,
    HttpRouteRulesFiltersType, HttpRouteRulesFiltersUrlRewrite, HttpRouteRulesFiltersUrlRewritePath,
    HttpRouteRulesFiltersUrlRewritePathType, HttpRouteRulesTimeouts,
};

use crate::{NoteKind, Notes};

/// Why a prefix replacement may differ: Gateway API's `PathPrefix` match and
/// `ReplacePrefixMatch` work on whole path segments, a VirtualHost's on
/// characters.
const PREFIX_BY_SEGMENT: &str = "Gateway API's ReplacePrefixMatch replaces whole path segments (as its PathPrefix \
                                 matches them), where a VirtualHost replaces the characters its prefix matched; \
                                 paths where the two differ (`/api` of `/apix`, a trailing `/`) are rewritten \
                                 differently";

fn filter(kind: HttpRouteRulesFiltersType) -> HttpRouteRulesFilters {
    HttpRouteRulesFilters {
        r#type: kind,
        cors: None,
        extension_ref: None,
        request_header_modifier: None,
        request_mirror: None,
        request_redirect: None,
        response_header_modifier: None,
        url_rewrite: None,
    }
}

/// The filters of `route` (at `path`), in the order the edge applies them:
/// the request's headers, its rewrite or redirect, the response's headers.
pub(crate) fn filters(route: &HttpRoute, path: &str, notes: &mut Notes) -> Vec<HttpRouteRulesFilters> {
    let mut filters = Vec::new();
    if let Some(changes) = route.request_headers.as_ref().filter(|c| !is_empty(c)) {
        filters.push(HttpRouteRulesFilters {
            request_header_modifier: Some(HttpRouteRulesFiltersRequestHeaderModifier {
                set: list(&changes.set, |h| HttpRouteRulesFiltersRequestHeaderModifierSet {
                    name: h.name.clone(),
                    value: h.value.clone(),
                }),
                add: list(&changes.add, |h| HttpRouteRulesFiltersRequestHeaderModifierAdd {
                    name: h.name.clone(),
                    value: h.value.clone(),
                }),
                remove: (!changes.remove.is_empty()).then(|| changes.remove.clone()),
            }),
            ..filter(HttpRouteRulesFiltersType::RequestHeaderModifier)
        });
    }
    if let Some(rewrite) = &route.rewrite {
        let path_change = rewrite.replace.as_ref().map(|replace| match replace {
            route_rewrite::Replace::Prefix(prefix) => {
                notes.push(format!("{path}.rewrite.prefix"), NoteKind::Differs, PREFIX_BY_SEGMENT);
                HttpRouteRulesFiltersUrlRewritePath {
                    r#type: HttpRouteRulesFiltersUrlRewritePathType::ReplacePrefixMatch,
                    replace_prefix_match: Some(prefix.clone()),
                    replace_full_path: None,
                }
            }
            route_rewrite::Replace::Path(full) => HttpRouteRulesFiltersUrlRewritePath {
                r#type: HttpRouteRulesFiltersUrlRewritePathType::ReplaceFullPath,
                replace_full_path: Some(full.clone()),
                replace_prefix_match: None,
            },
        });
        let hostname = (!rewrite.host.is_empty()).then(|| rewrite.host.clone());
        if path_change.is_some() || hostname.is_some() {
            filters.push(HttpRouteRulesFilters {
                url_rewrite: Some(HttpRouteRulesFiltersUrlRewrite {
                    hostname,
                    path: path_change,
                }),
                ..filter(HttpRouteRulesFiltersType::UrlRewrite)
            });
        }
    }
    if let Some(redirect) = &route.redirect {
        let path_change = redirect.replace.as_ref().map(|replace| match replace {
            route_redirect::Replace::Prefix(prefix) => {
                notes.push(format!("{path}.redirect.prefix"), NoteKind::Differs, PREFIX_BY_SEGMENT);
                HttpRouteRulesFiltersRequestRedirectPath {
                    r#type: HttpRouteRulesFiltersRequestRedirectPathType::ReplacePrefixMatch,
                    replace_prefix_match: Some(prefix.clone()),
                    replace_full_path: None,
                }
            }
            route_redirect::Replace::Path(full) => HttpRouteRulesFiltersRequestRedirectPath {
                r#type: HttpRouteRulesFiltersRequestRedirectPathType::ReplaceFullPath,
                replace_full_path: Some(full.clone()),
                replace_prefix_match: None,
            },
        });
        let scheme = match redirect.scheme.as_str() {
            "http" => Some(HttpRouteRulesFiltersRequestRedirectScheme::Http),
            "https" => Some(HttpRouteRulesFiltersRequestRedirectScheme::Https),
            _ => None,
        };
        if matches!(redirect.status_code, 303 | 307 | 308) {
            notes.push(
                format!("{path}.redirect.statusCode"),
                NoteKind::Differs,
                format!(
                    "Gateway API implementations must support 301 and 302; one that does not support {} marks \
                     the route not accepted (UnsupportedValue)",
                    redirect.status_code
                ),
            );
        }
        filters.push(HttpRouteRulesFilters {
            request_redirect: Some(HttpRouteRulesFiltersRequestRedirect {
                hostname: (!redirect.host.is_empty()).then(|| redirect.host.clone()),
                path: path_change,
                port: (redirect.port != 0)
                    .then(|| i32::try_from(redirect.port).ok())
                    .flatten(),
                scheme,
                status_code: (redirect.status_code != 0).then_some(i64::from(redirect.status_code)),
            }),
            ..filter(HttpRouteRulesFiltersType::RequestRedirect)
        });
    }
    if let Some(changes) = route.response_headers.as_ref().filter(|c| !is_empty(c)) {
        filters.push(HttpRouteRulesFilters {
            response_header_modifier: Some(HttpRouteRulesFiltersResponseHeaderModifier {
                set: list(&changes.set, |h| HttpRouteRulesFiltersResponseHeaderModifierSet {
                    name: h.name.clone(),
                    value: h.value.clone(),
                }),
                add: list(&changes.add, |h| HttpRouteRulesFiltersResponseHeaderModifierAdd {
                    name: h.name.clone(),
                    value: h.value.clone(),
                }),
                remove: (!changes.remove.is_empty()).then(|| changes.remove.clone()),
            }),
            ..filter(HttpRouteRulesFiltersType::ResponseHeaderModifier)
        });
    }
    if let Some(retries) = &route.retries {
        let on = if retries.retry_on.is_empty() {
            "connect-failure, refused-stream, reset-before-request".to_owned()
        } else {
            retries.retry_on.join(", ")
        };
        notes.push(
            format!("{path}.retries"),
            NoteKind::Dropped,
            format!(
                "HTTPRoute's retry is experimental (not in the standard channel) and retries on status codes \
                 only: not written ({} attempts on {on}); the Gateway's own retry policy applies",
                retries.attempts
            ),
        );
    }
    filters
}

/// The rule's `timeouts`: `timeout` as `request` (both Gateway API's
/// duration form, `0s` turning it off in both).
pub(crate) fn timeouts(route: &HttpRoute) -> Option<HttpRouteRulesTimeouts> {
    (!route.timeout.is_empty()).then(|| HttpRouteRulesTimeouts {
        request: Some(route.timeout.clone()),
        backend_request: None,
    })
}

fn is_empty(changes: &HeaderModifier) -> bool {
    changes.set.is_empty() && changes.add.is_empty() && changes.remove.is_empty()
}

fn list<T, U>(items: &[T], each: impl Fn(&T) -> U) -> Option<Vec<U>> {
    (!items.is_empty()).then(|| items.iter().map(each).collect())
}
