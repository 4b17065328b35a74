//! `project -o text`: the snapshot for people, one line per host served,
//! route, conflict and object left out, then counts. The whole snapshot is
//! `-o yaml` (the default) or `-o json`.

use std::io::{self, Write};

use aether_projection::envoy_core::HeaderValueOption;
use aether_projection::envoy_core::header_value_option::HeaderAppendAction;
use aether_projection::envoy_route::redirect_action::{
    PathRewriteSpecifier, RedirectResponseCode, SchemeRewriteSpecifier,
};
use aether_projection::envoy_route::route::Action;
use aether_projection::envoy_route::route_action::{ClusterSpecifier, HostRewriteSpecifier};
use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::envoy_route::{RedirectAction, Route, RouteAction, RouteConfiguration};
use aether_projection::{LeftOutReason, RetryConfig, Snapshot};

/// Writes the summary:
///
/// ```text
/// NAMESPACE/NAME: HOST, HOST
///   prefix PATH -> CLUSTER
///   exact PATH -> CLUSTER (WEIGHT), CLUSTER (WEIGHT); rewrite prefix P; timeout 15s; request headers: set N=V
///   prefix PATH -> redirect 301 https://HOST:PORT prefix P
/// conflict: host HOST: served by NAMESPACE/NAME, not NAMESPACE/NAME
/// left out: NAMESPACE/NAME: WHY
/// route left out: NAMESPACE/NAME: FIELD: WHY [RULE]
/// N virtual host(s), N route(s), N backend service(s), N TLS secret(s); N host conflict(s), N left out
/// ```
pub fn write(snapshot: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
    let configuration: RouteConfiguration = snapshot
        .route_configuration()
        .map_err(|e| io::Error::other(format!("the projected route configuration does not decode: {e}")))?;
    let mut routes = 0;
    for host in &configuration.virtual_hosts {
        writeln!(out, "{}: {}", host.name, host.domains.join(", "))?;
        for route in &host.routes {
            writeln!(out, "  {}", describe(route))?;
        }
        routes += host.routes.len();
    }
    let report = &snapshot.report;
    for conflict in &report.conflicts {
        writeln!(
            out,
            "conflict: host {}: served by {}, not {}",
            conflict.host, conflict.winner, conflict.loser
        )?;
    }
    for left_out in &report.left_out {
        let why = match &left_out.reason {
            LeftOutReason::NoHostsLeft => "every host went to an older object".to_owned(),
            LeftOutReason::Invalid { problems } | LeftOutReason::Unsupported { problems } => {
                let kind = match left_out.reason {
                    LeftOutReason::Unsupported { .. } => "unsupported",
                    _ => "invalid",
                };
                let problems: Vec<String> = problems
                    .iter()
                    .map(|p| format!("{}: {} [{}]", p.field_path, p.message, p.rule_id))
                    .collect();
                format!("{kind}: {}", problems.join("; "))
            }
        };
        writeln!(out, "left out: {}: {why}", left_out.object)?;
    }
    for routes in &report.routes_left_out {
        for problem in &routes.problems {
            writeln!(
                out,
                "route left out: {}: {}: {} [{}]",
                routes.object, problem.field_path, problem.message, problem.rule_id
            )?;
        }
    }
    writeln!(
        out,
        "{} virtual host(s), {routes} route(s), {} backend service(s), {} TLS secret(s); {} host conflict(s), {} left out",
        configuration.virtual_hosts.len(),
        snapshot.dependencies.len(),
        snapshot.tls_secrets.len(),
        report.conflicts.len(),
        report.left_out.len()
    )
}

/// `prefix /users -> CLUSTER`, `exact /healthz -> CLUSTER`, `regex
/// /users/[0-9]+ if :method, x-env; ?version -> CLUSTER` (the headers and
/// query parameters a route also requires, by name); a match or action of
/// another shape is named as such rather than left out.
fn describe(route: &Route) -> String {
    let mut path = match route.r#match.as_ref().and_then(|m| m.path_specifier.as_ref()) {
        Some(PathSpecifier::Prefix(prefix)) => format!("prefix {prefix}"),
        Some(PathSpecifier::Path(path)) => format!("exact {path}"),
        Some(PathSpecifier::SafeRegex(regex)) => format!("regex {}", regex.regex),
        Some(other) => format!("{other:?}"),
        None => "any path".to_owned(),
    };
    if let Some(matched) = &route.r#match {
        let headers: Vec<&str> = matched.headers.iter().map(|header| header.name.as_str()).collect();
        let query: Vec<String> = matched
            .query_parameters
            .iter()
            .map(|parameter| format!("?{}", parameter.name))
            .collect();
        let required: Vec<String> = headers.into_iter().map(str::to_owned).chain(query).collect();
        if !required.is_empty() {
            path = format!("{path} if {}", required.join(", "));
        }
    }
    let to = match &route.action {
        Some(Action::Route(action)) => route_action(action),
        Some(Action::Redirect(redirect)) => redirect_action(redirect),
        Some(Action::DirectResponse(response)) => format!("answer {}", response.status),
        other => format!("{other:?}"),
    };
    let mut line = format!("{path} -> {to}");
    for (side, add, remove) in [
        (
            "request",
            &route.request_headers_to_add,
            &route.request_headers_to_remove,
        ),
        (
            "response",
            &route.response_headers_to_add,
            &route.response_headers_to_remove,
        ),
    ] {
        if let Some(changes) = header_changes(add, remove) {
            line.push_str(&format!("; {side} headers: {changes}"));
        }
    }
    line
}

