//! Cases for the route actions: where requests go (`backend`, `backends`,
//! `redirect`), `rewrite`, header changes, `timeout` and `retries`, on both
//! sides of every bound, and the route rules combining them with the match.

use aether_api::config::v1::{
    HeaderModifier, HeaderValue, HttpRoute, RouteRedirect, RouteRetry, RouteRewrite, VirtualHostSpec, WeightedBackend,
    route_match::Path, route_redirect, route_rewrite,
};

use super::matching::AddCase;

/// The proposal's first route (a `prefix` match) and second (an `exact` one).
fn first(spec: &mut VirtualHostSpec) -> &mut HttpRoute {
    &mut spec.routes[0]
}

fn weighted(service: &str, port: u32, weight: u32) -> WeightedBackend {
    WeightedBackend {
        service: service.into(),
        port,
        weight,
    }
}

fn header(name: &str, value: &str) -> HeaderValue {
    HeaderValue {
        name: name.into(),
        value: value.into(),
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
    rewrite_cases(spec);
    header_cases(spec);
    timeout_and_retry_cases(spec);
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

fn rewrite_cases(spec: &mut AddCase<'_>) {
    let rewrite = |route: &mut HttpRoute, replace: Option<route_rewrite::Replace>, host: &str| {
        route.rewrite = Some(RouteRewrite {
            replace,
            host: host.into(),
        });
    };
    spec(
        "a prefix and host rewrite on a prefix match",
        &|s| {
            rewrite(
                first(s),
                Some(route_rewrite::Replace::Prefix("/".into())),
                "api.internal",
            )
        },
        &[],
    );
    spec(
        "a full-path rewrite on an exact match, and on a regex match",
        &|s| {
            rewrite(
                &mut s.routes[1],
                Some(route_rewrite::Replace::Path("/status".into())),
                "",
            );
            s.routes[2].r#match.as_mut().unwrap().path = Some(Path::Regex("/.*".into()));
            rewrite(&mut s.routes[2], Some(route_rewrite::Replace::Path("/".into())), "");
        },
        &[],
    );
    spec(
        "a prefix rewrite on an exact match",
        &|s| {
            rewrite(
                &mut s.routes[1],
                Some(route_rewrite::Replace::Prefix("/status".into())),
                "",
            )
        },
        &[("routes[1]", "route.rewrite_prefix_needs_prefix_match")],
    );
    spec(
        "a prefix rewrite on a regex match",
        &|s| {
            s.routes[2].r#match.as_mut().unwrap().path = Some(Path::Regex("/.*".into()));
            rewrite(&mut s.routes[2], Some(route_rewrite::Replace::Prefix("/".into())), "");
        },
        &[("routes[2]", "route.rewrite_prefix_needs_prefix_match")],
    );
    spec(
        "a 1024-character rewrite path",
        &|s| {
            rewrite(
                first(s),
                Some(route_rewrite::Replace::Path(format!("/{}", "a".repeat(1023)))),
                "",
            )
        },
        &[],
    );
    spec(
        "a 1025-character rewrite prefix, an encoded slash and an upper-case host",
        &|s| {
            rewrite(
                first(s),
                Some(route_rewrite::Replace::Prefix(format!("/{}", "a".repeat(1024)))),
                "API.internal",
            );
            rewrite(
                &mut s.routes[1],
                Some(route_rewrite::Replace::Path("/a%2fb".into())),
                "",
            );
        },
        &[
            ("routes[0].rewrite.prefix", "string.max_len"),
            ("routes[0].rewrite.host", "string.pattern"),
            ("routes[1].rewrite.path", "path.no_encoded_slash"),
        ],
    );
}

fn header_cases(spec: &mut AddCase<'_>) {
    let modify = |set: Vec<HeaderValue>, add: Vec<HeaderValue>, remove: Vec<&str>| {
        let remove: Vec<String> = remove.iter().map(|r| (*r).to_owned()).collect();
        move |s: &mut VirtualHostSpec| {
            let modifier = HeaderModifier {
                set: set.clone(),
                add: add.clone(),
                remove: remove.clone(),
            };
            first(s).request_headers = Some(modifier.clone());
            s.routes[1].response_headers = Some(modifier);
        }
    };
    let sixteen: Vec<_> = (0..16).map(|i| header(&format!("x-h{i}"), "v")).collect();
    let seventeen: Vec<_> = (0..17).map(|i| header(&format!("x-h{i}"), "v")).collect();
    let names: Vec<String> = (0..16).map(|i| format!("x-r{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let long_name = format!("x-{}", "a".repeat(254));
    let long_value = "v".repeat(4096);
    spec(
        "16 headers set, added and removed, at every bound, on both sides",
        &modify(
            [vec![header(&long_name, &long_value)], sixteen[1..].to_vec()].concat(),
            sixteen.clone(),
            names.clone(),
        ),
        &[],
    );
    spec(
        "17 headers set, added and removed",
        &modify(seventeen.clone(), seventeen, [names.clone(), vec!["x-r16"]].concat()),
        &[
            ("routes[0].requestHeaders.set", "repeated.max_items"),
            ("routes[0].requestHeaders.add", "repeated.max_items"),
            ("routes[0].requestHeaders.remove", "repeated.max_items"),
            ("routes[1].responseHeaders.set", "repeated.max_items"),
            ("routes[1].responseHeaders.add", "repeated.max_items"),
            ("routes[1].responseHeaders.remove", "repeated.max_items"),
        ],
    );
    spec(
        "a name twice in set, add and remove",
        &modify(
            vec![header("x-a", "1"), header("x-a", "2")],
            vec![header("x-b", "1"), header("x-b", "1")],
            vec!["x-c", "x-c"],
        ),
        &[
            ("routes[0].requestHeaders.set", "headers.unique_name"),
            ("routes[0].requestHeaders.add", "headers.unique_name"),
            ("routes[0].requestHeaders.remove", "repeated.unique"),
            ("routes[1].responseHeaders.set", "headers.unique_name"),
            ("routes[1].responseHeaders.add", "headers.unique_name"),
            ("routes[1].responseHeaders.remove", "repeated.unique"),
        ],
    );
    for name in [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "te",
        "trailer",
        "content-length",
    ] {
        spec(
            &format!("header {name} set and removed"),
            &modify(vec![header(name, "v")], vec![], vec![name]),
            &[
                ("routes[0].requestHeaders.set[0].name", "string.not_in"),
                ("routes[0].requestHeaders.remove[0]", "string.not_in"),
                ("routes[1].responseHeaders.set[0].name", "string.not_in"),
                ("routes[1].responseHeaders.remove[0]", "string.not_in"),
            ],
        );
    }
    let too_long = format!("x-{}", "a".repeat(255));
    spec(
        "header names: pseudo, upper case, 257 characters, missing",
        &modify(
            vec![header(":authority", "v"), header("X-Team", "v")],
            vec![header(&too_long, "v"), header("", "v")],
            vec![":path"],
        ),
        &[
            ("routes[0].requestHeaders.set[0].name", "string.pattern"),
            ("routes[0].requestHeaders.set[1].name", "string.pattern"),
            ("routes[0].requestHeaders.add[0].name", "string.max_len"),
            ("routes[0].requestHeaders.add[1].name", "required"),
            ("routes[0].requestHeaders.remove[0]", "string.pattern"),
            ("routes[1].responseHeaders.set[0].name", "string.pattern"),
            ("routes[1].responseHeaders.set[1].name", "string.pattern"),
            ("routes[1].responseHeaders.add[0].name", "string.max_len"),
            ("routes[1].responseHeaders.add[1].name", "required"),
            ("routes[1].responseHeaders.remove[0]", "string.pattern"),
        ],
    );
    let too_long_value = "v".repeat(4097);
    spec(
        "header values: tabs inside, missing, 4097 characters, a line break, a trailing space",
        &modify(
            vec![header("x-a", "a\t b"), header("x-b", "")],
            vec![
                header("x-c", &too_long_value),
                header("x-d", "a\r\nb"),
                header("x-e", "a "),
            ],
            vec![],
        ),
        &[
            ("routes[0].requestHeaders.set[1].value", "required"),
            ("routes[0].requestHeaders.add[0].value", "string.max_len"),
            ("routes[0].requestHeaders.add[1].value", "string.pattern"),
            ("routes[0].requestHeaders.add[2].value", "string.pattern"),
            ("routes[1].responseHeaders.set[1].value", "required"),
            ("routes[1].responseHeaders.add[0].value", "string.max_len"),
            ("routes[1].responseHeaders.add[1].value", "string.pattern"),
            ("routes[1].responseHeaders.add[2].value", "string.pattern"),
        ],
    );
}

fn timeout_and_retry_cases(spec: &mut AddCase<'_>) {
    for (timeout, expected) in [
        ("15s", vec![]),
        ("0s", vec![]),
        ("1h30m", vec![]),
        ("500ms", vec![]),
        ("99999h99999m99999s99999ms", vec![]),
        (
            "99999h99999m99999s99999ms999h",
            vec!["string.max_len", "string.pattern"],
        ),
        ("1.5s", vec!["string.pattern"]),
        ("15", vec!["string.pattern"]),
        ("-1s", vec!["string.pattern"]),
        ("1h1m1s1ms1h", vec!["string.pattern"]),
        ("100000s", vec!["string.pattern"]),
        ("10us", vec!["string.pattern"]),
        ("1m 30s", vec!["string.pattern"]),
    ] {
        let timeout_expected: Vec<_> = expected.iter().map(|r| ("routes[0].timeout", *r)).collect();
        spec(
            &format!("timeout {timeout:?}"),
            &|s| first(s).timeout = timeout.into(),
            &timeout_expected,
        );
        let retry_expected: Vec<_> = expected
            .iter()
            .map(|r| ("routes[0].retries.perTryTimeout", *r))
            .collect();
        spec(
            &format!("perTryTimeout {timeout:?}"),
            &|s| {
                first(s).retries = Some(RouteRetry {
                    attempts: 1,
                    per_try_timeout: timeout.into(),
                    retry_on: vec![],
                })
            },
            &retry_expected,
        );
    }
    let all: Vec<String> = [
        "5xx",
        "gateway-error",
        "reset",
        "reset-before-request",
        "connect-failure",
        "refused-stream",
        "retriable-4xx",
    ]
    .map(String::from)
    .to_vec();
    let retry = |attempts: u32, retry_on: Vec<String>| {
        move |s: &mut VirtualHostSpec| {
            first(s).retries = Some(RouteRetry {
                attempts,
                per_try_timeout: String::new(),
                retry_on: retry_on.clone(),
            })
        }
    };
    spec("retries off (attempts 0)", &retry(0, vec![]), &[]);
    spec("10 attempts on every condition", &retry(10, all.clone()), &[]);
    spec(
        "11 attempts",
        &retry(11, vec![]),
        &[("routes[0].retries.attempts", "uint32.lte")],
    );
    spec(
        "8 conditions, one twice",
        &retry(1, [all.clone(), vec!["reset".into()]].concat()),
        &[
            ("routes[0].retries.retryOn", "repeated.max_items"),
            ("routes[0].retries.retryOn", "repeated.unique"),
        ],
    );
    spec(
        "conditions outside the list",
        &retry(
            1,
            vec!["retriable-status-codes".into(), "5xx,reset".into(), String::new()],
        ),
        &[
            ("routes[0].retries.retryOn[0]", "string.in"),
            ("routes[0].retries.retryOn[1]", "string.in"),
            ("routes[0].retries.retryOn[2]", "string.in"),
        ],
    );
}
