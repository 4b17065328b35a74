//! Cases for the rules of the matches beyond the path prefix and exact
//! path: the `regex` path, `methods`, `headers`, `queryParams` and
//! `routeOrder`, on both sides of every bound.

use aether_api::config::v1::{
    HeaderMatch, QueryParamMatch, RouteMatch, RouteOrder, VirtualHostSpec, header_match, query_param_match,
    route_match::Path,
};

/// Adds a case: its name, how it edits the proposal's spec, and the
/// (path under `spec.`, rule id) pairs it must break.
pub type AddCase<'a> = dyn FnMut(&str, &dyn Fn(&mut VirtualHostSpec), &[(&str, &'static str)]) + 'a;

fn first_match(spec: &mut VirtualHostSpec) -> &mut RouteMatch {
    spec.routes[0].r#match.as_mut().unwrap()
}

fn header(name: &str, value: header_match::Value) -> HeaderMatch {
    HeaderMatch {
        name: name.into(),
        value: Some(value),
        invert: false,
    }
}

fn query(name: &str, value: query_param_match::Value) -> QueryParamMatch {
    QueryParamMatch {
        name: name.into(),
        value: Some(value),
    }
}

pub fn cases(spec: &mut AddCase<'_>) {
    regex_cases(spec);
    method_cases(spec);
    header_cases(spec);
    query_cases(spec);
    for (order, ok) in [(0, true), (1, true), (2, true), (3, false), (-1, false)] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("routeOrder", "enum.defined_only")]
        };
        spec(&format!("routeOrder {order}"), &|s| s.route_order = order, expected);
    }
    spec(
        "routeOrder SPECIFICITY with every kind of match",
        &|s| {
            s.route_order = RouteOrder::Specificity.into();
            let m = first_match(s);
            m.path = Some(Path::Regex("^/users/[0-9]+$".into()));
            m.methods = vec!["GET".into(), "HEAD".into()];
            m.headers = vec![
                header("x-env", header_match::Value::Exact("canary".into())),
                HeaderMatch {
                    invert: true,
                    ..header("x-debug", header_match::Value::Present(true))
                },
            ];
            m.query_params = vec![query("version", query_param_match::Value::Exact("2".into()))];
        },
        &[],
    );
}

/// The three `regex` members share their rules; the path's is tried here,
/// the header's and the parameter's with their own cases.
fn regex_cases(spec: &mut AddCase<'_>) {
    let at = "routes[0].match.regex";
    for (regex, expected) in [
        ("^/users/[0-9]+$".to_owned(), vec![]),
        (" ~".into(), vec![]),
        (format!("/[{}]", "a".repeat(1021)), vec![]),
        (format!("/[{}]", "a".repeat(1022)), vec!["string.max_len"]),
        (String::new(), vec!["string.min_len"]),
        ("/a\tb".into(), vec!["string.pattern"]),
        ("/caf\u{e9}".into(), vec!["string.pattern"]),
        ("/\u{7f}".into(), vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (at, r)).collect();
        spec(
            &format!(
                "regex path of {} characters {:?}",
                regex.chars().count(),
                &regex[..regex.len().min(20)]
            ),
            &|s| first_match(s).path = Some(Path::Regex(regex.clone())),
            &expected,
        );
    }
}

fn method_cases(spec: &mut AddCase<'_>) {
    let all: Vec<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]
    .map(String::from)
    .into();
    let with_get = [all.clone(), vec!["GET".to_owned()]].concat();
    for (methods, expected) in [
        (vec![], vec![]),
        (vec!["GET".to_owned()], vec![]),
        (all.clone(), vec![]),
        (
            with_get,
            vec![("methods", "repeated.max_items"), ("methods", "repeated.unique")],
        ),
        (vec!["GET".into(), "GET".into()], vec![("methods", "repeated.unique")]),
        (vec!["GET".into(), "get".into()], vec![("methods[1]", "string.in")]),
        (vec!["PROPFIND".into()], vec![("methods[0]", "string.in")]),
        (vec![String::new()], vec![("methods[0]", "string.in")]),
    ] {
        let expected: Vec<_> = expected
            .into_iter()
            .map(|(p, r)| (format!("routes[0].match.{p}"), r))
            .collect();
        let expected: Vec<_> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        spec(
            &format!("methods {methods:?}"),
            &|s| first_match(s).methods = methods.clone(),
            &expected,
        );
    }
}

