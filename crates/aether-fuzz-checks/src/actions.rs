//! What a route does, as the fuzz predicates ask it.

use aether_api::config::v1::HttpRoute;

/// Whether `route` has only v1's action: a `backend`, nothing else. Every
/// field named (no `..`): a new action fails to compile here until it is
/// decided whether it is one.
pub(crate) fn backend_only(route: &HttpRoute) -> bool {
    let HttpRoute {
        r#match: _,
        backend,
        backends,
        redirect,
        rewrite,
        request_headers,
        response_headers,
        timeout,
        retries,
    } = route;
    backend.is_some()
        && backends.is_empty()
        && redirect.is_none()
        && rewrite.is_none()
        && request_headers.is_none()
        && response_headers.is_none()
        && timeout.is_empty()
        && retries.is_none()
}
