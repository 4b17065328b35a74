//! What both benchmarks review: an index of 10k VirtualHosts (50k hosts, a
//! fifth wildcards) and AdmissionReview bodies of three kinds.

use aether_webhook::index::{HostIndex, ObjectKey};
use serde_json::json;

pub const OBJECTS: usize = 10_000;

fn object_hosts(i: usize) -> Vec<String> {
    vec![
        format!("a{i}.example.com"),
        format!("b{i}.example.com"),
        format!("c{i}.example.net"),
        format!("d{i}.team{}.example.org", i % 100),
        format!("*.w{i}.example.io"),
    ]
}

/// The indexed objects: `OBJECTS` of them, five hosts each.
pub fn index() -> HostIndex {
    let index = HostIndex::new();
    for i in 0..OBJECTS {
        index.upsert(
            ObjectKey::new(format!("ns{}", i % 50), format!("vh{i}")),
            object_hosts(i),
        );
    }
    index
}

/// A CREATE of `name` claiming `hosts`, with three routes and TLS.
pub fn review(uid: usize, name: &str, hosts: &[String]) -> Vec<u8> {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("uid-{uid}"),
            "kind": {"group": "config.aether.io", "version": "v1", "kind": "VirtualHost"},
            "resource": {"group": "config.aether.io", "version": "v1", "resource": "virtualhosts"},
            "name": name, "namespace": "bench", "operation": "CREATE",
            "userInfo": {"username": "bench"},
            "object": {
                "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
                "metadata": {"name": name, "namespace": "bench"},
                "spec": {
                    "hosts": hosts,
                    "routes": [
                        {"match": {"prefix": "/api"}, "backend": {"service": "svc-api", "port": 8080}},
                        {"match": {"exact": "/healthz"}, "backend": {"service": "svc-health", "port": 8081}},
                        {"match": {"prefix": "/"}, "backend": {"service": "svc-web", "port": 80}}
                    ],
                    "tls": {"secretName": "bench-tls", "provider": "KUBERNETES"}
                }
            },
            "dryRun": false
        }
    });
    serde_json::to_vec(&body).unwrap()
}

/// Review `k` of each kind: new hosts (allowed), a taken host (denied), a
/// host under an indexed wildcard (allowed with a warning).
pub fn mix(k: usize) -> [Vec<u8>; 3] {
    let fresh: Vec<String> = (0..4).map(|h| format!("n{h}-{k}.fresh.example.com")).collect();
    [
        review(k, &format!("new{k}"), &fresh),
        review(k, &format!("dup{k}"), &[format!("a{}.example.com", k * 97)]),
        review(k, &format!("wild{k}"), &[format!("x.w{}.example.io", k * 89)]),
    ]
}
