//! Cases for the route actions that say where requests go (`backend`,
//! `backends`, `redirect`), on both sides of every bound, and the route
//! rules combining them with the match.

use aether_api::config::v1::{
    HeaderModifier, HttpRoute, RouteRedirect, RouteRetry, RouteRewrite, VirtualHostSpec, WeightedBackend,
    route_redirect,
};

use super::matching::AddCase;

/// The proposal's first route (a `prefix` match) and second (an `exact` one).
pub(super) fn first(spec: &mut VirtualHostSpec) -> &mut HttpRoute {
    &mut spec.routes[0]
}

fn weighted(service: &str, port: u32, weight: u32) -> WeightedBackend {
    WeightedBackend {
        service: service.into(),
        port,
        weight,
    }
}

fn redirect_to(route: &mut HttpRoute, redirect: RouteRedirect) {
    route.backend = None;
    route.redirect = Some(redirect);
}

pub fn cases(spec: &mut AddCase<'_>) {
    destination_cases(spec);
    backends_cases(spec);
    redirect_cases(spec);
}

fn destination_cases(spec: &mut AddCase<'_>) {
    let two = || vec![weighted("svc-a", 8080, 90), weighted("svc-b", 0, 10)];
    spec(
        "backends instead of backend",
        &|s| {
            first(s).backend = None;
            first(s).backends = two();
        },
        &[],
    );
    spec(
        "a redirect instead of backend",
        &|s| redirect_to(first(s), RouteRedirect::default()),
        &[],
    );
    spec(
        "backend and backends",
        &|s| first(s).backends = two(),
        &[("routes[0]", "message.oneof")],
    );
    spec(
        "backend and a redirect",
        &|s| first(s).redirect = Some(RouteRedirect::default()),
        &[("routes[0]", "message.oneof")],
    );
    spec(
        "backend, backends and a redirect",
        &|s| {
            first(s).backends = two();
            first(s).redirect = Some(RouteRedirect::default());
        },
        &[("routes[0]", "message.oneof")],
    );
    spec(
        "no destination: an empty backends list",
        &|s| first(s).backend = None,
        &[("routes[0]", "message.oneof")],
    );
}

fn backends_cases(spec: &mut AddCase<'_>) {
    let with = |list: Vec<WeightedBackend>| {
        move |s: &mut VirtualHostSpec| {
            first(s).backend = None;
            first(s).backends = list.clone();
        }
    };
    let sixteen: Vec<_> = (0..16).map(|i| weighted(&format!("svc-{i}"), 0, 1)).collect();
    let seventeen: Vec<_> = (0..17).map(|i| weighted(&format!("svc-{i}"), 0, 1)).collect();
    spec("16 backends", &with(sixteen), &[]);
    spec(
        "17 backends",
        &with(seventeen),
        &[("routes[0].backends", "repeated.max_items")],
    );
    spec(
        "weights 0 and 1000000",
        &with(vec![weighted("svc-a", 0, 0), weighted("svc-b", 0, 1_000_000)]),
        &[],
    );
    spec(
        "weights totalling 0",
        &with(vec![weighted("svc-a", 0, 0), weighted("svc-b", 0, 0)]),
        &[],
    );
    spec(
        "weight 1000001",
        &with(vec![weighted("svc-a", 0, 1_000_001)]),
        &[("routes[0].backends[0].weight", "uint32.lte")],
    );
    spec(
        "one service on two ports",
        &with(vec![weighted("svc-a", 80, 1), weighted("svc-a", 81, 1)]),
        &[],
    );
    spec(
        "one service and port twice",
        &with(vec![
            weighted("svc-a", 80, 1),
            weighted("svc-b", 0, 1),
            weighted("svc-a", 80, 2),
        ]),
        &[("routes[0].backends", "backends.unique_service_port")],
    );
    spec(
        "a weighted backend without a service, on port 65536",
        &with(vec![weighted("", 65536, 1)]),
        &[
            ("routes[0].backends[0].service", "required"),
            ("routes[0].backends[0].port", "uint32.lte"),
        ],
    );
    spec(
        "a weighted backend's service in upper case",
        &with(vec![weighted("Svc", 65535, 1)]),
        &[("routes[0].backends[0].service", "string.pattern")],
    );
}

