//! The `ResolvedRefs` condition (Gateway API's, for a listener's
//! `certificateRefs`): whether the TLS secret of an object the edge serves
//! could be served.
//!
//! Its reasons, and what each message says, are
//! [`ResolvedRefsReason`]'s in the proto.

use aether_api::config::v1::{ConditionType, ResolvedRefsReason, SecretProvider};
use aether_projection::TlsSecret;

use crate::tls::certificate::rfc3339;
use crate::tls::{Resolution, Resolutions};

/// The condition type.
pub const RESOLVED_REFS: &str = ConditionType::ResolvedRefs.condition_name();
/// Reason: every reference resolved.
pub const REASON_RESOLVED_REFS: &str = ResolvedRefsReason::ResolvedRefs.condition_name();
/// Reason: the certificate reference cannot be served (Gateway API's).
pub const REASON_INVALID_CERTIFICATE_REF: &str = ResolvedRefsReason::InvalidCertificateRef.condition_name();

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
