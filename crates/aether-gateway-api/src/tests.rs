use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{
    HeaderMatch, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, RouteOrder, SecretProvider, VirtualHostSpec,
    VirtualHostTls, header_match, query_param_match,
};
use gateway_api::httproutes::{HttpRouteRulesMatchesMethod, HttpRouteRulesMatchesPathType};

use super::*;

mod splitting;

fn route(path: Path, service: &str, port: u32) -> HttpRoute {
    HttpRoute {
        r#match: Some(RouteMatch {
            path: Some(path),
            ..RouteMatch::default()
        }),
        backend: Some(RouteBackend {
            service: service.to_owned(),
            port,
        }),
        ..HttpRoute::default()
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
    let conversion = convert("shop", "api", &spec, Some(&gateway()), &mut Names::default());
    assert_eq!(notes_of(&conversion), []);
    assert_eq!(conversion.routes.len(), 1);
    let route = &conversion.routes[0];
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
    let conversion = convert("shop", "api", &spec, Some(&gateway()), &mut Names::default());
    let json = serde_json::to_value(&conversion.routes[0]).unwrap();
    assert_eq!(json["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(json["kind"], "HTTPRoute");
    assert_eq!(json["spec"]["rules"][0]["matches"][0]["path"]["type"], "PathPrefix");
    assert_eq!(json["spec"]["rules"][0]["backendRefs"][0]["port"], 80);
    let back: HTTPRoute = serde_json::from_value(json).unwrap();
    assert_eq!(back, conversion.routes[0]);
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
            &mut Names::default(),
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
        &mut Names::default(),
    );
    assert_eq!(
        notes_of(&conversion),
        [("spec.routes[0].backend.port", NoteKind::Needs)]
    );
    let rule = &conversion.routes[0].spec.rules.as_ref().unwrap()[0];
    assert_eq!(rule.backend_refs.as_ref().unwrap()[0].port, None);
}

