//! VirtualHost objects as Gateway API HTTPRoutes.
//!
//! The design this API comes from says its spec "is shaped to migrate to
//! Gateway API later", and edge routing did move to HTTPRoute. [`convert`]
//! writes one HTTPRoute per VirtualHost (typed with kube-rs' `gateway-api`
//! bindings), and a [`Note`] for everything that does not carry over
//! exactly: what means something else there, what HTTPRoute cannot say,
//! and what it needs that a VirtualHost does not say. An empty list of
//! notes means the HTTPRoute routes as the VirtualHost does.

mod actions;
mod backends;
mod matches;
mod names;
mod order;

use aether_api::config::v1::{SecretProvider, VirtualHostSpec};
use gateway_api::httproutes::{HttpRoute as HTTPRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteSpec};
use k8s_openapi_gateway::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

pub use names::{MAX_NAME_LEN, Names};

/// Where the HTTPRoutes attach: the Gateway a `parentRefs` entry names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gateway {
    /// The Gateway's namespace; absent: the route's own.
    pub namespace: Option<String>,
    /// The Gateway's name.
    pub name: String,
    /// One listener of it (`sectionName`); absent: every listener.
    pub section_name: Option<String>,
}

/// At most this many rules in one HTTPRoute (its CRD's `maxItems`).
pub const MAX_RULES: usize = 16;
/// At most this many matches in all the rules of one HTTPRoute (its CRD's
/// CEL rule).
pub const MAX_MATCHES: usize = 128;

/// One VirtualHost converted.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The HTTPRoutes, in the VirtualHost's namespace: one named as it, or,
    /// for more routes than one HTTPRoute holds ([`MAX_RULES`],
    /// [`MAX_MATCHES`]), `NAME`, `NAME-02`, `NAME-03`... in route order,
    /// each unique in its namespace among the [`Names`] of the run and at
    /// most [`MAX_NAME_LEN`] characters (a rename is noted).
    pub routes: Vec<HTTPRoute>,
    /// What does not carry over exactly, in spec order.
    pub notes: Vec<Note>,
}

/// Something of the VirtualHost the HTTPRoute does not carry exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// Where, in the VirtualHost's Kubernetes form (`spec.routes[0].match.prefix`).
    pub path: String,
    /// What kind of difference.
    pub kind: NoteKind,
    /// What differs, and what to do about it.
    pub message: String,
}

/// How a part carries over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NoteKind {
    /// Written, but Gateway API gives it another meaning.
    Differs,
    /// Not written: HTTPRoute has no way to say it.
    Dropped,
    /// HTTPRoute needs something the VirtualHost does not say.
    Needs,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            NoteKind::Differs => "differs",
            NoteKind::Dropped => "dropped",
            NoteKind::Needs => "needs",
        };
        write!(f, "{}: {kind}: {}", self.path, self.message)
    }
}

/// Collects notes while a VirtualHost is converted.
#[derive(Debug, Default)]
pub(crate) struct Notes(Vec<Note>);

impl Notes {
    pub(crate) fn push(&mut self, path: impl Into<String>, kind: NoteKind, message: impl Into<String>) {
        self.0.push(Note {
            path: path.into(),
            kind,
            message: message.into(),
        });
    }
}

/// The HTTPRoutes for the VirtualHost `namespace/name` with `spec`, attached
/// to `gateway` when given, named among the `names` the run has taken.
pub fn convert(
    namespace: &str,
    name: &str,
    spec: &VirtualHostSpec,
    gateway: Option<&Gateway>,
    names: &mut Names,
) -> Conversion {
    let mut notes = Notes::default();
    let parent_refs = match gateway {
        Some(gateway) => Some(vec![HttpRouteParentRefs {
            name: gateway.name.clone(),
            namespace: gateway.namespace.clone(),
            section_name: gateway.section_name.clone(),
            ..HttpRouteParentRefs::default()
        }]),
        None => {
            notes.push(
                "spec",
                NoteKind::Needs,
                "an HTTPRoute serves nothing until it names a Gateway in parentRefs (give one with --gateway)",
            );
            None
        }
    };
    // Hosts: `*.example.com` is a suffix match of one label or more in
    // both. What differs is who owns a host: a VirtualHost's hosts are its
    // own (the oldest object keeps a contested one), while HTTPRoutes that
    // share a hostname merge their rules.
    notes.push(
        "spec.hosts",
        NoteKind::Differs,
        "HTTPRoutes sharing a hostname merge their rules (the oldest route wins a tie) where a VirtualHost owns its \
         hosts alone; convert every VirtualHost of a host together",
    );
    let rules: Vec<HttpRouteRules> = spec
        .routes
        .iter()
        .enumerate()
        .map(|(index, route)| {
            let path = format!("spec.routes[{index}]");
            HttpRouteRules {
                matches: Some(matches::convert(
                    route.r#match.as_ref(),
                    &format!("{path}.match"),
                    &mut notes,
                )),
                backend_refs: Some(backends::convert(route, &path, &mut notes)).filter(|refs| !refs.is_empty()),
                filters: Some(actions::filters(route, &path, &mut notes)).filter(|filters| !filters.is_empty()),
                timeouts: actions::timeouts(route),
                ..HttpRouteRules::default()
            }
        })
        .collect();
    order::check(spec, &mut notes);
    if let Some(tls) = &spec.tls {
        let provider = match SecretProvider::try_from(tls.provider) {
            Ok(SecretProvider::AwsSecretsManager) => {
                "; its certificate comes from AWS Secrets Manager, which a Gateway's certificateRefs cannot name"
            }
            _ => "",
        };
        notes.push(
            "spec.tls",
            NoteKind::Dropped,
            format!(
                "TLS is the Gateway's: give its HTTPS listener for these hostnames certificateRefs: [{{name: {}}}]{provider}",
                tls.secret_name
            ),
        );
    }
    let chunks = chunks(rules);
    if chunks.len() > 1 {
        notes.push(
            "spec.routes",
            NoteKind::Differs,
            format!(
                "split into {} HTTPRoutes (one holds at most {MAX_RULES} rules and {MAX_MATCHES} matches); Gateway \
                 API merges them by precedence, and gives a tie to the oldest route, then to the first name",
                chunks.len()
            ),
        );
    }
    let routes = chunks
        .into_iter()
        .enumerate()
        .map(|(index, rules)| HTTPRoute {
            metadata: ObjectMeta {
                name: Some(names.take(namespace, name, index, &mut notes)),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            spec: HttpRouteSpec {
                hostnames: Some(spec.hosts.clone()),
                parent_refs: parent_refs.clone(),
                rules: Some(rules),
            },
            status: None,
        })
        .collect();
    Conversion { routes, notes: notes.0 }
}

/// `rules` in order, in as few HTTPRoutes as their limits allow (at least
/// one, empty for a VirtualHost without routes).
fn chunks(rules: Vec<HttpRouteRules>) -> Vec<Vec<HttpRouteRules>> {
    let mut chunks: Vec<Vec<HttpRouteRules>> = vec![Vec::new()];
    let mut matches = 0;
    for rule in rules {
        let count = rule.matches.as_ref().map_or(1, Vec::len);
        let current = chunks.last_mut().expect("never empty");
        if !current.is_empty() && (current.len() == MAX_RULES || matches + count > MAX_MATCHES) {
            chunks.push(Vec::new());
            matches = 0;
        }
        matches += count;
        chunks.last_mut().expect("never empty").push(rule);
    }
    chunks
}

#[cfg(test)]
mod tests;
