//! What `explain` answers: each step the edge takes with a request, and
//! where the request ends.

use aether_api::ObjectKey;
use serde::Serialize;

use crate::Request;

/// The whole answer for one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The request, as read.
    pub request: Request,
    /// The path the edge routes on: normalized as the edge's Envoy does
    /// (`/a/../b` is `/b`, `/%7Eu` is `/~u`), without the query.
    pub routed_path: String,
    /// Over HTTPS, the filter chain the SNI (the host) selects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStep>,
    /// Which object serves the host, and who else claims it.
    pub host: HostStep,
    /// The served object's routes in the order the edge tries them: those
    /// before the one that matches, it, and those after, not tried.
    pub routes: Vec<RouteStep>,
    /// Where the request ends.
    pub outcome: Outcome,
    /// What else the edge does that bears on the answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The HTTPS listener's choice of filter chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsStep {
    /// The server name the client sends (the host, without port).
    pub sni: String,
    /// The chain's object, if a chain takes the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<ObjectKey>,
    /// The server name of the chain that matched (exact or `*.` wildcard).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
}

/// Which object's virtual host takes the request's host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostStep {
    /// The host Envoy compares: lower case, without port.
    pub host: String,
    /// The object serving it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_by: Option<ObjectKey>,
    /// The domain of the virtual host that matched (the host itself, or the
    /// wildcard covering it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Every object listing that domain, oldest first: the first is the
    /// owner, the rest lost it to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
}

/// An object that lists a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// Which object.
    pub object: ObjectKey,
    /// The host it lists: the request's host, or a wildcard covering it.
    pub domain: String,
    /// Its `metadata.creationTimestamp`, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Whether it serves the host; if not, why.
    pub result: ClaimResult,
}

/// Why an object serves a host it lists, or does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ClaimResult {
    /// It is the owner: the oldest valid claimant.
    Owner,
    /// An older object (ties: namespace, then name) owns it.
    LostTo(ObjectKey),
    /// It serves its domain, a wildcard less specific than the domain
    /// that took the request (Envoy picks the exact host, then the most
    /// specific wildcard).
    LessSpecific,
    /// The object is not served at all (invalid, or every host lost).
    LeftOut(String),
}

/// One route tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteStep {
    /// Its index in the object's `spec.routes`, as written.
    pub index: usize,
    /// Its match, in short (`prefix /users`, `regex /v[0-9]+`).
    pub path: String,
    /// Whether it matched; if not, the first matcher that failed.
    pub result: RouteResult,
}

/// What came of trying one route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum RouteResult {
    /// Every matcher matched: this route serves the request.
    Matched,
    /// A route after the one that matched: never tried.
    NotTried,
    /// This matcher (`path`, `method`, `header NAME`, `query NAME`) did not.
    Failed {
        /// Which matcher.
        matcher: String,
        /// Why, in short.
        why: String,
    },
}

/// Where a request ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", rename_all_fields = "camelCase")]
pub enum Outcome {
    /// Sent to a backend.
    Forward {
        /// The cluster, or each cluster of a weighted split with its
        /// weight (clusters of weight 0 are left out).
        clusters: Vec<WeightedCluster>,
        /// The path and query the backend receives.
        path: String,
        /// The `Host` the backend receives.
        host: String,
        /// The request headers the route changes, with the values the
        /// backend receives for each (none: removed).
        request_headers: Vec<HeaderValues>,
        /// The response header changes, in the order Envoy makes them.
        response_headers: Vec<HeaderChange>,
        /// The route's timeout.
        timeout: String,
        /// The retry policy, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        retries: Option<Retries>,
    },
    /// Answered with a redirect.
    Redirect {
        /// 301, 302, 303, 307 or 308.
        status: u32,
        /// The `Location` header.
        location: String,
        /// The response header changes, in the order Envoy makes them.
        response_headers: Vec<HeaderChange>,
    },
    /// Answered by the edge itself.
    Respond {
        /// The status.
        status: u32,
        /// Why.
        why: String,
    },
    /// Over HTTPS, no certificate for the name: the handshake fails.
    HandshakeRefused {
        /// Why.
        why: String,
    },
    /// The edge's answer depends on something `explain` cannot know.
    Unpredictable {
        /// What.
        why: String,
    },
}

impl Outcome {
    /// The status the client sees, when the edge answers itself (for a
    /// forwarded request, the backend's).
    pub fn status(&self) -> Option<u32> {
        match self {
            Outcome::Redirect { status, .. } | Outcome::Respond { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// A cluster and its weight (1 for a route to one cluster).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedCluster {
    /// The Envoy cluster (`service` or `service:port`).
    pub cluster: String,
    /// Its weight.
    pub weight: u32,
}

/// A header's values as the backend receives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderValues {
    /// The header's name.
    pub name: String,
    /// Its values, in order (empty: the header is not sent).
    pub values: Vec<String>,
}

/// One header change, as the route makes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "action", rename_all_fields = "camelCase")]
pub enum HeaderChange {
    /// Every value of the header removed.
    Remove {
        /// The header.
        name: String,
    },
    /// The header set to this one value, replacing any.
    Set {
        /// The header.
        name: String,
        /// The value.
        value: String,
    },
    /// One more value of the header.
    Add {
        /// The header.
        name: String,
        /// The value.
        value: String,
    },
}

impl HeaderChange {
    /// The header's name.
    pub fn name(&self) -> &str {
        match self {
            HeaderChange::Remove { name } | HeaderChange::Set { name, .. } | HeaderChange::Add { name, .. } => name,
        }
    }

    /// Applies the changes, in order, to `headers` (names in lower case).
    pub fn apply(changes: &[HeaderChange], headers: &mut Vec<(String, String)>) {
        for change in changes {
            match change {
                HeaderChange::Remove { name } => headers.retain(|(n, _)| n != name),
                HeaderChange::Set { name, value } => {
                    headers.retain(|(n, _)| n != name);
                    headers.push((name.clone(), value.clone()));
                }
                HeaderChange::Add { name, value } => headers.push((name.clone(), value.clone())),
            }
        }
    }
}

/// A route's retry policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retries {
    /// Envoy's `retry_on`.
    pub on: String,
    /// Retries after the first try.
    pub attempts: u32,
    /// Each try's bound, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_try_timeout: Option<String>,
}

/// The outcome on one line: `forwarded to svc (path /a, Host h)`,
/// `redirected 301 to https://h/`, `answered 404: no route of ns/name
/// matches`.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Forward {
                clusters, path, host, ..
            } => {
                let clusters: Vec<String> = match clusters.as_slice() {
                    [one] => vec![one.cluster.clone()],
                    split => split
                        .iter()
                        .map(|c| format!("{} (weight {})", c.cluster, c.weight))
                        .collect(),
                };
                write!(f, "forwarded to {} (path {path}, Host {host})", clusters.join(" or "))
            }
            Outcome::Redirect { status, location, .. } => write!(f, "redirected {status} to {location}"),
            Outcome::Respond { status, why } => write!(f, "answered {status}: {why}"),
            Outcome::HandshakeRefused { why } => write!(f, "TLS handshake refused: {why}"),
            Outcome::Unpredictable { why } => write!(f, "cannot predict: {why}"),
        }
    }
}
