//! What the route that serves a request does with it, as Envoy does it:
//! the cluster or split, the path and Host after rewrite, the redirect's
//! `Location`, header changes, timeout and retries.

use aether_projection::envoy_core::HeaderValueOption;
use aether_projection::envoy_core::header_value_option::HeaderAppendAction;
use aether_projection::envoy_route::redirect_action::{PathRewriteSpecifier, SchemeRewriteSpecifier};
use aether_projection::envoy_route::route::Action;
use aether_projection::envoy_route::route_action::{ClusterSpecifier, HostRewriteSpecifier};
use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::envoy_route::{RedirectAction, Route, RouteAction};
use aether_projection::{MISDIRECTED_STATUS, NO_WEIGHT_STATUS, WHOLE_PATH};
use envoy_types::pb::google::protobuf::Duration;

use crate::Request;
use crate::explanation::{HeaderChange, HeaderValues, Outcome, Retries, WeightedCluster};

/// Envoy's route timeout when the route sets none.
const ENVOY_DEFAULT_TIMEOUT: &str = "15s (Envoy's default)";

/// The outcome of `route` serving `request`, whose normalized path is `path`.
pub(crate) fn outcome(route: &Route, request: &Request, path: &str) -> Outcome {
    let changes = |add: &[HeaderValueOption], remove: &[String]| header_changes(add, remove);
    let mut response_headers = match changes(&route.response_headers_to_add, &route.response_headers_to_remove) {
        Ok(changes) => changes,
        Err(why) => return Outcome::Unpredictable { why },
    };
    // Measured on Envoy 1.40: the client always gets `server: envoy`,
    // whatever the route sets or removes (the connection manager writes it
    // after the route's changes: server_header_transformation OVERWRITE).
    response_headers.retain(|change| !overwritten_by_envoy(change.name()));
    match &route.action {
        Some(Action::Route(action)) => forward(route, action, request, path, response_headers),
        Some(Action::Redirect(redirect)) => match location(route, redirect, request, path) {
            Ok(location) => Outcome::Redirect {
                status: redirect_status(redirect.response_code),
                location,
                response_headers,
            },
            Err(why) => Outcome::Unpredictable { why },
        },
        Some(Action::DirectResponse(direct)) => Outcome::Respond {
            status: direct.status,
            why: match direct.status {
                NO_WEIGHT_STATUS => "the route's backends all have weight 0".to_owned(),
                MISDIRECTED_STATUS => "the connection's certificate is for another object's host".to_owned(),
                status => format!("the route answers {status} itself"),
            },
        },
        _ => Outcome::Unpredictable {
            why: "a route action the projection never writes".to_owned(),
        },
    }
}

fn forward(
    route: &Route,
    action: &RouteAction,
    request: &Request,
    path: &str,
    response_headers: Vec<HeaderChange>,
) -> Outcome {
    let clusters = match &action.cluster_specifier {
        Some(ClusterSpecifier::Cluster(cluster)) => vec![WeightedCluster {
            cluster: cluster.clone(),
            weight: 1,
        }],
        Some(ClusterSpecifier::WeightedClusters(split)) => split
            .clusters
            .iter()
            .map(|c| WeightedCluster {
                cluster: c.name.clone(),
                weight: c.weight.as_ref().map_or(0, |w| w.value),
            })
            .filter(|c| c.weight > 0)
            .collect(),
        _ => {
            return Outcome::Unpredictable {
                why: "a cluster choice the projection never writes".to_owned(),
            };
        }
    };
    let rewritten = if !action.prefix_rewrite.is_empty() {
        match route.r#match.as_ref().and_then(|m| m.path_specifier.as_ref()) {
            // The matched prefix swapped; for a whole-path match, the whole path.
            Some(PathSpecifier::Prefix(prefix)) => format!("{}{}", action.prefix_rewrite, &path[prefix.len()..]),
            _ => action.prefix_rewrite.clone(),
        }
    } else if let Some(rewrite) = &action.regex_rewrite {
        match rewrite.pattern.as_ref() {
            Some(pattern) if pattern.regex == WHOLE_PATH => rewrite.substitution.replace("\\\\", "\\"),
            _ => {
                return Outcome::Unpredictable {
                    why: "a path rewrite the projection never writes".to_owned(),
                };
            }
        }
    } else {
        path.to_owned()
    };
    let with_query = match request.query() {
        Some(query) => format!("{rewritten}?{query}"),
        None => rewritten,
    };
    let host = match &action.host_rewrite_specifier {
        Some(HostRewriteSpecifier::HostRewriteLiteral(host)) => host.clone(),
        None => request.host.clone(),
        _ => {
            return Outcome::Unpredictable {
                why: "a Host rewrite the projection never writes".to_owned(),
            };
        }
    };
    let request_changes = match header_changes(&route.request_headers_to_add, &route.request_headers_to_remove) {
        Ok(changes) => changes,
        Err(why) => return Outcome::Unpredictable { why },
    };
    let mut headers = request.headers.clone();
    HeaderChange::apply(&request_changes, &mut headers);
    let mut names: Vec<&str> = request_changes.iter().map(HeaderChange::name).collect();
    names.dedup();
    let mut seen = Vec::new();
    let request_headers = names
        .into_iter()
        .filter(|name| {
            let new = !seen.contains(name);
            seen.push(name);
            new
        })
        .map(|name| HeaderValues {
            name: name.to_owned(),
            values: headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .collect(),
        })
        .collect();
    let retries = action.retry_policy.as_ref().map(|policy| Retries {
        on: policy.retry_on.clone(),
        attempts: policy.num_retries.as_ref().map_or(1, |n| n.value),
        per_try_timeout: policy.per_try_timeout.as_ref().map(duration),
    });
    Outcome::Forward {
        clusters,
        path: with_query,
        host,
        request_headers,
        response_headers,
        timeout: action
            .timeout
            .as_ref()
            .map_or_else(|| ENVOY_DEFAULT_TIMEOUT.to_owned(), duration),
        retries,
    }
}

