use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostTls};
use gateway_api::httproutes::HttpRouteRulesMatchesPathType;

use super::*;

fn route(path: Path, service: &str, port: u32) -> HttpRoute {
    HttpRoute {
        r#match: Some(RouteMatch { path: Some(path) }),
        backend: Some(RouteBackend {
            service: service.to_owned(),
            port,
        }),
    }
}

fn spec(routes: Vec<HttpRoute>) -> VirtualHostSpec {
    VirtualHostSpec {
        hosts: vec!["api.example.com".to_owned(), "*.example.org".to_owned()],
        routes,
        ..VirtualHostSpec::default()
    }
}

fn gateway() -> Gateway {
    Gateway {
        namespace: Some("edge".to_owned()),
        name: "public".to_owned(),
        section_name: None,
    }
}

/// The notes other than the one every conversion has (hosts).
fn notes_of(conversion: &Conversion) -> Vec<(&str, NoteKind)> {
    conversion
        .notes
        .iter()
        .filter(|note| note.path != "spec.hosts")
        .map(|note| (note.path.as_str(), note.kind))
        .collect()
}

#[test]
fn an_exact_route_with_a_port_carries_over_whole() {
    let spec = spec(vec![route(Path::Exact("/healthz".into()), "svc-health", 8080)]);
    let conversion = convert("shop", "api", &spec, Some(&gateway()));
    assert_eq!(notes_of(&conversion), []);
    let route = &conversion.route;
    assert_eq!(route.metadata.name.as_deref(), Some("api"));
    assert_eq!(route.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(route.spec.hostnames, Some(spec.hosts.clone()));
    let parent = &route.spec.parent_refs.as_ref().unwrap()[0];
    assert_eq!(
        (parent.namespace.as_deref(), parent.name.as_str()),
        (Some("edge"), "public")
    );
    let rule = &route.spec.rules.as_ref().unwrap()[0];
    let path = rule.matches.as_ref().unwrap()[0].path.as_ref().unwrap();
    assert_eq!(path.r#type, Some(HttpRouteRulesMatchesPathType::Exact));
    assert_eq!(path.value.as_deref(), Some("/healthz"));
    let backend = &rule.backend_refs.as_ref().unwrap()[0];
    assert_eq!((backend.name.as_str(), backend.port), ("svc-health", Some(8080)));
}

#[test]
fn the_output_is_an_httproute_as_kubernetes_reads_it() {
    let spec = spec(vec![route(Path::Prefix("/".into()), "svc-web", 80)]);
    let conversion = convert("shop", "api", &spec, Some(&gateway()));
    let json = serde_json::to_value(&conversion.route).unwrap();
    assert_eq!(json["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(json["kind"], "HTTPRoute");
    assert_eq!(json["spec"]["rules"][0]["matches"][0]["path"]["type"], "PathPrefix");
    assert_eq!(json["spec"]["rules"][0]["backendRefs"][0]["port"], 80);
    let back: HTTPRoute = serde_json::from_value(json).unwrap();
    assert_eq!(back, conversion.route);
}

/// Only `/` means the same as a character-wise prefix.
#[test]
fn prefixes_other_than_the_root_are_noted_as_segment_wise() {
    let table = [
        ("/", None),
        ("/users", Some("does not match /usersx")),
        ("/api/", Some("also matches /api,")),
    ];
    for (prefix, expected) in table {
        let conversion = convert(
            "ns",
            "a",
            &spec(vec![route(Path::Prefix(prefix.into()), "web", 80)]),
            Some(&gateway()),
        );
        let note = conversion
            .notes
            .iter()
            .find(|note| note.path == "spec.routes[0].match.prefix");
        match expected {
            None => assert_eq!(note, None, "{prefix}"),
            Some(text) => {
                let note = note.unwrap_or_else(|| panic!("no note for {prefix}"));
                assert_eq!(note.kind, NoteKind::Differs);
                assert!(note.message.contains(text), "{prefix}: {}", note.message);
            }
        }
    }
}

#[test]
fn a_backend_without_a_port_needs_one() {
    let conversion = convert(
        "ns",
        "a",
        &spec(vec![route(Path::Exact("/x".into()), "web", 0)]),
        Some(&gateway()),
    );
    assert_eq!(
        notes_of(&conversion),
        [("spec.routes[0].backend.port", NoteKind::Needs)]
    );
    let rule = &conversion.route.spec.rules.as_ref().unwrap()[0];
    assert_eq!(rule.backend_refs.as_ref().unwrap()[0].port, None);
}

#[test]
fn without_a_gateway_the_route_needs_a_parent() {
    let conversion = convert("ns", "a", &spec(vec![route(Path::Exact("/x".into()), "web", 80)]), None);
    assert_eq!(notes_of(&conversion), [("spec", NoteKind::Needs)]);
    assert_eq!(conversion.route.spec.parent_refs, None);
}

#[test]
fn tls_is_left_to_the_gateway_naming_the_secret() {
    let mut spec = spec(vec![route(Path::Exact("/x".into()), "web", 80)]);
    for (provider, aws) in [
        (SecretProvider::Kubernetes, false),
        (SecretProvider::AwsSecretsManager, true),
    ] {
        spec.tls = Some(VirtualHostTls {
            secret_name: "api-tls".into(),
            provider: provider as i32,
        });
        let conversion = convert("ns", "a", &spec, Some(&gateway()));
        let note = conversion.notes.iter().find(|note| note.path == "spec.tls").unwrap();
        assert_eq!(note.kind, NoteKind::Dropped);
        assert!(
            note.message.contains("certificateRefs: [{name: api-tls}]"),
            "{}",
            note.message
        );
        assert_eq!(note.message.contains("AWS Secrets Manager"), aws, "{}", note.message);
    }
}

/// Listed order and Gateway API's precedence differ only where one request
/// can match both routes.
#[test]
fn a_reordering_is_noted_only_for_routes_a_request_can_both_match() {
    let ordered = |paths: Vec<Path>| {
        let routes = paths.into_iter().map(|path| route(path, "web", 80)).collect();
        let conversion = convert("ns", "a", &spec(routes), Some(&gateway()));
        conversion
            .notes
            .iter()
            .find(|note| note.path == "spec.routes")
            .map(|note| note.message.clone())
    };
    // `/` listed first takes /healthz; in Gateway API the exact route does.
    let note = ordered(vec![Path::Prefix("/".into()), Path::Exact("/healthz".into())]).unwrap();
    assert!(note.contains("routes[1] comes before routes[0]"), "{note}");
    // A shorter prefix listed first takes what the longer one would.
    let note = ordered(vec![Path::Prefix("/a".into()), Path::Prefix("/a/b".into())]).unwrap();
    assert!(note.contains("routes[1] comes before routes[0]"), "{note}");
    // Already in precedence order.
    assert_eq!(
        ordered(vec![Path::Exact("/healthz".into()), Path::Prefix("/".into())]),
        None
    );
    // Reordered, but no request matches both.
    assert_eq!(ordered(vec![Path::Prefix("/a".into()), Path::Exact("/b".into())]), None);
    assert_eq!(
        ordered(vec![Path::Prefix("/a".into()), Path::Prefix("/bb".into())]),
        None
    );
}
