//! TLS by SNI at the edge: each referenced secret checked ([`certificate`]),
//! read from a directory in local mode ([`local`]) or from the API server
//! in cluster mode ([`cluster`]), resolved ([`Resolutions`]) for the HTTPS
//! listener and its SDS resources ([`crate::listener`]), and reported in
//! the objects' `ResolvedRefs` condition
//! ([`crate::status::resolved_refs`]).
//!
//! A secret is one of:
//! - **ready**: a `KUBERNETES` secret whose certificate and key passed
//!   [`certificate::check`] and whose certificate is valid now; its chain is
//!   served, the key reaching Envoy only in an owner-only SDS file or an
//!   SDS response;
//! - **kept**: a `KUBERNETES` secret that was ready, which then turned
//!   unreadable or invalid (a volume error, a half-written file, a Secret
//!   updated to a bad version):
//!   its last good certificate is served until a valid newer pair arrives,
//!   the secret is deleted or that certificate expires; its objects say why;
//! - **delegated**: an `AWS_SECRETS_MANAGER` secret, which the mesh's SDS
//!   serves to the edge by its name (`--mesh-sds-cluster`); the controller
//!   never reads it, and Envoy fetches it from the mesh;
//! - **refused**: missing, malformed, mismatched, out of its validity
//!   window, or of a provider nobody serves to this edge. Its chain is left
//!   out (so Envoy never sees a secret it would reject, which would fail
//!   the listener), its hosts' SNI is refused, every other chain keeps
//!   serving, and the objects naming it say which secret and why.

use std::collections::BTreeMap;
use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;
use aether_projection::listener::{EdgeSource, ListenerConfig};

pub mod certificate;
#[cfg(feature = "server")]
pub mod cluster;
#[cfg(feature = "server")]
pub mod local;

use certificate::{Certificate, Invalid};

/// What became of one referenced secret.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Checked and valid now.
    Ready(Arc<Certificate>),
    /// The pair failed (`why`: unreadable, invalid, not valid now), and
    /// the certificate last served for it, still valid, is served on.
    Kept {
        /// The last good certificate.
        certificate: Arc<Certificate>,
        /// Why the pair read now is not served.
        why: Invalid,
    },
    /// Served by the mesh's SDS, through this Envoy cluster.
    Delegated(String),
    /// Not served, and why.
    Refused(Invalid),
}

/// Every referenced secret's [`Resolution`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolutions(BTreeMap<TlsSecret, Resolution>);

impl Resolutions {
    /// What became of `secret` (refused as never looked up when absent).
    pub fn get(&self, secret: &TlsSecret) -> Resolution {
        self.0
            .get(secret)
            .cloned()
            .unwrap_or_else(|| Resolution::Refused(Invalid::Unserved("not looked up".to_owned())))
    }

    /// Whether its chain is served.
    pub fn usable(&self, secret: &TlsSecret) -> bool {
        matches!(
            self.0.get(secret),
            Some(Resolution::Ready(_) | Resolution::Kept { .. } | Resolution::Delegated(_))
        )
    }

    /// Every secret's resolution, in secret order.
    pub fn iter(&self) -> impl Iterator<Item = (&TlsSecret, &Resolution)> {
        self.0.iter()
    }

    /// Records `secret`'s resolution.
    pub fn insert(&mut self, secret: TlsSecret, resolution: Resolution) {
        self.0.insert(secret, resolution);
    }

    /// How many secrets serve their last good certificate
    /// ([`Resolution::Kept`]).
    pub fn kept(&self) -> usize {
        self.0
            .values()
            .filter(|resolution| matches!(resolution, Resolution::Kept { .. }))
            .count()
    }

    /// The secrets whose certificate is served (ready or kept) and their
    /// certificates.
    pub fn ready(&self) -> impl Iterator<Item = (&TlsSecret, &Arc<Certificate>)> {
        self.0.iter().filter_map(|(secret, resolution)| match resolution {
            Resolution::Ready(certificate) | Resolution::Kept { certificate, .. } => Some((secret, certificate)),
            _ => None,
        })
    }
}

/// How the controller hands the HTTPS listener to Envoy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The address and port the HTTPS listener binds (in Envoy).
    pub https_address: String,
    /// See `https_address`.
    pub https_port: u16,
    /// The output directory as Envoy sees it (an absolute path): where
    /// `listeners.json` finds `routes.json` and the SDS files.
    pub envoy_dir: String,
    /// Envoy's cluster for the mesh's SDS (`AWS_SECRETS_MANAGER`); `None`:
    /// those secrets are refused.
    pub mesh_sds_cluster: Option<String>,
}

impl TlsSettings {
    /// The defaults, files in `envoy_dir`.
    pub fn new(envoy_dir: impl Into<String>) -> Self {
        Self {
            https_address: "0.0.0.0".to_owned(),
            https_port: aether_projection::listener::HTTPS_PORT,
            envoy_dir: envoy_dir.into(),
            mesh_sds_cluster: None,
        }
    }

    /// The listener's settings, routes and secrets from `source`.
    pub fn listener(&self, source: EdgeSource, route_configuration_name: &str) -> ListenerConfig {
        ListenerConfig {
            address: self.https_address.clone(),
            port: self.https_port,
            route_configuration_name: route_configuration_name.to_owned(),
            mesh_sds_cluster: self.mesh_sds_cluster.clone(),
            ..ListenerConfig::new(source)
        }
    }

    /// The resolution of a secret the controller does not read: delegated
    /// to the mesh, or refused saying why.
    pub fn resolve_elsewhere(&self, secret: &TlsSecret) -> Resolution {
        match (secret.provider, &self.mesh_sds_cluster) {
            (SecretProvider::AwsSecretsManager, Some(cluster)) => Resolution::Delegated(cluster.clone()),
            (SecretProvider::AwsSecretsManager, None) => Resolution::Refused(Invalid::Unserved(
                "AWS_SECRETS_MANAGER secrets are served by the mesh's SDS, and this controller runs \
                 without --mesh-sds-cluster"
                    .to_owned(),
            )),
            _ => Resolution::Refused(Invalid::Unserved(
                "no source of Kubernetes secrets (local mode reads them from --secrets DIR)".to_owned(),
            )),
        }
    }
}

/// The secrets and how the listener is handed over, for one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeTls {
    /// How the listener is made.
    pub settings: TlsSettings,
    /// What became of each referenced secret.
    pub resolutions: Resolutions,
}
