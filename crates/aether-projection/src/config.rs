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
}

impl Default for ProjectionConfig {
    fn default() -> Self {
        Self {
            route_configuration_name: "aether-edge".into(),
            retry: RetryConfig::default(),
        }
    }
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