fn header_cases(spec: &mut AddCase<'_>) {
    use header_match::Value;
    let present = || Value::Present(true);
    let mut one = |name: &str, header: HeaderMatch, expected: &[(&str, &'static str)]| {
        let expected: Vec<_> = expected
            .iter()
            .map(|(p, r)| (format!("routes[0].match.headers[0]{p}"), *r))
            .collect();
        let expected: Vec<_> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        spec(
            &format!("header {name}"),
            &|s| first_match(s).headers = vec![header.clone()],
            &expected,
        );
    };
    one("present", header("x-env", present()), &[]);
    one(
        "present inverted",
        HeaderMatch {
            invert: true,
            ..header("x-env", present())
        },
        &[],
    );
    one(
        "present false",
        header("x-env", Value::Present(false)),
        &[(".present", "bool.const")],
    );
    one(
        "without a value",
        HeaderMatch {
            name: "x-env".into(),
            ..Default::default()
        },
        &[(".value", "required")],
    );
    one(
        "with nothing set",
        HeaderMatch::default(),
        &[(".name", "required"), (".value", "required")],
    );
    let name_256 = format!("x-{}", "a".repeat(254));
    let name_257 = format!("x-{}", "a".repeat(255));
    for (name, expected) in [
        ("x-!#$%&'*+-.^_`|~09", vec![]),
        (name_256.as_str(), vec![]),
        (name_257.as_str(), vec!["string.max_len"]),
        ("X-Env", vec!["string.pattern"]),
        (":method", vec!["string.pattern"]),
        ("x env", vec!["string.pattern"]),
        ("x\u{e9}", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (".name", r)).collect();
        one(
            &format!("name {:?}", &name[..name.len().min(20)]),
            header(name, present()),
            &expected,
        );
    }
    let v_4096 = "v".repeat(4096);
    let v_4097 = "v".repeat(4097);
    for (value, exact, prefix) in [
        ("canary", vec![], vec![]),
        ("!", vec![], vec![]),
        ("a\t b", vec![], vec![]),
        (v_4096.as_str(), vec![], vec![]),
        ("Bearer ", vec!["string.pattern"], vec![]),
        ("a\t", vec!["string.pattern"], vec![]),
        (v_4097.as_str(), vec!["string.max_len"], vec!["string.max_len"]),
        (
            "",
            vec!["string.min_len", "string.pattern"],
            vec!["string.min_len", "string.pattern"],
        ),
        (" a", vec!["string.pattern"], vec!["string.pattern"]),
        ("a\nb", vec!["string.pattern"], vec!["string.pattern"]),
        ("caf\u{e9}", vec!["string.pattern"], vec!["string.pattern"]),
    ] {
        let short = &value[..value.len().min(20)];
        let expected: Vec<_> = exact.into_iter().map(|r| (".exact", r)).collect();
        one(
            &format!("exact {short:?}"),
            header("x-env", Value::Exact(value.into())),
            &expected,
        );
        let expected: Vec<_> = prefix.into_iter().map(|r| (".prefix", r)).collect();
        one(
            &format!("prefix {short:?}"),
            header("x-env", Value::Prefix(value.into())),
            &expected,
        );
    }
    let regex_1024 = format!("[{}]", "a".repeat(1022));
    let regex_1025 = format!("[{}]", "a".repeat(1023));
    for (regex, expected) in [
        ("c.*", vec![]),
        (regex_1024.as_str(), vec![]),
        (regex_1025.as_str(), vec!["string.max_len"]),
        ("", vec!["string.min_len"]),
        ("a\tb", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (".regex", r)).collect();
        one(
            &format!("regex of {} characters", regex.len()),
            header("x-env", Value::Regex(regex.into())),
            &expected,
        );
    }
    spec(
        "16 headers, one name twice",
        &|s| {
            let mut headers = vec![header("x-env", Value::Exact("a".into())); 2];
            headers.extend((0..14).map(|i| header(&format!("x-{i}"), present())));
            first_match(s).headers = headers;
        },
        &[],
    );
    spec(
        "17 headers",
        &|s| first_match(s).headers = vec![header("x-env", present()); 17],
        &[("routes[0].match.headers", "repeated.max_items")],
    );
}

fn query_cases(spec: &mut AddCase<'_>) {
    use query_param_match::Value;
    let present = || Value::Present(true);
    let mut one = |name: &str, param: QueryParamMatch, expected: &[(&str, &'static str)]| {
        let expected: Vec<_> = expected
            .iter()
            .map(|(p, r)| (format!("routes[0].match.queryParams[0]{p}"), *r))
            .collect();
        let expected: Vec<_> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        spec(
            &format!("query parameter {name}"),
            &|s| first_match(s).query_params = vec![param.clone()],
            &expected,
        );
    };
    one("present", query("version", present()), &[]);
    one(
        "present false",
        query("version", Value::Present(false)),
        &[(".present", "bool.const")],
    );
    one(
        "without a value",
        QueryParamMatch {
            name: "version".into(),
            value: None,
        },
        &[(".value", "required")],
    );
    one(
        "with nothing set",
        QueryParamMatch::default(),
        &[(".name", "required"), (".value", "required")],
    );
    let name_256 = "q".repeat(256);
    let name_257 = "q".repeat(257);
    for (name, expected) in [
        ("A-Za-z0-9._~!$'()*+,;:@/?", vec![]),
        ("%41%7e", vec![]),
        (name_256.as_str(), vec![]),
        (name_257.as_str(), vec!["string.max_len"]),
        ("a&b", vec!["string.pattern"]),
        ("a=b", vec!["string.pattern"]),
        ("a#b", vec!["string.pattern"]),
        ("a%2", vec!["string.pattern"]),
        ("a b", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (".name", r)).collect();
        one(
            &format!("name {:?}", &name[..name.len().min(20)]),
            query(name, present()),
            &expected,
        );
    }
    let v_1024 = "v".repeat(1024);
    let v_1025 = "v".repeat(1025);
    for (value, expected) in [
        ("2", vec![]),
        ("a=b%2A", vec![]),
        (v_1024.as_str(), vec![]),
        (v_1025.as_str(), vec!["string.max_len"]),
        ("", vec!["string.min_len"]),
        ("a&b", vec!["string.pattern"]),
        ("a#", vec!["string.pattern"]),
        ("a b", vec!["string.pattern"]),
        ("%zz", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (".exact", r)).collect();
        one(
            &format!("exact {:?}", &value[..value.len().min(20)]),
            query("version", Value::Exact(value.into())),
            &expected,
        );
    }
    let regex_1024 = format!("[{}]", "a".repeat(1022));
    let regex_1025 = format!("[{}]", "a".repeat(1023));
    for (regex, expected) in [
        ("[0-9]+", vec![]),
        (regex_1024.as_str(), vec![]),
        (regex_1025.as_str(), vec!["string.max_len"]),
        ("", vec!["string.min_len"]),
        ("a\nb", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| (".regex", r)).collect();
        one(
            &format!("regex of {} characters", regex.len()),
            query("version", Value::Regex(regex.into())),
            &expected,
        );
    }
    spec(
        "16 query parameters",
        &|s| first_match(s).query_params = (0..16).map(|i| query(&format!("p{i}"), present())).collect(),
        &[],
    );
    spec(
        "17 query parameters",
        &|s| first_match(s).query_params = vec![query("p", present()); 17],
        &[("routes[0].match.queryParams", "repeated.max_items")],
    );
}
