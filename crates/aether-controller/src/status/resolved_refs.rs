//! The `ResolvedRefs` condition (Gateway API's, for a listener's
//! `certificateRefs`): whether the TLS secret of an object the edge serves
//! could be served.
//!
//! | case | `status` | `reason` | `message` |
//! |---|---|---|---|
//! | no `tls` | `True` | `ResolvedRefs` | no TLS secret referenced |
//! | the secret is served | `True` | `ResolvedRefs` | the secret, the certificate's serial and end of validity |
//! | served by the mesh's SDS | `True` | `ResolvedRefs` | the secret and the SDS cluster; not read by the controller |
//! | it turned unreadable or invalid (its files, a new Secret version); the last good certificate is served | `False` | `InvalidCertificateRef` | the secret and why, then the certificate still served |
//! | missing, malformed, mismatched, expired, unserved provider | `False` | `InvalidCertificateRef` | the secret and why; its hosts are not served over TLS |
//!
//! An object the edge does not serve (invalid, or every host lost) has no
//! `ResolvedRefs`: nothing of it is resolved, and `Accepted` says why. A
//! refused secret leaves `Accepted` as it was: the routes are still served
//! over plain HTTP.

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;

use crate::tls::certificate::rfc3339;
use crate::tls::{Resolution, Resolutions};

/// The condition type.
pub const RESOLVED_REFS: &str = "ResolvedRefs";
/// Reason: every reference resolved.
pub const REASON_RESOLVED_REFS: &str = "ResolvedRefs";
/// Reason: the certificate reference cannot be served (Gateway API's).
pub const REASON_INVALID_CERTIFICATE_REF: &str = "InvalidCertificateRef";

/// `(status, reason, message)` of an object's `ResolvedRefs`; `served` is
/// `None` for an object the edge does not serve (no condition), else its
/// secret, if any.
pub fn resolved_refs(
    served: Option<Option<&TlsSecret>>,
    tls: &Resolutions,
) -> Option<(&'static str, &'static str, String)> {
    let Some(secret) = served? else {
        return Some((
            "True",
            REASON_RESOLVED_REFS,
            "no TLS secret referenced: served over plain HTTP only".to_owned(),
        ));
    };
    let name = describe(secret);
    Some(match tls.get(secret) {
        Resolution::Ready(certificate) => (
            "True",
            REASON_RESOLVED_REFS,
            format!(
                "{name}: certificate serial {} valid until {}, served by SNI",
                certificate.serial,
                rfc3339(certificate.not_after)
            ),
        ),
        Resolution::Kept { certificate, why } => (
            "False",
            REASON_INVALID_CERTIFICATE_REF,
            format!(
                "{name}: {why}; still serving its last good certificate, serial {} valid until {}",
                certificate.serial,
                rfc3339(certificate.not_after)
            ),
        ),
        Resolution::Delegated(cluster) => (
            "True",
            REASON_RESOLVED_REFS,
            format!("{name}: served to the edge by the mesh's SDS (cluster {cluster}); not read by the controller"),
        ),
        Resolution::Refused(why) => (
            "False",
            REASON_INVALID_CERTIFICATE_REF,
            format!("{name}: {why}; its hosts are not served over TLS"),
        ),
    })
}

/// `secret default/example-tls`, or `AWS_SECRETS_MANAGER secret NAME`.
pub fn describe(secret: &TlsSecret) -> String {
    match (&secret.provider, &secret.namespace) {
        (SecretProvider::Kubernetes, Some(namespace)) => format!("secret {namespace}/{}", secret.secret_name),
        (SecretProvider::AwsSecretsManager, _) => format!("AWS_SECRETS_MANAGER secret {}", secret.secret_name),
        _ => format!("secret {}", secret.secret_name),
    }
}