fn redirect_cases(spec: &mut AddCase<'_>) {
    let at = |field: &str| format!("routes[0].redirect.{field}");
    spec(
        "a redirect with every part",
        &|s| {
            redirect_to(
                first(s),
                RouteRedirect {
                    scheme: "https".into(),
                    host: "new.example.com".into(),
                    port: 65535,
                    replace: Some(route_redirect::Replace::Prefix("/new".into())),
                    status_code: 308,
                },
            );
        },
        &[],
    );
    for (code, ok) in [
        (301, true),
        (302, true),
        (303, true),
        (307, true),
        (308, true),
        (300, false),
        (304, false),
        (0, true),
    ] {
        let expected: Vec<(String, &'static str)> = if ok {
            vec![]
        } else {
            vec![(at("statusCode"), "uint32.in")]
        };
        let expected: Vec<_> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        spec(
            &format!("redirect status {code}"),
            &|s| {
                redirect_to(
                    first(s),
                    RouteRedirect {
                        status_code: code,
                        ..Default::default()
                    },
                )
            },
            &expected,
        );
    }
    for (scheme, ok) in [("http", true), ("https", true), ("ftp", false), ("HTTP", false)] {
        let path = at("scheme");
        let expected: Vec<_> = if ok { vec![] } else { vec![(path.as_str(), "string.in")] };
        spec(
            &format!("redirect scheme {scheme}"),
            &|s| {
                redirect_to(
                    first(s),
                    RouteRedirect {
                        scheme: scheme.into(),
                        ..Default::default()
                    },
                )
            },
            &expected,
        );
    }
    let host = at("host");
    for (name, value, expected) in [
        ("a 253-character redirect host", super::dns_name(253), vec![]),
        (
            "a 254-character redirect host",
            super::dns_name(254),
            vec!["string.max_len"],
        ),
        (
            "a wildcard redirect host",
            "*.example.com".to_owned(),
            vec!["string.pattern"],
        ),
        (
            "a redirect host with a port",
            "example.com:443".to_owned(),
            vec!["string.pattern"],
        ),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (host.as_str(), r)).collect();
        spec(
            name,
            &|s| {
                redirect_to(
                    first(s),
                    RouteRedirect {
                        host: value.clone(),
                        ..Default::default()
                    },
                )
            },
            &expected,
        );
    }
    spec(
        "redirect port 65536",
        &|s| {
            redirect_to(
                first(s),
                RouteRedirect {
                    port: 65536,
                    ..Default::default()
                },
            )
        },
        &[("routes[0].redirect.port", "uint32.lte")],
    );
    spec(
        "a redirect path with a dot segment and an empty prefix",
        &|s| {
            redirect_to(
                first(s),
                RouteRedirect {
                    replace: Some(route_redirect::Replace::Path("/a/./b".into())),
                    ..Default::default()
                },
            );
            redirect_to(
                &mut s.routes[2],
                RouteRedirect {
                    replace: Some(route_redirect::Replace::Prefix(String::new())),
                    ..Default::default()
                },
            );
        },
        &[
            ("routes[0].redirect.path", "path.no_dot_segment"),
            ("routes[2].redirect.prefix", "string.min_len"),
            ("routes[2].redirect.prefix", "string.pattern"),
        ],
    );
    spec(
        "a path redirect on an exact match",
        &|s| {
            redirect_to(
                &mut s.routes[1],
                RouteRedirect {
                    replace: Some(route_redirect::Replace::Path("/health".into())),
                    ..Default::default()
                },
            )
        },
        &[],
    );
    spec(
        "a prefix redirect on an exact match",
        &|s| {
            redirect_to(
                &mut s.routes[1],
                RouteRedirect {
                    replace: Some(route_redirect::Replace::Prefix("/health".into())),
                    ..Default::default()
                },
            )
        },
        &[("routes[1]", "route.redirect_prefix_needs_prefix_match")],
    );
    spec(
        "a redirect with every action it refuses",
        &|s| {
            let route = first(s);
            redirect_to(route, RouteRedirect::default());
            route.rewrite = Some(RouteRewrite::default());
            route.request_headers = Some(HeaderModifier::default());
            route.response_headers = Some(HeaderModifier::default());
            route.timeout = "1s".into();
            route.retries = Some(RouteRetry::default());
        },
        &[
            ("routes[0]", "route.redirect_no_rewrite"),
            ("routes[0]", "route.redirect_no_request_headers"),
            ("routes[0]", "route.redirect_no_timeout"),
            ("routes[0]", "route.redirect_no_retries"),
        ],
    );
}
