//! A route's action as Envoy's: where it sends (one backend, a weighted
//! split, or a redirect), how it rewrites the path and Host, which headers
//! it changes on either side, its timeout and its retry policy.
//!
//! Built only for a route Envoy would take: what it refuses
//! (`aether_edge_limits::route_problems`, rule [`RULE_ENVOY`](aether_edge_limits::RULE_ENVOY))
//! is left out before (see [`crate::envoy`]), so nothing here fails.

use std::collections::BTreeMap;
use std::time::Duration;

use aether_api::config::v1::HttpRoute;
use aether_edge_limits::{header_value_literal, parse_gateway_duration};
use envoy_types::pb::envoy::config::core::v3::header_value_option::HeaderAppendAction;
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::envoy::r#type::matcher::v3::{RegexMatchAndSubstitute, RegexMatcher};
use envoy_types::pb::google::protobuf::{Duration as ProtoDuration, UInt32Value};

use crate::cluster_name;

/// The status of a weighted split whose weights are all 0: Gateway API's
/// HTTPRoute answers such a request with 500, and Envoy refuses a split
/// whose weights add up to 0, so the route answers it itself.
pub const NO_WEIGHT_STATUS: u32 = 500;

/// A Duration as protobuf's.
pub(crate) fn proto_duration(duration: Duration) -> ProtoDuration {
    ProtoDuration {
        // Saturates rather than wraps for absurd durations.
        seconds: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(duration.subsec_nanos()).unwrap_or(0),
    }
}

/// What a route adds to its Envoy `Route` besides the match: its action
/// and its header changes.
pub(crate) struct Actions {
    pub action: route::route::Action,
    pub request_headers_to_add: Vec<HeaderValueOption>,
    pub request_headers_to_remove: Vec<String>,
    pub response_headers_to_add: Vec<HeaderValueOption>,
    pub response_headers_to_remove: Vec<String>,
}

/// A route's actions, `None` for a route without any (which validation
/// refuses). `default_retry` is the projection's policy, for routes without
/// `retries`.
pub(crate) fn actions(http_route: &HttpRoute, default_retry: Option<&route::RetryPolicy>) -> Option<Actions> {
    let action = action(http_route, default_retry)?;
    let request = header_changes(http_route.request_headers.as_ref());
    let response = header_changes(http_route.response_headers.as_ref());
    Some(Actions {
        action,
        request_headers_to_add: request.0,
        request_headers_to_remove: request.1,
        response_headers_to_add: response.0,
        response_headers_to_remove: response.1,
    })
}

/// The route's Envoy action: a redirect, or a route to one cluster or a
/// weighted split (or a 500 for a split of weight 0). `None` for a route
/// without any (which validation refuses).
fn action(http_route: &HttpRoute, default_retry: Option<&route::RetryPolicy>) -> Option<route::route::Action> {
    if let Some(redirect) = &http_route.redirect {
        return Some(route::route::Action::Redirect(redirect_action(redirect)));
    }
    let cluster_specifier = if let Some(backend) = &http_route.backend {
        route::route_action::ClusterSpecifier::Cluster(cluster_name(&backend.service, backend.port))
    } else if !http_route.backends.is_empty() {
        // The same cluster twice is one entry, its weights added; weight 0
        // takes no traffic, so it is not an entry at all.
        let mut weights: BTreeMap<String, u64> = BTreeMap::new();
        for backend in &http_route.backends {
            *weights.entry(cluster_name(&backend.service, backend.port)).or_default() += u64::from(backend.weight);
        }
        weights.retain(|_, weight| *weight > 0);
        let total: u64 = weights.values().sum();
        if total == 0 {
            return Some(route::route::Action::DirectResponse(route::DirectResponseAction {
                status: NO_WEIGHT_STATUS,
                ..Default::default()
            }));
        }
        // In listed order, as written.
        let mut clusters = Vec::with_capacity(weights.len());
        for backend in &http_route.backends {
            let name = cluster_name(&backend.service, backend.port);
            if let Some(weight) = weights.remove(&name) {
                clusters.push(route::weighted_cluster::ClusterWeight {
                    name,
                    // At most the total, which Envoy's limit bounds (checked).
                    weight: Some(UInt32Value {
                        value: u32::try_from(weight).unwrap_or(u32::MAX),
                    }),
                    ..Default::default()
                });
            }
        }
        route::route_action::ClusterSpecifier::WeightedClusters(route::WeightedCluster {
            clusters,
            ..Default::default()
        })
    } else {
        return None;
    };
    let mut action = route::RouteAction {
        cluster_specifier: Some(cluster_specifier),
        retry_policy: default_retry.cloned(),
        ..Default::default()
    };
    if let Some(rewrite) = &http_route.rewrite {
        apply_rewrite(rewrite, &mut action);
    }
    // A timeout the edge cannot read is checked: left out before.
    if let Ok(timeout) = parse_gateway_duration(&http_route.timeout) {
        action.timeout = Some(proto_duration(timeout));
    }
    if let Some(retries) = &http_route.retries {
        action.retry_policy = retry_override(retries, default_retry);
    }
    Some(route::route::Action::Route(action))
}

