//! How the projection is tuned: the route configuration's name and the
//! retry policy every route gets.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Settings of the projection. `Default` is what the edge runs with unless
/// told otherwise.
///
/// ```
/// use aether_projection::{ProjectionConfig, RetryConfig};
///
/// let config = ProjectionConfig {
///     retry: RetryConfig { num_retries: 1, ..RetryConfig::default() },
///     ..ProjectionConfig::default()
/// };
/// assert_eq!(config.route_configuration_name, "aether-edge");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ProjectionConfig {
    /// `RouteConfiguration.name`, which the listener's RDS config asks for.
    /// Default `aether-edge`.
    pub route_configuration_name: String,
    /// The retry policy put on every route.
    pub retry: RetryConfig,
    /// What the plain-HTTP route configuration does with the hosts of
    /// objects served with TLS. Default [`PlainHttp::Serve`].
    pub tls_hosts_over_plain_http: PlainHttp,
}

impl Default for ProjectionConfig {
    fn default() -> Self {
        Self {
            route_configuration_name: "aether-edge".into(),
            retry: RetryConfig::default(),
            tls_hosts_over_plain_http: PlainHttp::Serve,
        }
    }
}

/// How a host of an object with `tls` answers plain HTTP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlainHttp {
    /// Routed as over TLS: the plain configuration carries the object's
    /// routes, so an edit of them changes it too (Envoy rebuilds the
    /// configuration of every host).
    #[default]
    Serve,
    /// Redirected to HTTPS (`301`, Envoy's `require_tls: ALL`), as Contour
    /// does by default: the plain configuration names the object's hosts
    /// alone, so an edit of its routes changes only its chain's
    /// configuration. What an edge of many HTTPS hosts wants.
    Redirect,
}

/// The retry policy of every route (Envoy's `RetryPolicy`).
///
/// The default retries only failures where the request never reached the
/// backend's application: the connection failed or was refused
/// (`connect-failure`), the upstream refused the HTTP/2 stream
/// (`refused-stream`), or the connection was reset before any request byte
/// was sent (`reset-before-request`). Those are safe to retry for any method,
/// even a non-idempotent `POST`, unlike `5xx` or `reset`. Two retries, each
/// try bounded only by the route's timeout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Envoy's `retry_on`: comma-separated retry conditions.
    pub retry_on: String,
    /// Envoy's `num_retries`: retries after the first try. 0 puts no retry
    /// policy on the routes at all.
    pub num_retries: u32,
    /// Envoy's `per_try_timeout`; `None` leaves each try bounded by the
    /// route's timeout only.
    pub per_try_timeout: Option<Duration>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            retry_on: "connect-failure,refused-stream,reset-before-request".into(),
            num_retries: 2,
            per_try_timeout: None,
        }
    }
}
