//! A route's backend as HTTPRoute backendRefs.

use aether_api::config::v1::HttpRoute;
use gateway_api::httproutes::HttpRouteRulesBackendRefs;

use crate::{NoteKind, Notes};

/// The backendRefs of `route` (at `path`).
pub(crate) fn convert(route: &HttpRoute, path: &str, notes: &mut Notes) -> Vec<HttpRouteRulesBackendRefs> {
    let Some(backend) = &route.backend else {
        return Vec::new();
    };
    let port = if backend.port == 0 {
        // Gateway API refuses a Service backend without a port.
        notes.push(
            format!("{path}.backend.port"),
            NoteKind::Needs,
            format!(
                "an HTTPRoute backendRef to a Service needs its port; this one uses {}'s default port: write it",
                backend.service
            ),
        );
        None
    } else {
        i32::try_from(backend.port).ok()
    };
    vec![HttpRouteRulesBackendRefs {
        name: backend.service.clone(),
        port,
        ..HttpRouteRulesBackendRefs::default()
    }]
}
