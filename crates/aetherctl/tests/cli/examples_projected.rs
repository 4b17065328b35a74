//! The checked-in examples and manifest text, read by the manifest reader
//! and projected: where the reader and the projection meet.

use std::time::Duration;

use aether_manifests::parse_manifests;
use aether_projection::envoy_route::{RouteConfiguration, route, route_action, route_match};
use aether_projection::{Format, LeftOutReason, ProjectionConfig, RetryConfig, Snapshot, VirtualHostObject, project};
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage};
use serde_json::{Value, json};

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
        let input = aether_manifests::Input::Bytes {
            name: std::path::Path::new("x.yaml"),
            bytes: text.as_bytes(),
        };
        let load = aether_manifests::read(input, &limits);
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
    assert_eq!(problems[0].rule_id, aether_api::object::RULE_UNSUPPORTED);

    let with_status = "apiVersion: config.aether.io/v1\nkind: VirtualHost\nmetadata: {name: a, namespace: ns}\n\
                       spec:\n  hosts: [a.example.com]\n  routes:\n\
                       \x20 - match: {prefix: /}\n    backend: {service: web, port: 8080}\n\
                       status: {routeCount: 1, servedBy: [edge-a]}\n";
    let snapshot = project(read(with_status), &ProjectionConfig::default()).unwrap();
    assert_eq!(snapshot.report.left_out, []);
    assert_eq!(snapshot.route_configuration().unwrap().virtual_hosts.len(), 1);
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
        aether_edge_envoy::descriptors::route_configuration(),
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
            aether_edge_envoy::descriptors::route_configuration(),
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
