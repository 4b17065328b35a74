//! The specs the validation benches measure.
#![allow(dead_code)] // each bench uses what it needs

use aether_api::config::v1::{
    HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostTls, route_match::Path,
};

fn route(path: Path, service: &str, port: u32) -> HttpRoute {
    HttpRoute {
        r#match: Some(RouteMatch { path: Some(path) }),
        backend: Some(RouteBackend {
            service: service.into(),
            port,
        }),
    }
}

/// hosts [api.example.com]; /users -> svc-users:8080, exact /healthz ->
/// svc-health, / -> svc-web; TLS from the Kubernetes secret example-tls.
pub fn proposal() -> VirtualHostSpec {
    VirtualHostSpec {
        hosts: vec!["api.example.com".into()],
        routes: vec![
            route(Path::Prefix("/users".into()), "svc-users", 8080),
            route(Path::Exact("/healthz".into()), "svc-health", 0),
            route(Path::Prefix("/".into()), "svc-web", 0),
        ],
        tls: Some(VirtualHostTls {
            secret_name: "example-tls".into(),
            provider: SecretProvider::Kubernetes.into(),
        }),
    }
}

/// 16 hosts and 128 routes, each path and name longer than the proposal's.
pub fn worst_case() -> VirtualHostSpec {
    VirtualHostSpec {
        hosts: (0..16)
            .map(|i| format!("*.team-{i}.eu-west-1.api.example.com"))
            .collect(),
        routes: (0..128)
            .map(|i| {
                let path = format!("/v1/tenants/team-{i}/resources/items~{i}");
                let path = if i % 2 == 0 {
                    Path::Prefix(path)
                } else {
                    Path::Exact(path)
                };
                route(path, &format!("svc-team-{i}.backends"), 8000 + i)
            })
            .collect(),
        tls: Some(VirtualHostTls {
            secret_name: "wildcard-example-com-tls".into(),
            provider: SecretProvider::AwsSecretsManager.into(),
        }),
    }
}
