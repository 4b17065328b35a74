//! Helpers shared by the mock API server's tests.

use serde_json::{Value, json};

/// VirtualHost `namespace/name` serving `hosts` with one route to service `name`.
pub fn virtual_host(namespace: &str, name: &str, hosts: &[&str]) -> Value {
    json!({
        "apiVersion": "config.aether.io/v1", "kind": "VirtualHost",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"hosts": hosts, "routes": [{"match": {"prefix": "/"}, "backend": {"service": name}}]}
    })
}