/// A substitution of RE2's rewrite, in which `\` starts a capture
/// reference: literal, so `\` is doubled (a path holds none; kept safe).
fn rewrite_literal(value: &str) -> String {
    value.replace('\\', "\\\\")
}

/// The header changes of one side: the entries to add (`set` overwrites,
/// `add` appends) and the names to remove.
fn header_changes(changes: Option<&aether_api::config::v1::HeaderModifier>) -> (Vec<HeaderValueOption>, Vec<String>) {
    let Some(changes) = changes else {
        return (Vec::new(), Vec::new());
    };
    let mut add = Vec::with_capacity(changes.set.len() + changes.add.len());
    for (entries, append_action) in [
        (&changes.set, HeaderAppendAction::OverwriteIfExistsOrAdd),
        (&changes.add, HeaderAppendAction::AppendIfExistsOrAdd),
    ] {
        for header in entries {
            add.push(HeaderValueOption {
                header: Some(HeaderValue {
                    key: header.name.clone(),
                    value: header_value_literal(&header.value),
                    ..Default::default()
                }),
                append_action: append_action as i32,
                ..Default::default()
            });
        }
    }
    (add, changes.remove.clone())
}

/// `rewrite` on Envoy's route action: `prefix` is Envoy's `prefix_rewrite`
/// (the matched prefix swapped for it), `path` a `regex_rewrite` of the
/// whole path (`^/.*$`; the query is kept), `host` `host_rewrite_literal`.
fn apply_rewrite(rewrite: &aether_api::config::v1::RouteRewrite, action: &mut route::RouteAction) {
    use aether_api::config::v1::route_rewrite::Replace as Path;
    match &rewrite.replace {
        Some(Path::Prefix(prefix)) => action.prefix_rewrite = prefix.clone(),
        Some(Path::Path(path)) => {
            action.regex_rewrite = Some(RegexMatchAndSubstitute {
                pattern: Some(RegexMatcher {
                    regex: WHOLE_PATH.to_owned(),
                    engine_type: None,
                }),
                substitution: rewrite_literal(path),
            });
        }
        None => {}
    }
    if !rewrite.host.is_empty() {
        action.host_rewrite_specifier = Some(route::route_action::HostRewriteSpecifier::HostRewriteLiteral(
            rewrite.host.clone(),
        ));
    }
}

/// The regular expression of a whole-path rewrite: every request path
/// (Envoy rewrites the path without its query).
pub const WHOLE_PATH: &str = "^/.*$";

