//! A route's backend, or weighted backends, as HTTPRoute backendRefs.

use aether_api::config::v1::HttpRoute;
use gateway_api::httproutes::HttpRouteRulesBackendRefs;

use crate::{NoteKind, Notes};

/// The backendRefs of `route` (at `path`): none for a redirect route.
/// Weights carry over as written: both split by `weight / total`, and a
/// total of 0 answers HTTP 500 in both. A weight is always written, since
/// an absent one is 1 in Gateway API but 0 in a VirtualHost.
pub(crate) fn convert(route: &HttpRoute, path: &str, notes: &mut Notes) -> Vec<HttpRouteRulesBackendRefs> {
    let mut refs = Vec::new();
    if let Some(backend) = &route.backend {
        refs.push(backend_ref(
            &backend.service,
            backend.port,
            None,
            &format!("{path}.backend"),
            notes,
        ));
    }
    for (index, backend) in route.backends.iter().enumerate() {
        let weight = i32::try_from(backend.weight).ok();
        refs.push(backend_ref(
            &backend.service,
            backend.port,
            weight,
            &format!("{path}.backends[{index}]"),
            notes,
        ));
    }
    refs
}

fn backend_ref(
    service: &str,
    port: u32,
    weight: Option<i32>,
    path: &str,
    notes: &mut Notes,
) -> HttpRouteRulesBackendRefs {
    let port = if port == 0 {
        // Gateway API refuses a Service backend without a port.
        notes.push(
            format!("{path}.port"),
            NoteKind::Needs,
            format!(
                "an HTTPRoute backendRef to a Service needs its port; this one uses {service}'s default port: write it"
            ),
        );
        None
    } else {
        i32::try_from(port).ok()
    };
    HttpRouteRulesBackendRefs {
        name: service.to_owned(),
        port,
        weight,
        ..HttpRouteRulesBackendRefs::default()
    }
}
