//! Synthetic objects for the benchmarks and the `scale` example: each with
//! two hosts and 10 routes over a few services; one object in ten also claims
//! its predecessor's host, so the host index has conflicts to resolve.

use aether_api::config::v1::{
    HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostTls, route_match::Path,
};
use aether_api::object::VirtualHostObject;
use jiff::Timestamp;

/// Routes per object.
pub const ROUTES: usize = 10;
/// TLS secrets the objects name, at most: object `i` names `tls-(i % SECRETS)`.
pub const SECRETS: usize = 1000;

/// Object `i` of a synthetic set; `version` changes its routes (for updates).
pub fn object(i: usize, version: u32) -> VirtualHostObject {
    let mut hosts = vec![format!("app-{i}.example.com"), format!("app-{i}.example.net")];
    if i % 10 == 9 {
        hosts.push(format!("app-{}.example.com", i - 1));
    }
    let routes = (0..ROUTES)
        .map(|r| HttpRoute {
            r#match: Some(RouteMatch {
                path: Some(if r == 0 {
                    Path::Exact("/healthz".into())
                } else {
                    Path::Prefix(format!("/api/v{version}/r{r}"))
                }),
                ..Default::default()
            }),
            backend: Some(RouteBackend {
                service: format!("svc-{}", (i + r) % 500),
                port: [0, 8080, 9090][r % 3],
            }),
            ..Default::default()
        })
        .collect();
    VirtualHostObject {
        namespace: format!("team-{}", i % 100),
        name: format!("app-{i}"),
        creation_timestamp: Some(Timestamp::from_second(1_767_225_600 + i as i64).unwrap()),
        spec: std::sync::Arc::new(VirtualHostSpec {
            hosts,
            routes,
            tls: Some(VirtualHostTls {
                secret_name: secret(i).1,
                provider: SecretProvider::Kubernetes as i32,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `n` objects.
pub fn objects(n: usize) -> Vec<VirtualHostObject> {
    (0..n).map(|i| object(i, 1)).collect()
}

/// The TLS secrets the first `n` objects name, each once, as (namespace,
/// name): `tls-K` of `team-(K % 100)`.
pub fn secrets(n: usize) -> impl Iterator<Item = (String, String)> {
    (0..SECRETS.min(n)).map(secret)
}

/// The TLS secret object `i` names, as (namespace, name): shared by every
/// object `i + k * SECRETS`.
pub fn secret(i: usize) -> (String, String) {
    let k = i % SECRETS;
    (format!("team-{}", k % 100), format!("tls-{k}"))
}

/// The manifest text of `objects`, one document each.
pub fn manifest(objects: impl IntoIterator<Item = VirtualHostObject>) -> String {
    objects
        .into_iter()
        .map(|object| crate::objects::ObjectBuilder::from(&object).manifest())
        .collect()
}