#[test]
fn without_a_gateway_the_route_needs_a_parent() {
    let conversion = convert(
        "ns",
        "a",
        &spec(vec![route(Path::Exact("/x".into()), "web", 80)]),
        None,
        &mut Names::default(),
    );
    assert_eq!(notes_of(&conversion), [("spec", NoteKind::Needs)]);
    assert_eq!(conversion.routes[0].spec.parent_refs, None);
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
        let conversion = convert("ns", "a", &spec, Some(&gateway()), &mut Names::default());
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
        let conversion = convert("ns", "a", &spec(routes), Some(&gateway()), &mut Names::default());
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

fn header(name: &str, value: header_match::Value, invert: bool) -> HeaderMatch {
    HeaderMatch {
        name: name.into(),
        invert,
        value: Some(value),
    }
}

fn query(name: &str, value: query_param_match::Value) -> QueryParamMatch {
    QueryParamMatch {
        name: name.into(),
        value: Some(value),
    }
}

/// The phase 2 proposal's example: every part either carries over or is noted.
#[test]
fn methods_headers_and_query_parameters_carry_over_or_are_noted() {
    let mut routed = route(Path::Regex("/users/[0-9]+".into()), "svc-users", 8080);
    let matched = routed.r#match.as_mut().unwrap();
    matched.methods = vec!["GET".into(), "HEAD".into()];
    matched.headers = vec![
        header("x-env", header_match::Value::Exact("canary".into()), false),
        header("x-debug", header_match::Value::Present(true), true),
        header("authorization", header_match::Value::Prefix("Bearer ".into()), false),
        header("x-present", header_match::Value::Present(true), false),
    ];
    matched.query_params = vec![
        query("version", query_param_match::Value::Exact("2".into())),
        query("q", query_param_match::Value::Regex("[a-z]+".into())),
        query("a;b", query_param_match::Value::Present(true)),
    ];
    let conversion = convert("ns", "a", &spec(vec![routed]), Some(&gateway()), &mut Names::default());
    let matches = conversion.routes[0].spec.rules.as_ref().unwrap()[0]
        .matches
        .clone()
        .unwrap();
    // One match per method, each with the path, headers and parameters.
    let methods: Vec<_> = matches.iter().map(|matched| matched.method.clone()).collect();
    assert_eq!(
        methods,
        [
            Some(HttpRouteRulesMatchesMethod::Get),
            Some(HttpRouteRulesMatchesMethod::Head)
        ]
    );
    let json = serde_json::to_value(&matches[1]).unwrap();
    assert_eq!(
        json["path"],
        serde_json::json!({"type": "RegularExpression", "value": "/users/[0-9]+"})
    );
    assert_eq!(
        json["headers"],
        serde_json::json!([
            {"name": "x-env", "type": "Exact", "value": "canary"},
            {"name": "authorization", "type": "RegularExpression", "value": "Bearer .*"},
            {"name": "x-present", "type": "RegularExpression", "value": ".*"}
        ])
    );
    assert_eq!(
        json["queryParams"],
        serde_json::json!([
            {"name": "version", "type": "Exact", "value": "2"},
            {"name": "q", "type": "RegularExpression", "value": "[a-z]+"},
            {"name": "a;b", "type": "RegularExpression", "value": ".*"}
        ])
    );
    assert_eq!(
        notes_of(&conversion),
        [
            ("spec.routes[0].match.regex", NoteKind::Differs),
            ("spec.routes[0].match.headers[1].invert", NoteKind::Dropped),
            ("spec.routes[0].match.headers[2].prefix", NoteKind::Differs),
            ("spec.routes[0].match.headers[3].present", NoteKind::Differs),
            ("spec.routes[0].match.queryParams[1].regex", NoteKind::Differs),
            ("spec.routes[0].match.queryParams[2].name", NoteKind::Needs),
            ("spec.routes[0].match.queryParams[2].present", NoteKind::Differs),
        ]
    );
}

/// A header prefix becomes an expression matching exactly what starts with
/// it: its metacharacters escaped.
#[test]
fn a_header_prefix_is_escaped_into_its_expression() {
    assert_eq!(matches::prefix_regex("a.b*(c)"), r"a\.b\*\(c\).*");
    for prefix in ["Bearer ", "v1.2+x", "a|b", "[x]{2}", "$^\\"] {
        let expression = matches::prefix_regex(prefix);
        let literal = expression.strip_suffix(".*").unwrap();
        let parsed = regex_syntax::Parser::new().parse(literal).unwrap();
        assert_eq!(
            parsed,
            regex_syntax::hir::Hir::literal(prefix.as_bytes()),
            "{prefix}: {expression}"
        );
    }
}

/// With SPECIFICITY the precedence is Gateway API's: no reordering note,
/// but one on the rank of regular expressions, in either order.
#[test]
fn specificity_is_gateway_precedence_but_for_regular_expressions() {
    let mut with_order = spec(vec![
        route(Path::Prefix("/".into()), "web", 80),
        route(Path::Exact("/healthz".into()), "health", 80),
    ]);
    with_order.route_order = RouteOrder::Specificity as i32;
    assert_eq!(
        notes_of(&convert(
            "ns",
            "a",
            &with_order,
            Some(&gateway()),
            &mut Names::default()
        )),
        [] as [(&str, NoteKind); 0]
    );
    with_order.routes.push(route(Path::Regex("/x.*".into()), "x", 80));
    let conversion = convert("ns", "a", &with_order, Some(&gateway()), &mut Names::default());
    assert!(notes_of(&conversion).contains(&("spec.routeOrder", NoteKind::Differs)));
    // Listed, the path's own note says its rank is a Gateway's choice.
    with_order.route_order = RouteOrder::Listed as i32;
    let conversion = convert("ns", "a", &with_order, Some(&gateway()), &mut Names::default());
    let note = conversion
        .notes
        .iter()
        .find(|note| note.path == "spec.routes[2].match.regex")
        .unwrap();
    assert!(note.message.contains("rank"), "{}", note.message);
    assert!(!notes_of(&conversion).contains(&("spec.routeOrder", NoteKind::Differs)));
}

#[test]
fn a_full_path_rewrite_and_a_timeout_carry_over_whole() {
    use aether_api::config::v1::{RouteRewrite, route_rewrite};
    let mut one = route(Path::Exact("/a".into()), "svc", 80);
    one.rewrite = Some(RouteRewrite {
        replace: Some(route_rewrite::Replace::Path("/b".into())),
        host: String::new(),
    });
    one.timeout = "0s".into();
    let conversion = convert("shop", "api", &spec(vec![one]), Some(&gateway()), &mut Names::default());
    assert_eq!(notes_of(&conversion), []);
    let json = serde_json::to_value(&conversion.routes[0]).unwrap();
    let rule = &json["spec"]["rules"][0];
    assert_eq!(
        rule["filters"],
        serde_json::json!([{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/b"}}}])
    );
    assert_eq!(rule["timeouts"], serde_json::json!({"request": "0s"}));
}

#[test]
fn a_weight_of_0_is_written_and_redirect_codes_beyond_301_and_302_are_noted() {
    use aether_api::config::v1::{RouteRedirect, WeightedBackend};
    let mut split = route(Path::Prefix("/".into()), "svc", 80);
    split.backend = None;
    split.backends = vec![WeightedBackend {
        service: "svc-a".into(),
        port: 80,
        weight: 0,
    }];
    let mut away = route(Path::Exact("/old".into()), "svc", 80);
    away.backend = None;
    away.redirect = Some(RouteRedirect {
        status_code: 308,
        ..RouteRedirect::default()
    });
    let conversion = convert(
        "shop",
        "api",
        &spec(vec![away, split]),
        Some(&gateway()),
        &mut Names::default(),
    );
    assert_eq!(
        notes_of(&conversion),
        [("spec.routes[0].redirect.statusCode", NoteKind::Differs)]
    );
    let json = serde_json::to_value(&conversion.routes[0]).unwrap();
    let rules = &json["spec"]["rules"];
    assert_eq!(
        rules[1]["backendRefs"],
        serde_json::json!([{"name": "svc-a", "port": 80, "weight": 0}])
    );
    assert_eq!(
        rules[0]["filters"],
        serde_json::json!([{"type": "RequestRedirect", "requestRedirect": {"statusCode": 308}}])
    );
}
