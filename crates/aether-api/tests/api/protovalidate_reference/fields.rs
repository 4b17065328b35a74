//! Cases for the spec's own fields: the hosts, the list of routes, the
//! paths of `prefix` and `exact`, the backend, and TLS.

use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostTls, route_match::Path};

use super::matching::AddCase;
use super::{dns_name, route, tls};

pub fn cases(spec: &mut AddCase<'_>) {
    // hosts: list rules.
    spec("no hosts", &|s| s.hosts.clear(), &[("hosts", "repeated.min_items")]);
    spec(
        "16 hosts",
        &|s| s.hosts = (0..16).map(|i| format!("h{i}.example.com")).collect(),
        &[],
    );
    spec(
        "17 hosts",
        &|s| s.hosts = (0..17).map(|i| format!("h{i}.example.com")).collect(),
        &[("hosts", "repeated.max_items")],
    );
    spec(
        "duplicate hosts",
        &|s| s.hosts = vec!["a.example.com".into(), "b.example.com".into(), "a.example.com".into()],
        &[("hosts", "repeated.unique")],
    );
    spec(
        "hosts differing in case are not duplicates, but upper case is rejected",
        &|s| s.hosts = vec!["a.example.com".into(), "A.example.com".into()],
        &[("hosts[1]", "string.pattern")],
    );
    let bad_hosts: Vec<_> = (0..17).map(|i| format!("hosts[{i}]")).collect();
    let mut expected = vec![("hosts", "repeated.max_items"), ("hosts", "repeated.unique")];
    expected.extend(bad_hosts.iter().map(|p| (p.as_str(), "string.pattern")));
    spec(
        "17 duplicate bad hosts: every rule reported",
        &|s| s.hosts = vec!["BAD".into(); 17],
        &expected,
    );
    // hosts: each host.
    let label63 = "a".repeat(63);
    let label64 = "a".repeat(64);
    for (host, ok) in [
        (format!("{label63}.example.com"), true),
        (format!("{label64}.example.com"), false),
        (format!("x.{label63}"), true),
        (format!("x.{label64}"), false),
        (dns_name(253), true),
        ("*.example.com".into(), true),
        ("10.0.0.1".into(), true),
        ("a".into(), true),
        ("0-a.b-9".into(), true),
        ("*".into(), false),
        ("".into(), false),
        ("a.*.example.com".into(), false),
        ("a*.example.com".into(), false),
        ("*.*.example.com".into(), false),
        ("example.com:443".into(), false),
        ("example.com.".into(), false),
        (".example.com".into(), false),
        ("a..b".into(), false),
        ("-a.example.com".into(), false),
        ("a-.example.com".into(), false),
        ("Api.example.com".into(), false),
        ("[::1]".into(), false),
        ("bücher.example".into(), false),
        ("a_b.example.com".into(), false),
        // RE2's `$` matches only at the very end, not before a final newline.
        ("api.example.com\n".into(), false),
        ("\napi.example.com".into(), false),
    ] {
        let expected: &[(&str, &str)] = if ok { &[] } else { &[("hosts[1]", "string.pattern")] };
        spec(&format!("host {host:?}"), &|s| s.hosts.push(host.clone()), expected);
    }
    spec(
        "a 254-character host",
        &|s| s.hosts.push(dns_name(254)),
        &[("hosts[1]", "string.max_len")],
    );
    // Lengths count code points: 200 two-byte characters are 200, not 400.
    spec(
        "200 non-ASCII characters",
        &|s| s.hosts = vec!["é".repeat(200)],
        &[("hosts[0]", "string.pattern")],
    );
    spec(
        "254 non-ASCII characters",
        &|s| s.hosts = vec!["é".repeat(254)],
        &[("hosts[0]", "string.max_len"), ("hosts[0]", "string.pattern")],
    );

    // routes: list rules, required members.
    spec("no routes", &|s| s.routes.clear(), &[("routes", "repeated.min_items")]);
    let many = |n: u32| -> Vec<HttpRoute> {
        (0..n)
            .map(|i| route(Path::Prefix(format!("/r{i}")), "svc", 80))
            .collect()
    };
    spec("128 routes", &|s| s.routes = many(128), &[]);
    spec(
        "129 routes",
        &|s| s.routes = many(129),
        &[("routes", "repeated.max_items")],
    );
    spec("the same match twice", &|s| s.routes.push(s.routes[0].clone()), &[]);
    spec(
        "missing match",
        &|s| s.routes[2].r#match = None,
        &[("routes[2].match", "required")],
    );
    spec(
        "missing backend",
        &|s| s.routes[1].backend = None,
        &[("routes[1]", "message.oneof")],
    );
    spec(
        "an empty route",
        &|s| s.routes[0] = HttpRoute::default(),
        &[("routes[0].match", "required"), ("routes[0]", "message.oneof")],
    );
    spec(
        "a match with neither prefix nor exact",
        &|s| s.routes[0].r#match = Some(RouteMatch::default()),
        &[("routes[0].match.path", "required")],
    );

    // Paths: the same rules on prefix and exact.
    let long_ok = format!("/{}", "a".repeat(1023));
    let long_bad = format!("/{}", "a".repeat(1024));
    for member in ["prefix", "exact"] {
        let set = move |path: &str| {
            let path = path.to_owned();
            if member == "prefix" {
                Path::Prefix(path)
            } else {
                Path::Exact(path)
            }
        };
        let at = |rule| -> Vec<(String, &'static str)> { vec![(format!("routes[0].match.{member}"), rule)] };
        for (path, expected) in [
            ("/", vec![]),
            ("/users/7", vec![]),
            ("/a-b_c.d~e!$&'()*+,;=:@", vec![]),
            ("/%41%7e%2E", vec![]),
            ("/...", vec![]),
            ("/a.b/..c/.d", vec![]),
            ("/a/", vec![]),
            (long_ok.as_str(), vec![]),
            ("", [at("string.min_len"), at("string.pattern")].concat()),
            ("users", at("string.pattern")),
            ("/a b", at("string.pattern")),
            ("/a?q=1", at("string.pattern")),
            ("/a#top", at("string.pattern")),
            ("/%zz", at("string.pattern")),
            ("/%4", at("string.pattern")),
            ("/ü", at("string.pattern")),
            ("/a\n", at("string.pattern")),
            (long_bad.as_str(), at("string.max_len")),
            ("//", at("path.no_empty_segment")),
            ("/a//b", at("path.no_empty_segment")),
            ("/a/./b", at("path.no_dot_segment")),
            ("/a/../b", at("path.no_dot_segment")),
            ("/.", at("path.no_dot_segment")),
            ("/a/..", at("path.no_dot_segment")),
            ("/a/%2Fb", at("path.no_encoded_slash")),
            ("/a/%2fb", at("path.no_encoded_slash")),
            (
                "/a//./%2F",
                [
                    at("path.no_empty_segment"),
                    at("path.no_dot_segment"),
                    at("path.no_encoded_slash"),
                ]
                .concat(),
            ),
            ("a//b ", [at("string.pattern"), at("path.no_empty_segment")].concat()),
        ] {
            let expected: Vec<_> = expected.iter().map(|(p, r)| (p.as_str(), *r)).collect();
            spec(
                &format!("{member} {path:?}"),
                &|s| {
                    s.routes[0].r#match = Some(RouteMatch {
                        path: Some(set(path)),
                        ..Default::default()
                    })
                },
                &expected,
            );
        }
    }

    // Backends.
    spec(
        "no service",
        &|s| s.routes[0].backend.as_mut().unwrap().service.clear(),
        &[("routes[0].backend.service", "required")],
    );
    spec(
        "an empty backend",
        &|s| s.routes[0].backend = Some(RouteBackend::default()),
        &[("routes[0].backend.service", "required")],
    );
    for (service, expected) in [
        ("svc.team-a", None),
        ("a", None),
        ("Svc", Some("string.pattern")),
        ("svc-", Some("string.pattern")),
        ("svc..a", Some("string.pattern")),
        ("svc_a", Some("string.pattern")),
    ] {
        let expected: Vec<_> = expected.map(|r| ("routes[0].backend.service", r)).into_iter().collect();
        spec(
            &format!("service {service:?}"),
            &|s| s.routes[0].backend.as_mut().unwrap().service = service.into(),
            &expected,
        );
    }
    spec(
        "a 253-character service",
        &|s| s.routes[0].backend.as_mut().unwrap().service = dns_name(253),
        &[],
    );
    spec(
        "a 254-character service",
        &|s| s.routes[0].backend.as_mut().unwrap().service = dns_name(254),
        &[("routes[0].backend.service", "string.max_len")],
    );
    for (port, ok) in [(0, true), (1, true), (65535, true), (65536, false), (u32::MAX, false)] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("routes[0].backend.port", "uint32.lte")]
        };
        spec(
            &format!("port {port}"),
            &|s| s.routes[0].backend.as_mut().unwrap().port = port,
            expected,
        );
    }

    // TLS.
    spec(
        "tls with nothing set",
        &|s| s.tls = Some(VirtualHostTls::default()),
        &[("tls.secretName", "required"), ("tls.provider", "required")],
    );
    spec(
        "secret Bad_Name",
        &|s| tls(s).secret_name = "Bad_Name".into(),
        &[("tls.secretName", "string.pattern")],
    );
    spec("a 253-character secret", &|s| tls(s).secret_name = dns_name(253), &[]);
    spec(
        "a 254-character secret",
        &|s| tls(s).secret_name = dns_name(254),
        &[("tls.secretName", "string.max_len")],
    );
    spec(
        "provider UNSPECIFIED",
        &|s| tls(s).provider = SecretProvider::Unspecified.into(),
        &[("tls.provider", "required")],
    );
    spec(
        "provider AWS",
        &|s| tls(s).provider = SecretProvider::AwsSecretsManager.into(),
        &[],
    );
    spec(
        "provider 7",
        &|s| tls(s).provider = 7,
        &[("tls.provider", "enum.defined_only")],
    );
    spec(
        "provider -1",
        &|s| tls(s).provider = -1,
        &[("tls.provider", "enum.defined_only")],
    );
}
