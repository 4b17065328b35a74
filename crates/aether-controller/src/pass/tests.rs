//! The pass's unit tests: statuses that turn with time alone.

use std::sync::Arc;

use aether_api::config::v1::SecretProvider;
use aether_projection::TlsSecret;

use super::*;
use crate::events;
use crate::status::resolved_refs::{REASON_CERTIFICATE_EXPIRING, REASON_INVALID_CERTIFICATE_REF, REASON_RESOLVED_REFS};
use crate::tls::Resolution;
use crate::tls::certificate::Certificate;

const DAY: i64 = 24 * 60 * 60;
const NOT_AFTER: i64 = 1_800_000_000;

/// The statuses as stored, each pass's patches written back (as local
/// mode's `status.json` holds them).
#[derive(Default)]
struct Stored(BTreeMap<ObjectKey, Observed>);

impl Inputs for Stored {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn observed(&self, key: &ObjectKey) -> Option<Observed> {
        self.0.get(key).cloned()
    }

    fn every_observed(&self) -> BTreeMap<ObjectKey, Observed> {
        self.0.clone()
    }
}

impl Stored {
    fn resolved_refs(&self, name: &str) -> (String, String) {
        let status = self.0[&ObjectKey::new("shop", name)].status.as_ref().unwrap();
        let condition = status.conditions.iter().find(|c| c.r#type == RESOLVED_REFS).unwrap();
        (condition.status.clone(), condition.reason.clone())
    }
}

/// A served object with the secret `shop/api-tls`, one without TLS, and
/// that secret's certificate ready, ending at [`NOT_AFTER`].
fn setup(out: &std::path::Path) -> (Pass, Stored, Resolutions) {
    let manifests = "
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: api, namespace: shop}
spec:
  hosts: [api.shop.test]
  tls: {secretName: api-tls, provider: KUBERNETES}
  routes: [{match: {prefix: /}, backend: {service: s}}]
---
apiVersion: config.aether.io/v1
kind: VirtualHost
metadata: {name: plain, namespace: shop}
spec: {hosts: [plain.shop.test], routes: [{match: {prefix: /}, backend: {service: s}}]}
";
    let mut pass = Pass::new(
        out.to_owned(),
        ProjectionConfig::default(),
        TlsSettings::new(out.to_string_lossy()),
        &[],
    );
    pass.without_envoy_files();
    let mut stored = Stored::default();
    for object in aether_manifests::parse_manifests(manifests).unwrap() {
        stored.0.insert(object.key(), Observed::default());
        pass.projector.upsert(object);
    }
    let secret = TlsSecret {
        provider: SecretProvider::Kubernetes,
        namespace: Some("shop".to_owned()),
        secret_name: "api-tls".to_owned(),
    };
    let mut resolutions = Resolutions::default();
    resolutions.insert(
        secret,
        Resolution::Ready(Arc::new(Certificate {
            chain_pem: Vec::new(),
            key_pem: Vec::new(),
            not_before: 1_577_836_800,
            not_after: NOT_AFTER,
            serial: "0a1b".to_owned(),
        })),
    );
    (pass, stored, resolutions)
}

/// One pass at `now` over the same resolutions; its patches stored.
/// Returns them, with their events.
fn pass_at(
    pass: &mut Pass,
    stored: &mut Stored,
    resolutions: &Resolutions,
    now: i64,
) -> Vec<(StatusPatch, Vec<events::Transition>)> {
    let snapshot = pass.snapshot();
    let round = Round {
        snapshot: &snapshot,
        resolutions: resolutions.clone(),
        derive_all: false,
        now: Timestamp::from_second(now).unwrap(),
        started: Instant::now(),
    };
    let (_, patches) = pass.run(round, stored, &Metrics::new()).unwrap();
    patches
        .into_iter()
        .map(|patch| {
            let observed = stored.0.get_mut(&patch.key).unwrap();
            let transitions = events::transitions(observed.status.as_ref(), &patch.status);
            observed.status = Some(patch.status.clone());
            (patch, transitions)
        })
        .collect()
}

#[test]
fn a_pass_at_a_later_time_turns_resolved_refs_as_the_certificate_nears_and_passes_its_end() {
    let out = tempfile::tempdir().unwrap();
    let (mut pass, mut stored, resolutions) = setup(out.path());
    let first = pass_at(&mut pass, &mut stored, &resolutions, NOT_AFTER - 8 * DAY);
    assert_eq!(first.len(), 2);
    assert_eq!(
        stored.resolved_refs("api"),
        ("True".into(), REASON_RESOLVED_REFS.into())
    );
    assert_eq!(
        pass.certificates_change_at(),
        Timestamp::from_second(NOT_AFTER - 7 * DAY).ok()
    );
    // Nothing changed, the line not crossed: nothing derived again.
    assert_eq!(
        pass_at(&mut pass, &mut stored, &resolutions, NOT_AFTER - 7 * DAY - 1),
        []
    );
    // The same inputs, six days before the end: the object with the
    // secret turns, with a Warning; the other stays as it was.
    let expiring = pass_at(&mut pass, &mut stored, &resolutions, NOT_AFTER - 6 * DAY);
    assert_eq!(
        expiring
            .iter()
            .map(|(patch, _)| patch.key.name.as_str())
            .collect::<Vec<_>>(),
        ["api"]
    );
    assert_eq!(
        stored.resolved_refs("api"),
        ("True".into(), REASON_CERTIFICATE_EXPIRING.into())
    );
    let warnings: Vec<_> = expiring[0].1.iter().map(|t| (t.warning, t.reason.as_str())).collect();
    assert_eq!(warnings, [(true, REASON_CERTIFICATE_EXPIRING)]);
    assert_eq!(
        pass.certificates_change_at(),
        Timestamp::from_second(NOT_AFTER + 1).ok()
    );
    assert_eq!(pass_at(&mut pass, &mut stored, &resolutions, NOT_AFTER), []);
    // Past its end, still nothing else changed: no longer resolved.
    let expired = pass_at(&mut pass, &mut stored, &resolutions, NOT_AFTER + 1);
    assert_eq!(expired.len(), 1);
    assert_eq!(
        stored.resolved_refs("api"),
        ("False".into(), REASON_INVALID_CERTIFICATE_REF.into())
    );
    let warnings: Vec<_> = expired[0].1.iter().map(|t| (t.warning, t.reason.as_str())).collect();
    assert_eq!(warnings, [(true, REASON_INVALID_CERTIFICATE_REF)]);
    assert_eq!(pass.certificates_change_at(), None);
    assert_eq!(
        stored.resolved_refs("plain"),
        ("True".into(), REASON_RESOLVED_REFS.into())
    );
}
