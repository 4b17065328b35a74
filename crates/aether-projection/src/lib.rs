//! The edge projection: a set of `VirtualHost` objects in, the edge proxy's
//! configuration out. Pure: no I/O, no Kubernetes client.
//!
//! The data flows through small modules, in this order:
//! [objects](VirtualHostObject) → validation (invalid objects, by
//! `VirtualHostObject::problems` as the edge judges them, are left out and
//! reported) → host dedup (a host claimed by several objects goes to the
//! oldest) → Envoy projection (one virtual host per object, one cluster per
//! `(service, port)`, see [`cluster_name`], each path in the form the edge's
//! Envoy compares request paths with, see [`edge_normal_form`]) →
//! [`Snapshot`] and its renderings.
//!
//! [`Projector`] keeps a snapshot up to date as objects come and go, at a
//! cost proportional to the change; [`project`] is its one-off use.
//!
//! ```
//! use aether_projection::{Format, ProjectionConfig, VirtualHostObject, project};
//!
//! let objects: Vec<VirtualHostObject> = serde_json::from_value(serde_json::json!([{
//!     "namespace": "default", "name": "api", "creationTimestamp": "2026-01-01T00:00:00Z",
//!     "spec": {
//!         "hosts": ["api.example.com"],
//!         "routes": [
//!             {"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}},
//!             {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health"}}
//!         ],
//!         "tls": {"secretName": "example-tls", "provider": "KUBERNETES"}
//!     }
//! }])).unwrap();
//! let snapshot = project(objects, &ProjectionConfig::default()).unwrap();
//! let json: serde_json::Value = serde_json::from_slice(&snapshot.render(Format::Json).unwrap()).unwrap();
//! let route = &json["routeConfiguration"]["virtualHosts"][0]["routes"][0];
//! assert_eq!(route["match"]["prefix"], "/users");
//! assert_eq!(route["route"]["cluster"], "svc-users:8080");
//! assert_eq!(json["tlsSecrets"][0]["secretName"], "example-tls");
//! ```

#![deny(missing_docs)]

mod actions;
mod config;
mod envoy;
mod input;
pub mod listener;
mod matching;
mod output;
mod path;
mod projector;
mod route_table;
mod snapshot;
mod tls;

pub use actions::{NO_WEIGHT_STATUS, WHOLE_PATH};
pub use aether_api::ObjectKey;
pub use config::{PlainHttp, ProjectionConfig, RetryConfig};
pub use envoy::{cluster_name, served_routes};
pub use input::VirtualHostObject;
pub use output::{Format, RenderError};
pub use path::{MatchKind, edge_normal_form};
pub use projector::{ProjectError, Projector};
pub use route_table::RouteTable;
pub use snapshot::{Dependency, HostConflict, Kept, LeftOut, LeftOutReason, Report, RoutesLeftOut, Snapshot};
pub use snapshot::{MISDIRECTED_STATUS, MISDIRECTED_VIRTUAL_HOST};
pub use tls::{TlsChain, TlsSecret, covering_wildcards};

/// Envoy's generated core types (header values of a route's header changes).
pub use envoy_types::pb::envoy::config::core::v3 as envoy_core;
/// Envoy's generated types, as returned by [`Snapshot::route_configuration`].
pub use envoy_types::pb::envoy::config::route::v3 as envoy_route;

/// Projects a set of VirtualHost objects in one go: a [`Projector`] built
/// from the set, and its snapshot. Takes objects or references to them (a
/// reference is cloned; the spec is shared, not copied).
///
/// ```
/// use aether_projection::{ProjectionConfig, VirtualHostObject, project};
///
/// let object: VirtualHostObject = serde_json::from_value(serde_json::json!({
///     "namespace": "default", "name": "api",
///     "spec": {
///         "hosts": ["api.example.com"],
///         "routes": [{"match": {"prefix": "/users"}, "backend": {"service": "svc-users", "port": 8080}}]
///     }
/// })).unwrap();
/// let snapshot = project(vec![object], &ProjectionConfig::default()).unwrap();
/// let virtual_host = &snapshot.route_configuration().unwrap().virtual_hosts[0];
/// assert_eq!(virtual_host.name, "default/api");
/// assert_eq!(virtual_host.domains, ["api.example.com"]);
/// assert_eq!(snapshot.dependencies[0].ports, [8080]);
/// ```
pub fn project<O: std::borrow::Borrow<VirtualHostObject>>(
    objects: impl IntoIterator<Item = O>,
    config: &ProjectionConfig,
) -> Result<Snapshot, ProjectError> {
    let objects = objects.into_iter().map(|object| object.borrow().clone());
    Ok(Projector::from_objects(objects, config.clone())?.snapshot())
}