/// Whether Envoy writes this response header itself after a route's
/// changes, so that they never show.
pub(crate) fn overwritten_by_envoy(name: &str) -> bool {
    name.eq_ignore_ascii_case("server")
}

/// The header changes as Envoy makes them: every removal first, then each
/// value set or added, in order. Values are Envoy's substitution format, in
/// which the projection writes a literal `%` as `%%`.
fn header_changes(add: &[HeaderValueOption], remove: &[String]) -> Result<Vec<HeaderChange>, String> {
    let mut changes: Vec<HeaderChange> = remove
        .iter()
        .map(|name| HeaderChange::Remove { name: name.clone() })
        .collect();
    for option in add {
        let Some(header) = &option.header else { continue };
        let value = literal(&header.value)
            .ok_or_else(|| format!("header {}: a value Envoy computes (`{}`)", header.key, header.value))?;
        let name = header.key.clone();
        changes.push(match HeaderAppendAction::try_from(option.append_action) {
            Ok(HeaderAppendAction::OverwriteIfExistsOrAdd) => HeaderChange::Set { name, value },
            Ok(HeaderAppendAction::AppendIfExistsOrAdd) => HeaderChange::Add { name, value },
            _ => return Err(format!("header {name}: a change the projection never writes")),
        });
    }
    Ok(changes)
}

/// The literal a substitution format stands for, if it holds only
/// literals: `%%` is `%`; any other `%` names a value Envoy computes.
fn literal(format: &str) -> Option<String> {
    let mut out = String::with_capacity(format.len());
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        rest = rest[at..].strip_prefix("%%")?;
        out.push('%');
    }
    out.push_str(rest);
    Some(out)
}

/// The redirect's `Location`, as Envoy writes it: the scheme (the
/// request's unless replaced), the host (the request's `Host`, port and
/// all, unless replaced; a port replaces the port), then the path (swapped
/// whole or by its matched prefix) and the request's query.
fn location(route: &Route, redirect: &RedirectAction, request: &Request, path: &str) -> Result<String, String> {
    if redirect.strip_query
        || matches!(
            redirect.scheme_rewrite_specifier,
            Some(SchemeRewriteSpecifier::HttpsRedirect(_))
        )
    {
        return Err("a redirect the projection never writes".to_owned());
    }
    let scheme = match &redirect.scheme_rewrite_specifier {
        Some(SchemeRewriteSpecifier::SchemeRedirect(scheme)) => scheme.clone(),
        _ => request.scheme.as_str().to_owned(),
    };
    let mut host = if redirect.host_redirect.is_empty() {
        request.host.clone()
    } else {
        redirect.host_redirect.clone()
    };
    if redirect.port_redirect != 0 {
        host = format!("{}:{}", without_port(&host), redirect.port_redirect);
    }
    let new_path = match &redirect.path_rewrite_specifier {
        Some(PathRewriteSpecifier::PathRedirect(whole)) => whole.clone(),
        Some(PathRewriteSpecifier::PrefixRewrite(prefix)) => {
            match route.r#match.as_ref().and_then(|m| m.path_specifier.as_ref()) {
                Some(PathSpecifier::Prefix(matched)) => format!("{prefix}{}", &path[matched.len()..]),
                _ => prefix.clone(),
            }
        }
        None => path.to_owned(),
        _ => return Err("a redirect the projection never writes".to_owned()),
    };
    let query = request.query().map(|q| format!("?{q}")).unwrap_or_default();
    Ok(format!("{scheme}://{host}{new_path}{query}"))
}

fn without_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') => &host[..colon],
        _ => host,
    }
}

fn redirect_status(code: i32) -> u32 {
    use aether_projection::envoy_route::redirect_action::RedirectResponseCode as Code;
    match Code::try_from(code) {
        Ok(Code::MovedPermanently) => 301,
        Ok(Code::SeeOther) => 303,
        Ok(Code::TemporaryRedirect) => 307,
        Ok(Code::PermanentRedirect) => 308,
        _ => 302,
    }
}

/// A protobuf duration as people write it: `1.5s`, `250ms`, `30s`.
fn duration(duration: &Duration) -> String {
    let millis = i128::from(duration.seconds) * 1000 + i128::from(duration.nanos) / 1_000_000;
    if millis % 1000 == 0 {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_of_literals_is_its_text_and_any_other_is_no_literal() {
        assert_eq!(literal("50%%").as_deref(), Some("50%"));
        assert_eq!(literal("a%%%%b").as_deref(), Some("a%%b"));
        assert_eq!(literal("%REQ(x)%"), None);
        assert_eq!(literal("plain").as_deref(), Some("plain"));
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(&Duration { seconds: 30, nanos: 0 }), "30s");
        assert_eq!(
            duration(&Duration {
                seconds: 1,
                nanos: 500_000_000
            }),
            "1500ms"
        );
    }
}
