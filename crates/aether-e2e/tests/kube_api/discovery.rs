//! The mock API server's discovery against the real `kubectl`: every kind
//! it serves is found by its plural, singular and short names, as kubectl
//! finds them on a real cluster, and nothing else is.

use aether_e2e::kube_api::{KubeApi, Resource};
use aether_e2e::kubectl;
use serde_json::json;

use crate::common::virtual_host;

/// `kubectl ARGS`, which must succeed; its stdout's lines.
fn lines(api: &KubeApi, args: &[&str]) -> Vec<String> {
    let output = kubectl::run(api, args);
    assert!(output.status.success(), "kubectl {args:?}: {output:?}");
    output.stdout.lines().map(str::to_owned).collect()
}

#[test]
fn kubectl_lists_every_kind_served_and_no_other() {
    let api = KubeApi::start();
    let mut listed = lines(&api, &["api-resources", "-o", "name"]);
    listed.sort();
    let mut served: Vec<String> = Resource::ALL
        .iter()
        .map(|r| match r.group() {
            "" => r.plural().to_owned(),
            group => format!("{}.{group}", r.plural()),
        })
        .collect();
    served.sort();
    assert_eq!(listed, served);

    let output = kubectl::run(&api, ["get", "pods", "-A"]);
    assert!(!output.status.success(), "{output:?}");
    assert!(
        output
            .stderr
            .contains(r#"the server doesn't have a resource type "pods""#),
        "{output:?}"
    );
}

#[test]
fn kubectl_gets_virtual_hosts_by_every_name_of_theirs() {
    let api = KubeApi::start();
    for (namespace, name) in [("shop", "a"), ("shop", "b"), ("blog", "c")] {
        api.create(virtual_host(namespace, name, &[&format!("{name}.example.com")]))
            .unwrap();
    }
    let keys = r#"jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}@{.metadata.generation}{"\n"}{end}"#;
    for kind in ["virtualhosts", "virtualhost", "vh", "virtualhosts.config.aether.io"] {
        assert_eq!(
            lines(&api, &["get", kind, "-A", "-o", "name"]),
            [
                "virtualhost.config.aether.io/c",
                "virtualhost.config.aether.io/a",
                "virtualhost.config.aether.io/b"
            ],
            "{kind}"
        );
        assert_eq!(
            lines(&api, &["get", kind, "-n", "shop", "-o", keys]),
            ["shop/a@1", "shop/b@1"],
            "{kind}"
        );
    }
    assert_eq!(
        lines(&api, &["get", "vh/c", "-n", "blog", "-o", "jsonpath={.spec.hosts[0]}"]),
        ["c.example.com"]
    );
}

#[test]
fn kubectl_patches_the_status_subresource_and_gets_core_kinds() {
    let api = KubeApi::start();
    api.create(virtual_host("shop", "a", &["a.example.com"])).unwrap();
    let status = r#"{"status": {"routeCount": 1}}"#;
    let patch = [
        "patch",
        "vh",
        "a",
        "-n",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ];
    lines(&api, &patch);
    let stored = api.get(Resource::VirtualHosts, "shop", "a").unwrap();
    assert_eq!(stored["status"]["routeCount"], 1, "{stored}");
    assert_eq!(
        stored["metadata"]["generation"], 1,
        "a status write keeps the generation"
    );

    // Created by the handle: kubectl writes core kinds in protobuf, which
    // the mock does not read.
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "shop", "name": "settings"}, "data": {"mode": "edge"}});
    api.create(settings).unwrap();
    assert_eq!(
        lines(
            &api,
            &["get", "cm", "settings", "-n", "shop", "-o", "jsonpath={.data.mode}"]
        ),
        ["edge"]
    );
}
