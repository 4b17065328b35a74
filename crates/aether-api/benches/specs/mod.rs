//! The specs the validation benches measure.
#![allow(dead_code)] // each bench uses what it needs

use aether_api::config::v1::{SecretProvider, VirtualHostSpec, VirtualHostTls, route_match::Path};

pub use crate::common::proposal_spec as proposal;
use crate::common::route_to as route;

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
        ..Default::default()
    }
}
