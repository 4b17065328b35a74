//! The `ResolvedRefs` condition (Gateway API's, for a listener's
//! `certificateRefs`): whether the TLS secret of an object the edge serves
//! could be served.
//!
//! Its reasons, and what each message says, are
//! [`ResolvedRefsReason`]'s in the proto.

use aether_api::config::v1::{ConditionType, ResolvedRefsReason, SecretProvider};
use aether_projection::TlsSecret;

use crate::tls::certificate::{Certificate, Invalid, rfc3339};
use crate::tls::{Resolution, Resolutions};

/// The condition type.
pub const RESOLVED_REFS: &str = ConditionType::ResolvedRefs.condition_name();
/// Reason: every reference resolved.
pub const REASON_RESOLVED_REFS: &str = ResolvedRefsReason::ResolvedRefs.condition_name();
/// Reason: the certificate reference cannot be served (Gateway API's).
pub const REASON_INVALID_CERTIFICATE_REF: &str = ResolvedRefsReason::InvalidCertificateRef.condition_name();
/// Reason: served, its certificate ending within [`EXPIRY_WARNING_DAYS`].
pub const REASON_CERTIFICATE_EXPIRING: &str = ResolvedRefsReason::CertificateExpiring.condition_name();

/// How many days before its `notAfter` a served certificate is said to be
/// expiring: a week leaves a renewal that failed time to be fixed (the
/// proto's `CertificateExpiring` says 7 days).
pub const EXPIRY_WARNING_DAYS: i64 = 7;

/// [`EXPIRY_WARNING_DAYS`] in seconds.
const EXPIRY_WARNING_SECS: i64 = EXPIRY_WARNING_DAYS * 24 * 60 * 60;

/// Where a certificate stands at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Validity {
    /// Valid for longer than [`EXPIRY_WARNING_DAYS`].
    Valid,
    /// Valid, ending within [`EXPIRY_WARNING_DAYS`].
    Expiring,
    /// Past its `notAfter` ([`Certificate::valid_at`]'s rule).
    Expired,
}

impl Validity {
    fn of(certificate: &Certificate, now: i64) -> Self {
        if now > certificate.not_after {
            Self::Expired
        } else if now >= certificate.not_after.saturating_sub(EXPIRY_WARNING_SECS) {
            Self::Expiring
        } else {
            Self::Valid
        }
    }

    /// `valid until T`, `expires at T` or `expired at T`.
    fn until(self, certificate: &Certificate) -> String {
        let at = rfc3339(certificate.not_after);
        match self {
            Self::Valid => format!("valid until {at}"),
            Self::Expiring => format!("expires at {at}"),
            Self::Expired => format!("expired at {at}"),
        }
    }
}