/// `redirect` as Envoy's `RedirectAction`, as Gateway API's
/// `RequestRedirect`: the status defaults to 302; a scheme without a port
/// redirects to that scheme's port (80, 443), not the request's: with a
/// `host`, Envoy writes no port; without, it writes the scheme's.
fn redirect_action(redirect: &aether_api::config::v1::RouteRedirect) -> route::RedirectAction {
    use aether_api::config::v1::route_redirect::Replace as Path;
    use route::redirect_action::{PathRewriteSpecifier, RedirectResponseCode, SchemeRewriteSpecifier};
    let response_code = match redirect.status_code {
        0 | 302 => RedirectResponseCode::Found,
        301 => RedirectResponseCode::MovedPermanently,
        303 => RedirectResponseCode::SeeOther,
        307 => RedirectResponseCode::TemporaryRedirect,
        308 => RedirectResponseCode::PermanentRedirect,
        // Another status is checked: left out before.
        _ => RedirectResponseCode::Found,
    };
    let scheme = redirect.scheme.to_ascii_lowercase();
    // Envoy keeps the request's port unless told one, or unless `host`
    // replaces the whole authority; a scheme without a port goes to that
    // scheme's port, so Envoy is told it (and writes it: `https://h:443/`).
    let port_redirect = match (redirect.port, scheme.as_str(), redirect.host.is_empty()) {
        (0, "https", true) => 443,
        (0, "http", true) => 80,
        (port, _, _) => port,
    };
    let path_rewrite_specifier = match &redirect.replace {
        Some(Path::Path(path)) => Some(PathRewriteSpecifier::PathRedirect(path.clone())),
        Some(Path::Prefix(prefix)) => Some(PathRewriteSpecifier::PrefixRewrite(prefix.clone())),
        None => None,
    };
    route::RedirectAction {
        host_redirect: redirect.host.clone(),
        port_redirect,
        response_code: response_code as i32,
        strip_query: false,
        scheme_rewrite_specifier: (!scheme.is_empty()).then_some(SchemeRewriteSpecifier::SchemeRedirect(scheme)),
        path_rewrite_specifier,
    }
}

/// `retries`, replacing the projection's policy for the route: `attempts`
/// retries (0: none, no policy at all) on the conditions of `on` (the
/// default policy's when empty), each try bounded by `perTryTimeout`.
fn retry_override(
    retries: &aether_api::config::v1::RouteRetry,
    default_retry: Option<&route::RetryPolicy>,
) -> Option<route::RetryPolicy> {
    if retries.attempts == 0 {
        return None;
    }
    let retry_on = if retries.retry_on.is_empty() {
        default_retry.map_or_else(
            || crate::RetryConfig::default().retry_on,
            |policy| policy.retry_on.clone(),
        )
    } else {
        retries.retry_on.join(",")
    };
    // Empty or `0s`: no bound of its own; one the edge cannot read is
    // checked: left out before.
    let per_try_timeout = parse_gateway_duration(&retries.per_try_timeout)
        .ok()
        .filter(|timeout| *timeout != Duration::ZERO)
        .map(proto_duration);
    Some(route::RetryPolicy {
        retry_on,
        num_retries: Some(UInt32Value {
            value: retries.attempts,
        }),
        per_try_timeout,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use aether_api::config::v1::{HeaderModifier, HeaderValue as ApiHeader, HttpRoute};

    fn header(name: &str, value: &str) -> ApiHeader {
        ApiHeader {
            name: name.into(),
            value: value.into(),
        }
    }

    fn backend() -> Option<aether_api::config::v1::RouteBackend> {
        Some(aether_api::config::v1::RouteBackend {
            service: "svc".into(),
            port: 0,
        })
    }

    #[test]
    fn edge_problems_name_refused_regexes_and_actions_as_the_projection_leaves_them_out() {
        use aether_api::config::v1::{RouteMatch, VirtualHostSpec, route_match::Path};
        let route = |path: Path, header_name: &str| HttpRoute {
            r#match: Some(RouteMatch {
                path: Some(path),
                ..Default::default()
            }),
            backend: backend(),
            request_headers: Some(HeaderModifier {
                set: vec![header(header_name, "a")],
                ..Default::default()
            }),
            ..Default::default()
        };
        let spec = VirtualHostSpec {
            hosts: vec!["a.test".into()],
            routes: vec![
                route(Path::Prefix("/a".into()), "x-fine"),
                route(Path::Prefix("/b".into()), "host"),
                // A refused regex is the reason given, whatever else.
                route(Path::Regex("[a-z]{200}".into()), "host"),
            ],
            ..Default::default()
        };
        let problems: Vec<(String, &str)> = aether_edge_limits::edge_problems(&spec)
            .into_iter()
            .map(|p| (p.field_path, p.rule_id))
            .collect();
        assert_eq!(
            problems,
            [
                (
                    "spec.routes[1].requestHeaders.set[0].name".to_owned(),
                    aether_edge_limits::RULE_ENVOY
                ),
                ("spec.routes[2].match.regex".to_owned(), aether_edge_limits::RULE_RE2),
            ]
        );
        let (_, left_out) = crate::envoy::encoded_routes(&spec, None);
        let left_out: Vec<(String, &str)> = left_out.into_iter().map(|p| (p.field_path, p.rule_id)).collect();
        assert_eq!(left_out, problems);
    }
}
