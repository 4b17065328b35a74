//! Phase 2 matching in the projection: regex paths, methods, headers and
//! query parameters as Envoy's matchers; `routeOrder: SPECIFICITY`; routes
//! with a regex Envoy would refuse left out and reported.

use aether_edge_limits::{RULE_RE2, re2, regex_problems};
use aether_projection::{Format, ProjectionConfig, Projector, Snapshot, VirtualHostObject, project};
use aether_testing::objects;
use serde_json::{Value, json};

fn object(name: &str, spec: Value) -> VirtualHostObject {
    objects::object("default", name)
        .created("2026-01-01T00:00:00Z")
        .spec(spec)
        .build()
}

/// Both builders, which must agree.
fn both(objects: Vec<VirtualHostObject>) -> Snapshot {
    let full = project(objects.clone(), &ProjectionConfig::default()).expect("projects");
    let mut projector = Projector::new(ProjectionConfig::default());
    for object in objects {
        projector.upsert(object);
    }
    assert_eq!(
        projector.snapshot(),
        full,
        "the incremental build differs from the full one"
    );
    full
}

fn json_of(snapshot: &Snapshot) -> Value {
    serde_json::from_slice(&snapshot.render(Format::Json).expect("renders")).expect("JSON")
}

fn routes(snapshot: &Snapshot) -> Vec<Value> {
    json_of(snapshot)["routeConfiguration"]["virtualHosts"][0]["routes"]
        .as_array()
        .expect("routes")
        .iter()
        .map(|route| route["match"].clone())
        .collect()
}