/// `(status, reason, message)` of an object's `ResolvedRefs` at `now`
/// (Unix seconds); `served` is `None` for an object the edge does not
/// serve (no condition), else its secret, if any.
pub fn resolved_refs(
    served: Option<Option<&TlsSecret>>,
    tls: &Resolutions,
    now: i64,
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
        Resolution::Ready(certificate) => {
            let validity = Validity::of(&certificate, now);
            let serial = &certificate.serial;
            let until = validity.until(&certificate);
            match validity {
                Validity::Valid => (
                    "True",
                    REASON_RESOLVED_REFS,
                    format!("{name}: certificate serial {serial} {until}, served by SNI"),
                ),
                Validity::Expiring => (
                    "True",
                    REASON_CERTIFICATE_EXPIRING,
                    format!(
                        "{name}: certificate serial {serial} {until}, within {EXPIRY_WARNING_DAYS} days: renew it; served by SNI"
                    ),
                ),
                // The resolver refuses an expired certificate at its next
                // look; until then clients refuse it.
                Validity::Expired => (
                    "False",
                    REASON_INVALID_CERTIFICATE_REF,
                    format!("{name}: certificate serial {serial} {until}: clients refuse it"),
                ),
            }
        }
        Resolution::Kept { certificate, why } => (
            "False",
            REASON_INVALID_CERTIFICATE_REF,
            format!(
                "{name}: {why}; still serving its last good certificate, serial {} {}",
                certificate.serial,
                Validity::of(&certificate, now).until(&certificate)
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

/// The first time after `now` (Unix seconds) at which some object's
/// `ResolvedRefs` changes by time alone: a served certificate comes within
/// [`EXPIRY_WARNING_DAYS`] of its end or passes it, or a certificate not valid
/// yet becomes valid. `None`: nothing changes with time. The modes wake a
/// pass then, which derives every status.
pub fn changes_at(tls: &Resolutions, now: i64) -> Option<i64> {
    let served = tls.ready().flat_map(|(_, certificate)| {
        [
            certificate.not_after.saturating_sub(EXPIRY_WARNING_SECS),
            // Expired once past `notAfter` (`Certificate::valid_at`).
            certificate.not_after.saturating_add(1),
        ]
    });
    let not_yet_valid = tls.iter().filter_map(|(_, resolution)| match resolution {
        Resolution::Refused(Invalid::NotYetValid(at))
        | Resolution::Kept {
            why: Invalid::NotYetValid(at),
            ..
        } => Some(*at),
        _ => None,
    });
    served.chain(not_yet_valid).filter(|&at| at > now).min()
}

/// `secret default/example-tls`, or `AWS_SECRETS_MANAGER secret NAME`.
pub fn describe(secret: &TlsSecret) -> String {
    match (&secret.provider, &secret.namespace) {
        (SecretProvider::Kubernetes, Some(namespace)) => format!("secret {namespace}/{}", secret.secret_name),
        (SecretProvider::AwsSecretsManager, _) => format!("AWS_SECRETS_MANAGER secret {}", secret.secret_name),
        _ => format!("secret {}", secret.secret_name),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const DAY: i64 = 24 * 60 * 60;
    /// 2027-01-15T08:00:00Z.
    const NOT_AFTER: i64 = 1_800_000_000;

    fn certificate(not_after: i64) -> Arc<Certificate> {
        Arc::new(Certificate {
            chain_pem: Vec::new(),
            key_pem: Vec::new(),
            not_before: 1_577_836_800,
            not_after,
            serial: "0a1b".to_owned(),
        })
    }

    fn secret(name: &str) -> TlsSecret {
        TlsSecret {
            provider: SecretProvider::Kubernetes,
            namespace: Some("shop".to_owned()),
            secret_name: name.to_owned(),
        }
    }

    fn served(resolution: Resolution) -> Resolutions {
        let mut tls = Resolutions::default();
        tls.insert(secret("api-tls"), resolution);
        tls
    }

    fn at(tls: &Resolutions, now: i64) -> (&'static str, &'static str, String) {
        resolved_refs(Some(Some(&secret("api-tls"))), tls, now).unwrap()
    }

    #[test]
    fn a_served_certificate_is_expiring_within_seven_days_and_invalid_once_past_its_end() {
        let tls = served(Resolution::Ready(certificate(NOT_AFTER)));
        assert_eq!(
            at(&tls, NOT_AFTER - 8 * DAY),
            (
                "True",
                REASON_RESOLVED_REFS,
                "secret shop/api-tls: certificate serial 0a1b valid until 2027-01-15T08:00:00Z, served by SNI"
                    .to_owned()
            )
        );
        assert_eq!(
            at(&tls, NOT_AFTER - 6 * DAY),
            (
                "True",
                REASON_CERTIFICATE_EXPIRING,
                "secret shop/api-tls: certificate serial 0a1b expires at 2027-01-15T08:00:00Z, within 7 days: \
                 renew it; served by SNI"
                    .to_owned()
            )
        );
        // The edges: expiring from exactly 7 days before, valid through
        // `notAfter` itself, expired the second after.
        assert_eq!(at(&tls, NOT_AFTER - 7 * DAY - 1).1, REASON_RESOLVED_REFS);
        assert_eq!(at(&tls, NOT_AFTER - 7 * DAY).1, REASON_CERTIFICATE_EXPIRING);
        assert_eq!(at(&tls, NOT_AFTER).1, REASON_CERTIFICATE_EXPIRING);
        assert_eq!(
            at(&tls, NOT_AFTER + 1),
            (
                "False",
                REASON_INVALID_CERTIFICATE_REF,
                "secret shop/api-tls: certificate serial 0a1b expired at 2027-01-15T08:00:00Z: clients refuse it"
                    .to_owned()
            )
        );
        // As the resolver refuses it once expired.
        let refused = served(Resolution::Refused(Invalid::Expired(NOT_AFTER)));
        assert_eq!(
            at(&refused, NOT_AFTER + DAY),
            (
                "False",
                REASON_INVALID_CERTIFICATE_REF,
                "secret shop/api-tls: the certificate expired at 2027-01-15T08:00:00Z; its hosts are not served \
                 over TLS"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_kept_certificate_stays_invalid_and_says_when_it_ends() {
        let kept = served(Resolution::Kept {
            certificate: certificate(NOT_AFTER),
            why: Invalid::KeyMismatch,
        });
        let (status, reason, message) = at(&kept, NOT_AFTER - 6 * DAY);
        assert_eq!((status, reason), ("False", REASON_INVALID_CERTIFICATE_REF));
        assert!(
            message.ends_with("still serving its last good certificate, serial 0a1b expires at 2027-01-15T08:00:00Z"),
            "{message}"
        );
        assert!(
            at(&kept, NOT_AFTER - 8 * DAY)
                .2
                .ends_with("valid until 2027-01-15T08:00:00Z")
        );
    }

    #[test]
    fn the_next_change_is_the_earliest_line_a_certificate_crosses_after_now() {
        let mut tls = Resolutions::default();
        tls.insert(secret("late"), Resolution::Ready(certificate(NOT_AFTER + 30 * DAY)));
        tls.insert(secret("soon"), Resolution::Ready(certificate(NOT_AFTER)));
        tls.insert(secret("elsewhere"), Resolution::Delegated("mesh-sds".to_owned()));
        tls.insert(secret("bad"), Resolution::Refused(Invalid::KeyMismatch));
        // Before the soonest warning, then between it and its end, then
        // past it (the later certificate's warning is next).
        assert_eq!(changes_at(&tls, NOT_AFTER - 8 * DAY), Some(NOT_AFTER - 7 * DAY));
        assert_eq!(changes_at(&tls, NOT_AFTER - 7 * DAY), Some(NOT_AFTER + 1));
        assert_eq!(changes_at(&tls, NOT_AFTER - 6 * DAY), Some(NOT_AFTER + 1));
        assert_eq!(changes_at(&tls, NOT_AFTER + 1), Some(NOT_AFTER + 23 * DAY));
        assert_eq!(changes_at(&tls, NOT_AFTER + 31 * DAY), None);
        // A kept certificate ends too; a certificate not valid yet starts.
        let kept = served(Resolution::Kept {
            certificate: certificate(NOT_AFTER),
            why: Invalid::NotYetValid(NOT_AFTER - 2 * DAY),
        });
        assert_eq!(changes_at(&kept, NOT_AFTER - 3 * DAY), Some(NOT_AFTER - 2 * DAY));
        assert_eq!(changes_at(&kept, NOT_AFTER - 2 * DAY), Some(NOT_AFTER + 1));
        let not_yet = served(Resolution::Refused(Invalid::NotYetValid(NOT_AFTER)));
        assert_eq!(changes_at(&not_yet, NOT_AFTER - DAY), Some(NOT_AFTER));
        assert_eq!(changes_at(&Resolutions::default(), 0), None);
    }
}
