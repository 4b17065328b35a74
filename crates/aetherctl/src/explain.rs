//! `aetherctl explain`: which object and route of the edge serve a request,
//! why the others did not, and what the edge does with it, from manifests.

use std::io::{self, Write};
use std::path::PathBuf;

use aether_explain::{ClaimResult, Explanation, HeaderChange, Outcome, Request, RouteResult, explain};
use aether_manifests::Limits;
use aether_projection::VirtualHostObject;

use crate::project::load_and_project;
use crate::report::{write_errors, write_skipped};
use crate::{EXIT_ERROR, Output};

/// A route serves the request (or redirects it, or answers it itself).
pub const EXIT_ROUTED: u8 = 0;
/// No route serves it: no host, no route, a misdirected or refused request.
pub const EXIT_NOT_ROUTED: u8 = 1;

/// Projects the manifests under `paths`, then explains `request` (`[METHOD]
/// URL`) with `headers`. Returns the exit code: [`EXIT_ROUTED`],
/// [`EXIT_NOT_ROUTED`], or [`EXIT_ERROR`] for unreadable input or a request
/// `explain` cannot predict.
pub fn run(
    paths: &[PathBuf],
    request: &[String],
    headers: &[String],
    output: Output,
    limits: &Limits,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let request = match Request::parse(&request.join(" "), headers) {
        Ok(request) => request,
        Err(e) => {
            writeln!(err, "error: {e}")?;
            return Ok(EXIT_ERROR);
        }
    };
    let (projected, skipped) = load_and_project(paths, limits);
    write_skipped(&skipped, err)?;
    let projected = match projected {
        Ok(projected) => projected,
        Err(errors) => return write_errors(&errors, err).map(|()| EXIT_ERROR),
    };
    let objects: Vec<VirtualHostObject> = projected.objects.into_iter().map(|loaded| loaded.object).collect();
    let explanation = explain(&projected.snapshot, &objects, &request);
    match output {
        Output::Text => write_text(&explanation, out)?,
        Output::Json => {
            serde_json::to_writer_pretty(&mut *out, &explanation)?;
            writeln!(out)?;
        }
        Output::Yaml => {
            let yaml = serde_saphyr::to_string(&explanation).map_err(io::Error::other)?;
            out.write_all(yaml.as_bytes())?;
        }
    }
    Ok(exit_code(&explanation.outcome))
}

fn exit_code(outcome: &Outcome) -> u8 {
    match outcome {
        Outcome::Forward { .. } | Outcome::Redirect { .. } => EXIT_ROUTED,
        // A route's own answer (a split of weight 0) is routed; the edge's
        // 404, 421 and 400 are not.
        Outcome::Respond { status, .. } if *status == aether_projection::NO_WEIGHT_STATUS => EXIT_ROUTED,
        Outcome::Respond { .. } | Outcome::HandshakeRefused { .. } => EXIT_NOT_ROUTED,
        Outcome::Unpredictable { .. } => EXIT_ERROR,
    }
}

