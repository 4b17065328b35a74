//! Behaviour of the projection on hand-written objects and on the checked-in
//! examples.

use std::time::Duration;

use aether_manifests::parse_manifests;
use aether_projection::envoy_route::{RouteConfiguration, route, route_action, route_match};
use aether_projection::{
    Format, LeftOutReason, ObjectKey, ProjectError, ProjectionConfig, Projector, RetryConfig, Snapshot,
    VirtualHostObject, project,
};
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde_json::{Value, json};

fn object(namespace: &str, name: &str, created: Option<&str>, hosts: &[&str]) -> VirtualHostObject {
    let mut value = json!({
        "namespace": namespace, "name": name,
        "spec": {"hosts": hosts, "routes": [{"match": {"prefix": "/"}, "backend": {"service": format!("svc-{name}")}}]}
    });
    if let Some(created) = created {
        value["creationTimestamp"] = json!(created);
    }
    serde_json::from_value(value).unwrap()
}

fn snapshot(objects: Vec<VirtualHostObject>) -> Snapshot {
    project(objects, &ProjectionConfig::default()).unwrap()
}

/// `(virtual host name, domains)` of the output, in order.
fn domains(snapshot: &Snapshot) -> Vec<(String, Vec<String>)> {
    snapshot
        .route_configuration()
        .unwrap()
        .virtual_hosts
        .iter()
        .map(|vh| (vh.name.clone(), vh.domains.clone()))
        .collect()
}

fn conflicts(snapshot: &Snapshot) -> Vec<(String, String, String)> {
    snapshot
        .report
        .conflicts
        .iter()
        .map(|c| (c.host.clone(), c.winner.to_string(), c.loser.to_string()))
        .collect()
}

fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn read_examples(names: &[&str]) -> Vec<VirtualHostObject> {
    names
        .iter()
        .flat_map(|name| parse_manifests(&std::fs::read_to_string(examples_dir().join(name)).unwrap()).unwrap())
        .collect()
}

