//! `project -o text`: the snapshot for people, one line per host served,
//! route, conflict and object left out, then counts. The whole snapshot is
//! `-o yaml` (the default) or `-o json`.

use std::io::{self, Write};

use aether_projection::envoy_route::route::Action;
use aether_projection::envoy_route::route_action::ClusterSpecifier;
use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::envoy_route::{Route, RouteConfiguration};
use aether_projection::{LeftOutReason, Snapshot};

/// Writes the summary:
///
/// ```text
/// NAMESPACE/NAME: HOST, HOST
///   prefix PATH -> CLUSTER
///   exact PATH -> CLUSTER
/// conflict: host HOST: served by NAMESPACE/NAME, not NAMESPACE/NAME
/// left out: NAMESPACE/NAME: WHY
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
        Some(Action::Route(action)) => match &action.cluster_specifier {
            Some(ClusterSpecifier::Cluster(cluster)) => cluster.clone(),
            Some(ClusterSpecifier::WeightedClusters(weighted)) => weighted
                .clusters
                .iter()
                .map(|c| format!("{} ({})", c.name, c.weight.map(|w| w.value).unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", "),
            other => format!("{other:?}"),
        },
        other => format!("{other:?}"),
    };
    format!("{path} -> {to}")
}