/// `CLUSTER`, or `CLUSTER (WEIGHT), ...`; then the rewrites, the timeout
/// and the retry policy when the route has its own (`retries 3 on 5xx,
/// per try 2s`; `no retries` when it turns the default off).
fn route_action(action: &RouteAction) -> String {
    let mut out = match &action.cluster_specifier {
        Some(ClusterSpecifier::Cluster(cluster)) => cluster.clone(),
        Some(ClusterSpecifier::WeightedClusters(weighted)) => weighted
            .clusters
            .iter()
            .map(|c| format!("{} ({})", c.name, c.weight.map(|w| w.value).unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", "),
        other => format!("{other:?}"),
    };
    if !action.prefix_rewrite.is_empty() {
        out.push_str(&format!("; rewrite prefix {}", action.prefix_rewrite));
    }
    if let Some(regex) = &action.regex_rewrite {
        out.push_str(&format!("; rewrite path {}", regex.substitution.replace("\\\\", "\\")));
    }
    if let Some(HostRewriteSpecifier::HostRewriteLiteral(host)) = &action.host_rewrite_specifier {
        out.push_str(&format!("; rewrite host {host}"));
    }
    if let Some(timeout) = &action.timeout {
        out.push_str(&format!("; timeout {}", duration(timeout.seconds, timeout.nanos)));
    }
    // The projection's default policy (aetherctl projects with the
    // default configuration) goes unsaid.
    let default = RetryConfig::default();
    match &action.retry_policy {
        None if default.num_retries > 0 => out.push_str("; no retries"),
        Some(policy)
            if policy.retry_on != default.retry_on
                || policy.num_retries.map(|n| n.value) != Some(default.num_retries)
                || policy.per_try_timeout.is_some() != default.per_try_timeout.is_some() =>
        {
            out.push_str(&format!(
                "; retries {} on {}",
                policy.num_retries.map(|n| n.value).unwrap_or(1),
                policy.retry_on
            ));
            if let Some(timeout) = &policy.per_try_timeout {
                out.push_str(&format!(", per try {}", duration(timeout.seconds, timeout.nanos)));
            }
        }
        _ => {}
    }
    out
}

/// `redirect 301 https://HOST:PORT prefix /new` (what is not swapped
/// stays as requested).
fn redirect_action(redirect: &RedirectAction) -> String {
    let code = match RedirectResponseCode::try_from(redirect.response_code) {
        Ok(RedirectResponseCode::MovedPermanently) => 301,
        Ok(RedirectResponseCode::Found) => 302,
        Ok(RedirectResponseCode::SeeOther) => 303,
        Ok(RedirectResponseCode::TemporaryRedirect) => 307,
        Ok(RedirectResponseCode::PermanentRedirect) => 308,
        Err(_) => 0,
    };
    let mut out = format!("redirect {code}");
    // Only what is swapped: `https://HOST:443` keeps the request's host.
    let scheme = match &redirect.scheme_rewrite_specifier {
        Some(SchemeRewriteSpecifier::SchemeRedirect(scheme)) => Some(scheme.as_str()),
        Some(SchemeRewriteSpecifier::HttpsRedirect(true)) => Some("https"),
        _ => None,
    };
    if scheme.is_some() || !redirect.host_redirect.is_empty() || redirect.port_redirect != 0 {
        out.push(' ');
        if let Some(scheme) = scheme {
            out.push_str(&format!("{scheme}://"));
        }
        out.push_str(if redirect.host_redirect.is_empty() {
            "HOST"
        } else {
            &redirect.host_redirect
        });
        if redirect.port_redirect != 0 {
            out.push_str(&format!(":{}", redirect.port_redirect));
        }
    }
    match &redirect.path_rewrite_specifier {
        Some(PathRewriteSpecifier::PathRedirect(path)) => out.push_str(&format!(" path {path}")),
        Some(PathRewriteSpecifier::PrefixRewrite(prefix)) => out.push_str(&format!(" prefix {prefix}")),
        Some(other) => out.push_str(&format!(" {other:?}")),
        None => {}
    }
    out
}

/// `set NAME=VALUE, add NAME=VALUE, remove NAME`; `None` for no change.
fn header_changes(add: &[HeaderValueOption], remove: &[String]) -> Option<String> {
    let mut parts: Vec<String> = add
        .iter()
        .filter_map(|option| {
            let header = option.header.as_ref()?;
            let verb = if option.append_action == HeaderAppendAction::OverwriteIfExistsOrAdd as i32 {
                "set"
            } else {
                "add"
            };
            // Envoy's format: `%%` is a literal `%`.
            Some(format!("{verb} {}={}", header.key, header.value.replace("%%", "%")))
        })
        .collect();
    parts.extend(remove.iter().map(|name| format!("remove {name}")));
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A protobuf duration (seconds, nanoseconds) as `15s` or `1500ms`.
fn duration(seconds: i64, nanos: i32) -> String {
    let millis = seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(nanos / 1_000_000));
    if millis % 1000 == 0 {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}