#[test]
fn proposal_becomes_one_virtual_host_with_routes_in_order() {
    let snapshot = snapshot(read_examples(&["proposal.yaml"]));
    let config = &snapshot.route_configuration().unwrap();
    assert_eq!(config.name, "aether-edge");
    assert_eq!(
        domains(&snapshot),
        [("default/api".to_owned(), vec!["api.example.com".to_owned()])]
    );
    let routes: Vec<(route_match::PathSpecifier, String)> = config.virtual_hosts[0]
        .routes
        .iter()
        .map(|r| {
            let Some(route::Action::Route(action)) = &r.action else {
                panic!("not a route action: {r:?}")
            };
            let Some(route_action::ClusterSpecifier::Cluster(cluster)) = &action.cluster_specifier else {
                panic!("not a cluster: {action:?}")
            };
            (r.r#match.clone().unwrap().path_specifier.unwrap(), cluster.clone())
        })
        .collect();
    assert_eq!(
        routes,
        [
            (
                route_match::PathSpecifier::Prefix("/users".into()),
                "svc-users:8080".into()
            ),
            (route_match::PathSpecifier::Path("/healthz".into()), "svc-health".into()),
            (route_match::PathSpecifier::Prefix("/".into()), "svc-web".into()),
        ]
    );
    let deps: Vec<(&str, &[u32])> = snapshot
        .dependencies
        .iter()
        .map(|d| (d.service.as_str(), d.ports.as_slice()))
        .collect();
    assert_eq!(
        deps,
        [
            ("svc-health", &[0][..]),
            ("svc-users", &[8080][..]),
            ("svc-web", &[0][..])
        ]
    );
    let secrets = serde_json::to_value(&snapshot.tls_secrets).unwrap();
    assert_eq!(
        secrets,
        json!([{"provider": "KUBERNETES", "namespace": "default", "secretName": "example-tls"}])
    );
    assert_eq!(snapshot.report, Default::default());
}

#[test]
fn every_route_gets_the_configured_retry_policy() {
    let objects = read_examples(&["proposal.yaml"]);
    let retry_of = |config: &ProjectionConfig| {
        let snapshot = project(objects.clone(), config).unwrap();
        snapshot.route_configuration().unwrap().virtual_hosts[0]
            .routes
            .iter()
            .map(|r| match &r.action {
                Some(route::Action::Route(action)) => action.retry_policy.clone(),
                other => panic!("not a route action: {other:?}"),
            })
            .collect::<Vec<_>>()
    };
    let default = retry_of(&ProjectionConfig::default());
    assert_eq!(default.len(), 3);
    for policy in &default {
        let policy = policy.as_ref().expect("a retry policy by default");
        assert_eq!(policy.retry_on, "connect-failure,refused-stream,reset-before-request");
        assert_eq!(policy.num_retries.unwrap().value, 2);
        assert_eq!(policy.per_try_timeout, None);
    }
    let tuned = ProjectionConfig {
        retry: RetryConfig {
            retry_on: "5xx".into(),
            num_retries: 4,
            per_try_timeout: Some(Duration::from_millis(1500)),
        },
        ..ProjectionConfig::default()
    };
    let policy = retry_of(&tuned)[1].clone().unwrap();
    assert_eq!(
        (policy.retry_on.as_str(), policy.num_retries.unwrap().value),
        ("5xx", 4)
    );
    let timeout = policy.per_try_timeout.unwrap();
    assert_eq!((timeout.seconds, timeout.nanos), (1, 500_000_000));
    let off = ProjectionConfig {
        retry: RetryConfig {
            num_retries: 0,
            ..RetryConfig::default()
        },
        ..Default::default()
    };
    assert!(retry_of(&off).iter().all(Option::is_none));
}

#[test]
fn oldest_claimant_wins_and_only_the_contested_host_is_dropped() {
    let snapshot = snapshot(vec![
        object(
            "b",
            "young",
            Some("2026-02-01T00:00:00Z"),
            &["shared.example.com", "young.example.com"],
        ),
        object("z", "old", Some("2026-01-01T00:00:00Z"), &["shared.example.com"]),
    ]);
    assert_eq!(
        domains(&snapshot),
        [
            ("b/young".to_owned(), vec!["young.example.com".to_owned()]),
            ("z/old".to_owned(), vec!["shared.example.com".to_owned()]),
        ]
    );
    assert_eq!(
        conflicts(&snapshot),
        [("shared.example.com".into(), "z/old".into(), "b/young".into())]
    );
    assert!(snapshot.report.left_out.is_empty());
}

#[test]
fn ties_go_to_namespace_then_name_and_untimed_objects_rank_last() {
    let same = Some("2026-01-01T00:00:00Z");
    let snapshot = snapshot(vec![
        object("a", "untimed", None, &["x.example.com"]),
        object("b", "b", same, &["x.example.com"]),
        object("a", "z", same, &["x.example.com"]),
        object("a", "y", same, &["x.example.com"]),
    ]);
    assert_eq!(
        domains(&snapshot),
        [("a/y".to_owned(), vec!["x.example.com".to_owned()])]
    );
    let losers: Vec<String> = conflicts(&snapshot)
        .into_iter()
        .map(|(_, winner, loser)| format!("{winner}>{loser}"))
        .collect();
    assert_eq!(losers, ["a/y>a/z", "a/y>b/b", "a/y>a/untimed"]);
    let left_out: Vec<(String, &LeftOutReason)> = snapshot
        .report
        .left_out
        .iter()
        .map(|l| (l.object.to_string(), &l.reason))
        .collect();
    assert_eq!(
        left_out,
        [
            ("a/untimed".to_owned(), &LeftOutReason::NoHostsLeft),
            ("a/z".to_owned(), &LeftOutReason::NoHostsLeft),
            ("b/b".to_owned(), &LeftOutReason::NoHostsLeft),
        ]
    );
    // Left-out objects contribute no dependency.
    let services: Vec<&str> = snapshot.dependencies.iter().map(|d| d.service.as_str()).collect();
    assert_eq!(services, ["svc-y"]);
}

#[test]
fn wildcard_and_exact_host_are_no_conflict() {
    let snapshot = snapshot(vec![
        object("a", "wild", Some("2026-01-01T00:00:00Z"), &["*.example.com"]),
        object("a", "api", Some("2026-02-01T00:00:00Z"), &["api.example.com"]),
    ]);
    assert_eq!(snapshot.route_configuration().unwrap().virtual_hosts.len(), 2);
    assert!(snapshot.report.conflicts.is_empty());
}

#[test]
fn invalid_objects_are_left_out_with_their_problems() {
    let mut bad_metadata = object("Team", "api", None, &["a.example.com"]);
    bad_metadata.name = "api/".into();
    let snapshot = snapshot(vec![
        object(
            "a",
            "bad",
            Some("2000-01-01T00:00:00Z"),
            &["UPPER.example.com", "ok.example.com"],
        ),
        bad_metadata,
        object("a", "good", None, &["ok.example.com"]),
    ]);
    // The invalid object is older, but never claims its valid host either.
    assert_eq!(
        domains(&snapshot),
        [("a/good".to_owned(), vec!["ok.example.com".to_owned()])]
    );
    assert!(snapshot.report.conflicts.is_empty());
    let problems: Vec<(String, Vec<(String, &str)>)> = snapshot
        .report
        .left_out
        .iter()
        .map(|l| match &l.reason {
            LeftOutReason::Invalid { problems } => (
                l.object.to_string(),
                problems.iter().map(|p| (p.field_path.clone(), p.rule_id)).collect(),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        problems,
        [
            (
                "Team/api/".to_owned(),
                vec![
                    ("metadata.namespace".to_owned(), "dns1123_label"),
                    ("metadata.name".to_owned(), "dns1123_subdomain"),
                ]
            ),
            ("a/bad".to_owned(), vec![("spec.hosts[0]".to_owned(), "string.pattern")]),
        ]
    );
}

#[test]
fn duplicate_objects_are_an_error() {
    let err = project(
        vec![
            object("a", "x", None, &["a.example.com"]),
            object("a", "x", None, &["b.example.com"]),
        ],
        &ProjectionConfig::default(),
    )
    .unwrap_err();
    assert_eq!(err, ProjectError::DuplicateObject(ObjectKey::new("a", "x")));
    assert_eq!(err.to_string(), "the input holds VirtualHost a/x more than once");
}

#[test]
fn checked_in_examples_project_with_conflicts_and_an_invalid_object() {
    let mut names: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "action-headers.yaml",
            "action-redirect.yaml",
            "action-rewrite.yaml",
            "action-timeouts-retries.yaml",
            "action-weights.yaml",
            "invalid.yaml",
            "match-headers.yaml",
            "match-methods.yaml",
            "match-query.yaml",
            "match-regex.yaml",
            "proposal.yaml",
            "route-order.yaml",
            "storefront.yaml",
            "tenants.yaml"
        ]
    );
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let snapshot = snapshot(read_examples(&names));
    assert_eq!(
        domains(&snapshot),
        [
            ("default/api".to_owned(), vec!["api.example.com".to_owned()]),
            ("default/canary".to_owned(), vec!["canary.example.org".to_owned()]),
            ("default/docs".to_owned(), vec!["docs.example.org".to_owned()]),
            ("default/headers".to_owned(), vec!["headers.example.org".to_owned()]),
            ("default/orders".to_owned(), vec!["orders.example.org".to_owned()]),
            ("default/redirect".to_owned(), vec!["redirect.example.org".to_owned()]),
            ("default/rewrite".to_owned(), vec!["rewrite.example.org".to_owned()]),
            ("default/search".to_owned(), vec!["search.example.org".to_owned()]),
            ("default/timeouts".to_owned(), vec!["timeouts.example.org".to_owned()]),
            ("default/users".to_owned(), vec!["users.example.org".to_owned()]),
            ("default/weights".to_owned(), vec!["weights.example.org".to_owned()]),
            ("legacy/legacy-api".to_owned(), vec!["legacy.example.com".to_owned()]),
            ("platform/tenants".to_owned(), vec!["*.example.com".to_owned()]),
            (
                "shop/storefront".to_owned(),
                vec!["shop.example.com".to_owned(), "www.shop.example.com".to_owned()]
            ),
        ]
    );
    assert_eq!(
        conflicts(&snapshot),
        [
            (
                "api.example.com".into(),
                "default/api".into(),
                "legacy/legacy-api".into()
            ),
            (
                "shop.example.com".into(),
                "shop/storefront".into(),
                "shop/storefront-canary".into()
            ),
        ]
    );
    let left_out: Vec<(String, &str)> = snapshot
        .report
        .left_out
        .iter()
        .map(|l| {
            let reason = match l.reason {
                LeftOutReason::Invalid { .. } => "invalid",
                LeftOutReason::Unsupported { .. } => "unsupported",
                LeftOutReason::NoHostsLeft => "no hosts left",
            };
            (l.object.to_string(), reason)
        })
        .collect();
    assert_eq!(
        left_out,
        [
            ("sandbox/broken".into(), "invalid"),
            ("shop/storefront-canary".into(), "no hosts left")
        ]
    );
    let secrets = serde_json::to_value(&snapshot.tls_secrets).unwrap();
    assert_eq!(
        secrets,
        json!([
            {"provider": "KUBERNETES", "namespace": "default", "secretName": "example-tls"},
            {"provider": "KUBERNETES", "namespace": "shop", "secretName": "shop-tls"},
            {"provider": "AWS_SECRETS_MANAGER", "secretName": "wildcard-example-com"},
        ])
    );
}

#[test]
fn json_is_envoys_canonical_form_and_decodes_strictly() {
    let names = ["invalid.yaml", "proposal.yaml", "storefront.yaml", "tenants.yaml"];
    let snapshot = snapshot(read_examples(&names));
    let json: Value = serde_json::from_slice(&snapshot.render(Format::Json).unwrap()).unwrap();
    let route = &json["routeConfiguration"]["virtualHosts"][0]["routes"][0];
    assert_eq!(
        route,
        &json!({
            "match": {"prefix": "/users"},
            "route": {
                "cluster": "svc-users:8080",
                "retryPolicy": {"retryOn": "connect-failure,refused-stream,reset-before-request", "numRetries": 2}
            }
        })
    );
    // Strict: unknown fields are errors, so every name must be Envoy's.
    let strict = DeserializeOptions::new().deny_unknown_fields(true);
    let decoded = DynamicMessage::deserialize_with_options(
        aether_projection::descriptors::route_configuration(),
        json["routeConfiguration"].clone(),
        &strict,
    )
    .unwrap();
    let decoded = RouteConfiguration::decode(decoded.encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded, snapshot.route_configuration().unwrap());
    // A misspelt field is caught by that check.
    let mut misspelt = json["routeConfiguration"].clone();
    misspelt["virtualHosts"][0]["domain"] = json!(["x"]);
    assert!(
        DynamicMessage::deserialize_with_options(
            aether_projection::descriptors::route_configuration(),
            misspelt,
            &strict
        )
        .is_err()
    );
    assert_eq!(
        json["report"]["leftOut"][0],
        json!({"object": "sandbox/broken", "reason": "invalid", "problems": [
            {"fieldPath": "spec.hosts[0]", "ruleId": "string.pattern", "message": snapshot_problem_message(&snapshot, 0)},
            {"fieldPath": "spec.routes[0].match.prefix", "ruleId": "path.no_empty_segment",
             "message": "must not contain an empty path segment (//)"},
        ]})
    );
    assert_eq!(
        json["report"]["leftOut"][1],
        json!({"object": "shop/storefront-canary", "reason": "noHostsLeft"})
    );
}

fn snapshot_problem_message(snapshot: &Snapshot, index: usize) -> String {
    match &snapshot.report.left_out[0].reason {
        LeftOutReason::Invalid { problems } => problems[index].message.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn yaml_and_binary_carry_the_same_content() {
    let snapshot = snapshot(read_examples(&["proposal.yaml", "tenants.yaml"]));
    let from_yaml: Value =
        serde_saphyr::from_str(&String::from_utf8(snapshot.render(Format::Yaml).unwrap()).unwrap()).unwrap();
    let from_json: Value = serde_json::from_slice(&snapshot.render(Format::Json).unwrap()).unwrap();
    assert_eq!(from_yaml, from_json);
    let binary = snapshot.render(Format::Binary).unwrap();
    assert_eq!(
        RouteConfiguration::decode(binary.as_slice()).unwrap(),
        snapshot.route_configuration().unwrap()
    );
    // The assembled bytes are prost's own (canonical) encoding of that message.
    assert_eq!(snapshot.route_configuration().unwrap().encode_to_vec(), binary);
}

#[test]
fn manifest_errors_name_the_document() {
    let good = std::fs::read_to_string(examples_dir().join("proposal.yaml")).unwrap();
    let err = parse_manifests(&format!(
        "{good}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: x}}\nspec: {{}}\n"
    ))
    .unwrap_err();
    assert_eq!(err.document, Some(1));
    assert!(
        err.to_string()
            .contains("apiVersion: expected \"config.aether.io/v1\", found \"v1\""),
        "{err}"
    );
    assert!(parse_manifests("a: [").unwrap_err().document.is_none());
}

#[test]
fn a_value_of_the_wrong_type_leaves_its_object_out_as_invalid() {
    let good = std::fs::read_to_string(examples_dir().join("proposal.yaml")).unwrap();
    let objects = parse_manifests(&good.replace("port: 8080", "port: eighty")).unwrap();
    let snapshot = project(objects, &ProjectionConfig::default()).unwrap();
    assert!(snapshot.route_configuration().unwrap().virtual_hosts.is_empty());
    let LeftOutReason::Invalid { problems } = &snapshot.report.left_out[0].reason else {
        panic!("{:?}", snapshot.report.left_out);
    };
    let found: Vec<(&str, &str, &str)> = problems
        .iter()
        .map(|p| (p.field_path.as_str(), p.rule_id, p.message.as_ref()))
        .collect();
    assert_eq!(
        found,
        [(
            "spec.routes[0].backend.port",
            "type",
            "must be an integer from 0 to 65535, got \"eighty\""
        )]
    );
}

/// A spec field this build does not know (written by a newer API version)
/// may change how the object routes (a header a route requires, an order):
/// projected without it, the object could take requests it was written to
/// refuse. It is left out as unsupported, naming the field; an unknown
/// status field changes nothing the edge serves, and is set aside.
#[test]
fn an_unknown_spec_field_leaves_its_object_out_as_unsupported_and_a_status_field_does_not() {
    let read = |text: &str| {
        let limits = aether_manifests::Limits {
            reading: aether_manifests::Reading::Tolerant,
            ..aether_manifests::Limits::default()
        };
        let load = aether_manifests::load_bytes(std::path::Path::new("x.yaml"), text.as_bytes(), &limits);
        assert_eq!(load.errors, [], "{text}");
        load.objects.into_iter().map(|loaded| loaded.object).collect::<Vec<_>>()
    };
    let manifest = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                    spec:\n  hosts: [a.example.com]\n  routes:\n\
                    \x20 - match: {prefix: /, cookies: [{name: canary}]}\n    backend: {service: web, port: 8080}\n";
    let snapshot = project(read(manifest), &ProjectionConfig::default()).unwrap();
    assert!(snapshot.route_configuration().unwrap().virtual_hosts.is_empty());
    let LeftOutReason::Unsupported { problems } = &snapshot.report.left_out[0].reason else {
        panic!("{:?}", snapshot.report.left_out);
    };
    assert_eq!(problems[0].field_path, "spec.routes[0].match.cookies");
    assert_eq!(problems[0].rule_id, aether_manifests::objects::RULE_UNSUPPORTED);

    let with_status = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                       spec:\n  hosts: [a.example.com]\n  routes:\n\
                       \x20 - match: {prefix: /}\n    backend: {service: web, port: 8080}\n\
                       status: {routeCount: 1, servedBy: [edge-a]}\n";
    let snapshot = project(read(with_status), &ProjectionConfig::default()).unwrap();
    assert_eq!(snapshot.report.left_out, []);
    assert_eq!(snapshot.route_configuration().unwrap().virtual_hosts.len(), 1);
}

#[test]
fn projector_follows_changes() {
    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object(
        "a",
        "old",
        Some("2026-01-01T00:00:00Z"),
        &["x.example.com", "y.example.com"],
    ));
    projector.upsert(object("a", "new", Some("2026-02-01T00:00:00Z"), &["x.example.com"]));
    assert_eq!(domains(&projector.snapshot()).len(), 1);
    // The old object gives up x: the new one inherits it.
    projector.upsert(object("a", "old", Some("2026-01-01T00:00:00Z"), &["y.example.com"]));
    assert_eq!(
        domains(&projector.snapshot()),
        [
            ("a/new".to_owned(), vec!["x.example.com".to_owned()]),
            ("a/old".to_owned(), vec!["y.example.com".to_owned()]),
        ]
    );
    assert!(projector.remove(&ObjectKey::new("a", "old")));
    assert!(!projector.remove(&ObjectKey::new("a", "old")));
    assert_eq!(projector.len(), 1);
}

/// The buffer of each virtual host in `snapshot`, by name.
fn buffers(snapshot: &Snapshot) -> std::collections::BTreeMap<String, *const u8> {
    let names = domains(snapshot).into_iter().map(|(name, _)| name);
    names
        .zip(snapshot.virtual_hosts())
        .map(|(name, bytes)| (name, bytes.as_ptr()))
        .collect()
}

#[test]
fn a_virtual_host_whose_object_and_domains_are_unchanged_keeps_its_buffer() {
    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object(
        "team",
        "a",
        Some("2026-01-02T00:00:00Z"),
        &["a.example.com", "shared.example.com"],
    ));
    projector.upsert(object("team", "b", Some("2026-01-03T00:00:00Z"), &["b.example.com"]));
    let first = projector.snapshot();
    // Each virtual host is the route configuration's entry, byte for byte.
    let decoded = first.route_configuration().unwrap();
    for (virtual_host, bytes) in decoded.virtual_hosts.iter().zip(first.virtual_hosts()) {
        assert_eq!(virtual_host.encode_to_vec(), bytes.as_ref());
    }

    // An unrelated object: neither buffer is rebuilt.
    projector.upsert(object("team", "c", Some("2026-01-04T00:00:00Z"), &["c.example.com"]));
    let second = projector.snapshot();
    assert_eq!(buffers(&second)["team/a"], buffers(&first)["team/a"]);
    assert_eq!(buffers(&second)["team/b"], buffers(&first)["team/b"]);

    // An older object takes one of a's hosts: a's domains change, so its
    // virtual host is encoded again; b's stays.
    projector.upsert(object(
        "team",
        "old",
        Some("2025-01-01T00:00:00Z"),
        &["shared.example.com"],
    ));
    let third = projector.snapshot();
    assert_ne!(buffers(&third)["team/a"], buffers(&second)["team/a"]);
    assert_eq!(buffers(&third)["team/b"], buffers(&first)["team/b"]);
    assert_eq!(
        domains(&third)
            .into_iter()
            .find(|(name, _)| name == "team/a")
            .unwrap()
            .1,
        ["a.example.com"]
    );
    assert_eq!(
        third,
        project(
            vec![
                object(
                    "team",
                    "a",
                    Some("2026-01-02T00:00:00Z"),
                    &["a.example.com", "shared.example.com"]
                ),
                object("team", "b", Some("2026-01-03T00:00:00Z"), &["b.example.com"]),
                object("team", "c", Some("2026-01-04T00:00:00Z"), &["c.example.com"]),
                object("team", "old", Some("2025-01-01T00:00:00Z"), &["shared.example.com"]),
            ],
            &ProjectionConfig::default()
        )
        .unwrap()
    );
}

#[test]
fn a_change_of_routes_alone_keeps_the_parts_it_cannot_alter_shared() {
    use std::sync::Arc;

    let mut projector = Projector::new(ProjectionConfig::default());
    projector.upsert(object("team", "a", Some("2026-01-02T00:00:00Z"), &["a.example.com"]));
    projector.upsert(object("team", "b", Some("2026-01-03T00:00:00Z"), &["a.example.com"]));
    let first = projector.snapshot();

    // Another path, the same backend, hosts and creation time: only a's
    // virtual host changes; every other part is the same list, not a copy.
    let mut edited = object("team", "a", Some("2026-01-02T00:00:00Z"), &["a.example.com"]);
    Arc::make_mut(&mut edited.spec).routes[0].r#match.as_mut().unwrap().path =
        Some(aether_api::config::v1::route_match::Path::Prefix("/v2".into()));
    projector.upsert(edited.clone());
    let second = projector.snapshot();
    assert_ne!(second.routes(), first.routes());
    assert!(!second.routes().shares(first.routes()));
    assert!(Arc::ptr_eq(&second.dependencies, &first.dependencies));
    assert!(Arc::ptr_eq(&second.tls_secrets, &first.tls_secrets));
    assert!(Arc::ptr_eq(&second.tls_chains, &first.tls_chains));
    assert!(Arc::ptr_eq(&second.report, &first.report));

    // Another backend: the dependencies are built again, the rest kept.
    Arc::make_mut(&mut edited.spec).routes[0]
        .backend
        .as_mut()
        .unwrap()
        .service = "svc-other".into();
    projector.upsert(edited.clone());
    let third = projector.snapshot();
    assert!(!Arc::ptr_eq(&third.dependencies, &second.dependencies));
    assert_eq!(third.dependencies[0].service, "svc-other");
    assert!(Arc::ptr_eq(&third.report, &second.report));

    // The same object again: every part is shared, the route table too.
    projector.upsert(edited.clone());
    let fourth = projector.snapshot();
    assert_eq!(fourth, third);
    assert!(fourth.routes().shares(third.routes()));
    assert!(Arc::ptr_eq(&fourth.dependencies, &third.dependencies));

    // What a full build of the same objects gives, every time.
    let b = object("team", "b", Some("2026-01-03T00:00:00Z"), &["a.example.com"]);
    assert_eq!(third, snapshot(vec![edited, b]));
}