/// The explanation for people: one block per step.
fn write_text(explanation: &Explanation, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", explanation.request)?;
    for (name, value) in &explanation.request.headers {
        writeln!(out, "  {name}: {value}")?;
    }
    if explanation.routed_path != explanation.request.path_only() {
        writeln!(out, "path as routed: {}", explanation.routed_path)?;
    }
    if let Some(tls) = &explanation.tls {
        match (&tls.chain, &tls.server_name) {
            (Some(chain), Some(name)) => writeln!(
                out,
                "TLS: SNI {} selects the chain of {chain} (server name {name})",
                tls.sni
            )?,
            _ => writeln!(out, "TLS: SNI {} selects no chain", tls.sni)?,
        }
    }
    let host = &explanation.host;
    match (&host.served_by, &host.domain) {
        (Some(object), Some(domain)) => writeln!(out, "host: {} is served by {object} (domain {domain})", host.host)?,
        (None, Some(domain)) => writeln!(out, "host: {} falls to the chain's `{domain}` virtual host", host.host)?,
        _ => writeln!(out, "host: {} is served by no object", host.host)?,
    }
    for claim in &host.claims {
        let created = claim
            .created
            .as_deref()
            .map(|c| format!(", created {c}"))
            .unwrap_or_default();
        let result = match &claim.result {
            ClaimResult::Owner => "owns it".to_owned(),
            ClaimResult::LostTo(winner) => format!("lost it to {winner}, older (oldest wins; ties by namespace/name)"),
            ClaimResult::LessSpecific => {
                "serves it, less specific (exact hosts first, then the longest wildcard)".to_owned()
            }
            ClaimResult::LeftOut(why) => format!("is not served: {why}"),
        };
        writeln!(out, "  {} lists {}{created}: {result}", claim.object, claim.domain)?;
    }
    if let Some(object) = host.served_by.as_ref().filter(|_| !explanation.routes.is_empty()) {
        writeln!(out, "routes of {object}, in the order tried:")?;
    }
    let width = explanation.routes.iter().map(|r| r.path.len()).max().unwrap_or(0);
    for step in &explanation.routes {
        let label = format!("routes[{}]", step.index);
        match &step.result {
            RouteResult::Matched => writeln!(out, "  {label:<10} {:<width$}  MATCH", step.path)?,
            RouteResult::NotTried => writeln!(out, "  {label:<10} {:<width$}  (not tried)", step.path)?,
            RouteResult::Failed { matcher, why } => {
                writeln!(out, "  {label:<10} {:<width$}  no: {matcher}: {why}", step.path)?
            }
        }
    }
    write_outcome(&explanation.outcome, out)?;
    for note in &explanation.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}

fn write_outcome(outcome: &Outcome, out: &mut dyn Write) -> io::Result<()> {
    match outcome {
        Outcome::Forward {
            clusters,
            path,
            host,
            request_headers,
            response_headers,
            timeout,
            retries,
        } => {
            match clusters.as_slice() {
                [one] => writeln!(out, "=> forwarded to {}", one.cluster)?,
                split => {
                    let total: u64 = split.iter().map(|c| u64::from(c.weight)).sum();
                    let parts: Vec<String> = split
                        .iter()
                        .map(|c| format!("{} {}/{total}", c.cluster, c.weight))
                        .collect();
                    writeln!(out, "=> forwarded to one of: {}", parts.join(", "))?;
                }
            }
            writeln!(out, "   path {path}, Host {host}")?;
            for header in request_headers {
                match header.values.as_slice() {
                    [] => writeln!(out, "   request header {}: removed", header.name)?,
                    values => writeln!(out, "   request header {}: {}", header.name, values.join(" | "))?,
                }
            }
            write_response_headers(response_headers, out)?;
            write!(out, "   timeout {timeout}")?;
            match retries {
                Some(retries) => {
                    write!(out, "; {} retries on {}", retries.attempts, retries.on)?;
                    match &retries.per_try_timeout {
                        Some(each) => writeln!(out, ", each try {each}"),
                        None => writeln!(out),
                    }
                }
                None => writeln!(out, "; no retries"),
            }
        }
        Outcome::Redirect {
            status,
            location,
            response_headers,
        } => {
            writeln!(out, "=> redirected: {status}, Location {location}")?;
            write_response_headers(response_headers, out)
        }
        Outcome::Respond { status, why } => writeln!(out, "=> the edge answers {status}: {why}"),
        Outcome::HandshakeRefused { why } => writeln!(out, "=> the TLS handshake fails: {why}"),
        Outcome::Unpredictable { why } => writeln!(out, "=> cannot predict: {why}"),
    }
}

fn write_response_headers(changes: &[HeaderChange], out: &mut dyn Write) -> io::Result<()> {
    for change in changes {
        match change {
            HeaderChange::Remove { name } => writeln!(out, "   response header {name}: removed")?,
            HeaderChange::Set { name, value } => writeln!(out, "   response header {name}: set to {value}")?,
            HeaderChange::Add { name, value } => writeln!(out, "   response header {name}: {value} added")?,
        }
    }
    Ok(())
}