fn route(r#match: Value, service: &str) -> Value {
    json!({"match": r#match, "backend": {"service": service}})
}

#[test]
fn every_match_field_becomes_envoys_matcher() {
    let snapshot = both(vec![object(
        "all",
        json!({"hosts": ["a.test"], "routes": [
            route(json!({"regex": "/users/[0-9]+", "methods": ["GET"]}), "svc-a"),
            route(json!({"prefix": "/", "methods": ["GET", "HEAD"],
                "headers": [
                    {"name": "x-env", "exact": "canary"},
                    {"name": "authorization", "prefix": "Bearer "},
                    {"name": "x-version", "regex": "v[0-9]+"},
                    {"name": "x-debug", "present": true, "invert": true},
                    {"name": "x-tier", "exact": "gold", "invert": true}
                ],
                "queryParams": [
                    {"name": "version", "exact": "2"},
                    {"name": "id", "regex": "[0-9]{1,8}"},
                    {"name": "preview", "present": true}
                ]}), "svc-b"),
        ]}),
    )]);
    let routes = routes(&snapshot);
    assert_eq!(
        routes[0],
        json!({"safeRegex": {"regex": "/users/[0-9]+"},
               "headers": [{"name": ":method", "stringMatch": {"exact": "GET"}}]})
    );
    assert_eq!(
        routes[1],
        json!({"prefix": "/",
        "headers": [
            {"name": ":method", "stringMatch": {"safeRegex": {"regex": "GET|HEAD"}}},
            {"name": "x-env", "stringMatch": {"exact": "canary"}},
            {"name": "authorization", "stringMatch": {"prefix": "Bearer "}},
            {"name": "x-version", "stringMatch": {"safeRegex": {"regex": "v[0-9]+"}}},
            {"name": "x-debug", "presentMatch": true, "invertMatch": true},
            {"name": "x-tier", "stringMatch": {"exact": "gold"}, "invertMatch": true}
        ],
        "queryParameters": [
            {"name": "version", "stringMatch": {"exact": "2"}},
            {"name": "id", "stringMatch": {"safeRegex": {"regex": "[0-9]{1,8}"}}},
            {"name": "preview", "presentMatch": true}
        ]})
    );
}

#[test]
fn all_nine_methods_make_a_regex_envoy_compiles() {
    let methods = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    let bound = re2::check(&methods.join("|")).expect("the guard accepts the methods' alternation");
    assert!(bound <= re2::ENVOY_MAX_PROGRAM_SIZE);
}

#[test]
fn specificity_orders_exact_regex_prefixes_by_length_then_methods_headers_query_params() {
    let listed = json!([
        route(json!({"prefix": "/"}), "root"),
        route(json!({"prefix": "/api"}), "api"),
        route(
            json!({"prefix": "/api", "queryParams": [{"name": "q", "present": true}]}),
            "api-query"
        ),
        route(
            json!({"prefix": "/api", "headers": [{"name": "x-a", "present": true}]}),
            "api-header"
        ),
        route(
            json!({"prefix": "/api", "headers": [{"name": "x-a", "present": true}, {"name": "x-b", "present": true}]}),
            "api-2-headers"
        ),
        route(json!({"prefix": "/api", "methods": ["POST"]}), "api-post"),
        route(json!({"regex": "/api/.*"}), "regex-1"),
        route(json!({"prefix": "/api/v1"}), "api-v1"),
        route(json!({"exact": "/api/health"}), "exact-1"),
        route(json!({"regex": "/x"}), "regex-2"),
        route(json!({"exact": "/"}), "exact-2"),
        // Written /%7Eu: the form Envoy compares is /~u, shorter than /api.
        route(json!({"prefix": "/%7Eu"}), "tilde"),
    ]);
    let order = |route_order: Option<&str>| -> Vec<String> {
        let mut spec = json!({"hosts": ["a.test"], "routes": listed});
        if let Some(route_order) = route_order {
            spec["routeOrder"] = json!(route_order);
        }
        let snapshot = both(vec![object("o", spec)]);
        json_of(&snapshot)["routeConfiguration"]["virtualHosts"][0]["routes"]
            .as_array()
            .expect("routes")
            .iter()
            .map(|route| route["route"]["cluster"].as_str().expect("a cluster").to_owned())
            .collect()
    };
    let as_listed: Vec<String> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|route| route["backend"]["service"].as_str().expect("a service").to_owned())
        .collect();
    assert_eq!(order(None), as_listed);
    assert_eq!(order(Some("LISTED")), as_listed);
    assert_eq!(
        order(Some("SPECIFICITY")),
        [
            "exact-1",
            "exact-2",
            "regex-1",
            "regex-2",
            "api-v1",
            "api-post",
            "api-2-headers",
            "api-header",
            "api-query",
            "api",
            "tilde",
            "root"
        ]
    );
}

#[test]
fn routes_with_a_regex_envoy_would_refuse_are_left_out_and_reported() {
    let spec = json!({"hosts": ["a.test"], "routes": [
        route(json!({"prefix": "/ok"}), "ok"),
        route(json!({"regex": "/[a-z]{200}"}), "too-large"),
        route(json!({"prefix": "/", "headers": [{"name": "x-a", "regex": "\\p{Greek}"}],
            "queryParams": [{"name": "q", "regex": "a**"}]}), "unsupported"),
        route(json!({"exact": "/last"}), "last"),
    ]});
    let problems = regex_problems(&object("o", spec.clone()).spec);
    let paths: Vec<&str> = problems.iter().map(|p| p.field_path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.routes[1].match.regex",
            "spec.routes[2].match.headers[0].regex",
            "spec.routes[2].match.queryParams[0].regex"
        ]
    );
    assert!(problems.iter().all(|p| p.rule_id == RULE_RE2));
    assert!(
        problems[0].message.contains("Envoy refuses programs above 100"),
        "{}",
        problems[0].message
    );
    assert!(problems[1].message.contains("Unicode class"), "{}", problems[1].message);

    let snapshot = both(vec![
        object("o", spec),
        object(
            "fine",
            json!({"hosts": ["b.test"], "routes": [route(json!({"regex": "/b+"}), "b")]}),
        ),
    ]);
    let json = json_of(&snapshot);
    let clusters: Vec<&str> = json["routeConfiguration"]["virtualHosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .flat_map(|host| host["routes"].as_array().expect("routes").iter())
        .map(|route| route["route"]["cluster"].as_str().expect("a cluster"))
        .collect();
    assert_eq!(clusters, ["b", "ok", "last"]);
    assert!(snapshot.report.left_out.is_empty());
    assert_eq!(snapshot.report.routes_left_out.len(), 1);
    assert_eq!(snapshot.report.routes_left_out[0].object.to_string(), "default/o");
    let left_out: Vec<(&str, &str, &str)> = snapshot.report.routes_left_out[0]
        .problems
        .iter()
        .map(|p| (p.field_path.as_str(), p.rule_id, p.message.as_ref()))
        .collect();
    let refused: Vec<(&str, &str, &str)> = problems
        .iter()
        .map(|p| (p.field_path.as_str(), p.rule_id, p.message.as_ref()))
        .collect();
    assert_eq!(left_out, refused);
    assert_eq!(json["report"]["routesLeftOut"][0]["problems"][0]["ruleId"], "re2");
}

#[test]
fn objects_without_the_new_fields_project_as_before() {
    let snapshot = both(vec![object(
        "v1",
        json!({"hosts": ["a.test"], "routes": [route(json!({"prefix": "/a"}), "a"), route(json!({"exact": "/b"}), "b")]}),
    )]);
    assert_eq!(routes(&snapshot), [json!({"prefix": "/a"}), json!({"path": "/b"})]);
    // No empty list for the report's new part.
    assert!(json_of(&snapshot)["report"].get("routesLeftOut").is_none());
}

/// The concrete paths (`spec.routes[0].match.regex`) of every value at
/// `place` (`routes[].match.regex`, as the rules model writes places) in
/// `value`.
fn paths_at(value: &Value, place: &str, at: String, out: &mut Vec<String>) {
    let Some((step, rest)) = place.split_once('.').map_or(Some((place, "")), Some) else {
        return;
    };
    let (name, list) = step.strip_suffix("[]").map_or((step, false), |name| (name, true));
    let Some(child) = value.get(name) else {
        return;
    };
    let at = format!("{at}.{name}");
    let children: Vec<(String, &Value)> = match child.as_array().filter(|_| list) {
        Some(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| (format!("{at}[{i}]"), item))
            .collect(),
        None => vec![(at, child)],
    };
    for (at, child) in children {
        match rest {
            "" => out.push(at),
            rest => paths_at(child, rest, at, out),
        }
    }
}

#[test]
fn the_guard_checks_every_place_the_proto_marks_as_a_regex() {
    // Refused by RE2's parser (repetitions nested past 1000), whatever it is
    // written at.
    let refused = json!("(?:(?:a{2}){501}){0}x");
    let places = aether_testing::drawn::generator()
        .api()
        .re2_places(aether_testing::drawn::ROOT);
    assert!(!places.is_empty(), "the proto marks its regex fields");
    for place in &places {
        let mut generator = aether_testing::drawn::generator();
        generator
            .narrow(place, std::slice::from_ref(&refused))
            .expect("a regex place");
        let mut rng = aether_specgen::Rng::new(7);
        let mut seen = 0;
        for _ in 0..40 {
            let spec = aether_testing::drawn::valid(&generator, &mut rng);
            let mut expected = Vec::new();
            paths_at(
                &serde_json::to_value(&spec).expect("a spec"),
                place,
                "spec".to_owned(),
                &mut expected,
            );
            seen += expected.len();
            // Other places hold drawn regexes, some refused too.
            let problems: Vec<String> = regex_problems(&spec).into_iter().map(|p| p.field_path).collect();
            for path in &expected {
                assert!(problems.contains(path), "{path} not checked: {problems:?}");
            }
        }
        assert!(seen > 0, "no drawn spec held {place}");
    }
}
