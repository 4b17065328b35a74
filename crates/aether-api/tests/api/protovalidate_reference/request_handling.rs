//! Cases for what a route does to a request on its way: `rewrite`, header
//! changes, `timeout` and `retries`, on both sides of every bound.

use aether_api::config::v1::{
    HeaderModifier, HeaderValue, HttpRoute, RouteRetry, RouteRewrite, VirtualHostSpec, route_match::Path, route_rewrite,
};

use super::actions::first;
use super::matching::AddCase;

fn header(name: &str, value: &str) -> HeaderValue {
    HeaderValue {
        name: name.into(),
        value: value.into(),
    }
}

pub fn cases(spec: &mut AddCase<'_>) {
    rewrite_cases(spec);
    header_cases(spec);
    timeout_and_retry_cases(spec);
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
