//! The generated validator against the reference: protovalidate (Python),
//! reading the same binary messages with the edition-2024 descriptors.
//!
//! Every case is validated three ways, which must agree on the set of
//! (field path, rule id): the Rust validator, protovalidate (its proto field
//! paths mapped to the Kubernetes JSON form), and what the case was written
//! to show. The Rust validator and protovalidate must also give the same
//! messages. The cases cover every rule of the proto, on both sides of each
//! boundary. Not covered: both members of one oneof (`RouteMatch.path`,
//! `RouteRewrite.replace`, ...) set at once, which neither a prost message
//! nor protovalidate can hold.
//!
//! Needs the pinned venv of `cargo xtask pyenv` (`AETHER_PYTHON` overrides).

#[path = "protovalidate_reference/actions.rs"]
mod actions;
mod common;
#[path = "protovalidate_reference/matching.rs"]
mod matching;

use std::collections::BTreeSet;

use aether_api::config::v1::{
    Condition, HttpRoute, RouteBackend, RouteMatch, SecretProvider, VirtualHostSpec, VirtualHostStatus, VirtualHostTls,
    route_match::Path,
};
use aether_api::validate::Validate;
use prost::Message as _;

/// A message to judge and the violations it was written to show.
struct Case {
    name: String,
    message: Judged,
    expected: Vec<(String, &'static str)>,
}

enum Judged {
    Spec(VirtualHostSpec),
    Status(VirtualHostStatus),
}

impl Judged {
    fn proto_name(&self) -> &'static str {
        match self {
            Judged::Spec(_) => "aether.config.v1.VirtualHostSpec",
            Judged::Status(_) => "aether.config.v1.VirtualHostStatus",
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            Judged::Spec(m) => m.encode_to_vec(),
            Judged::Status(m) => m.encode_to_vec(),
        }
    }

    fn root(&self) -> &'static str {
        match self {
            Judged::Spec(_) => VirtualHostSpec::ROOT,
            Judged::Status(_) => VirtualHostStatus::ROOT,
        }
    }

    /// The Rust validator's (path, rule id, message), sorted, duplicates kept.
    fn rust_violations(&self) -> Vec<(String, String, String)> {
        let result = match self {
            Judged::Spec(m) => m.validate(),
            Judged::Status(m) => m.validate(),
        };
        let mut found: Vec<_> = match result {
            Ok(()) => Vec::new(),
            Err(violations) => {
                assert!(!violations.is_empty(), "an Err holds at least one violation");
                violations
                    .into_iter()
                    .map(|v| (v.field_path, v.rule_id.to_owned(), v.message.into_owned()))
                    .collect()
            }
        };
        found.sort();
        found
    }
}

use common::{proposal_spec as proposal, route_to as route};

fn condition() -> Condition {
    Condition {
        r#type: "Accepted".into(),
        status: "True".into(),
        observed_generation: 3,
        last_transition_time: "2026-11-29T19:01:31Z".into(),
        reason: "Accepted".into(),
        message: "the VirtualHost is served".into(),
    }
}

/// A DNS name of exactly `len` characters made of valid labels.
fn dns_name(len: usize) -> String {
    let mut name = String::new();
    while name.len() < len {
        if !name.is_empty() {
            name.push('.');
        }
        let label = (len - name.len()).min(63);
        // A one-character tail after a dot still makes a valid label.
        name.push_str(&"a".repeat(label));
    }
    assert_eq!(name.len(), len);
    name
}

fn tls(spec: &mut VirtualHostSpec) -> &mut VirtualHostTls {
    spec.tls.as_mut().unwrap()
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut spec = |name: &str, edit: &dyn Fn(&mut VirtualHostSpec), expected: &[(&str, &'static str)]| {
        let mut message = proposal();
        edit(&mut message);
        cases.push(Case {
            name: format!("spec: {name}"),
            message: Judged::Spec(message),
            expected: expected.iter().map(|(p, r)| (format!("spec.{p}"), *r)).collect(),
        });
    };

    spec("the proposal", &|_| {}, &[]);
    spec("no tls", &|s| s.tls = None, &[]);

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

    matching::cases(&mut spec);
    actions::cases(&mut spec);

    spec(
        "everything wrong at once",
        &|s| {
            s.hosts = vec!["x".into(), "x".into(), "A".into()];
            s.routes[0].r#match = Some(RouteMatch {
                path: Some(Path::Exact("/a/../%2f".into())),
                ..Default::default()
            });
            s.routes[1].backend = Some(RouteBackend {
                service: String::new(),
                port: 70000,
            });
            s.routes[2].r#match = None;
            s.tls = Some(VirtualHostTls {
                secret_name: "-".into(),
                provider: 9,
            });
        },
        &[
            ("hosts", "repeated.unique"),
            ("hosts[2]", "string.pattern"),
            ("routes[0].match.exact", "path.no_dot_segment"),
            ("routes[0].match.exact", "path.no_encoded_slash"),
            ("routes[1].backend.service", "required"),
            ("routes[1].backend.port", "uint32.lte"),
            ("routes[2].match", "required"),
            ("tls.secretName", "string.pattern"),
            ("tls.provider", "enum.defined_only"),
        ],
    );

    // Status.
    let mut status = |name: &str, conditions: Vec<Condition>, expected: &[(&str, &'static str)]| {
        cases.push(Case {
            name: format!("status: {name}"),
            message: Judged::Status(VirtualHostStatus {
                conditions,
                ..Default::default()
            }),
            expected: expected.iter().map(|(p, r)| (format!("status.{p}"), *r)).collect(),
        });
    };
    status("empty", vec![], &[]);
    status("one condition", vec![condition()], &[]);
    let of_types = |count: usize| -> Vec<Condition> {
        (0..count)
            .map(|i| Condition {
                r#type: format!("Type{i}"),
                ..condition()
            })
            .collect()
    };
    status("8 conditions", of_types(8), &[]);
    status("9 conditions", of_types(9), &[("conditions", "repeated.max_items")]);
    status(
        "two conditions of one type",
        vec![condition(), condition()],
        &[("conditions", "conditions.unique_type")],
    );
    status(
        "three conditions, two of one type",
        vec![condition(), of_types(1)[0].clone(), condition()],
        &[("conditions", "conditions.unique_type")],
    );
    status(
        "a condition with nothing set",
        vec![Condition::default()],
        &[
            ("conditions[0].type", "required"),
            ("conditions[0].status", "required"),
            ("conditions[0].lastTransitionTime", "required"),
            ("conditions[0].reason", "required"),
        ],
    );
    // A second condition, of another type, edited.
    let with = |edit: &dyn Fn(&mut Condition)| {
        let mut c = Condition {
            r#type: "Ready".into(),
            ..condition()
        };
        edit(&mut c);
        vec![condition(), c]
    };
    let type_316 = format!("{}/{}", dns_name(253), "A".repeat(62));
    let type_317 = format!("{}/{}", dns_name(253), "A".repeat(63));
    for (value, expected) in [
        ("example.com/Accepted", vec![]),
        ("Ready_2.b-c", vec![]),
        (type_316.as_str(), vec![]),
        (type_317.as_str(), vec!["string.max_len"]),
        ("-Accepted", vec!["string.pattern"]),
        ("Accepted-", vec!["string.pattern"]),
        ("Example.com/Accepted", vec!["string.pattern"]),
        ("/Accepted", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| ("conditions[1].type", r)).collect();
        status(
            &format!("type {value:?}"),
            with(&|c| c.r#type = value.into()),
            &expected,
        );
    }
    for (value, ok) in [
        ("True", true),
        ("False", true),
        ("Unknown", true),
        ("true", false),
        ("Maybe", false),
    ] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].status", "string.in")]
        };
        status(
            &format!("status {value:?}"),
            with(&|c| c.status = value.into()),
            expected,
        );
    }
    for (generation, ok) in [(0, true), (i64::MAX, true), (-1, false), (i64::MIN, false)] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].observedGeneration", "int64.gte")]
        };
        status(
            &format!("observedGeneration {generation}"),
            with(&|c| c.observed_generation = generation),
            expected,
        );
    }
    for (value, ok) in [
        ("2026-11-29T19:01:31.123456789Z", true),
        ("2026-11-29T19:01:31.1234567890Z", false),
        ("2026-11-29T19:01:31+00:00", false),
        ("2026-11-29 19:01:31Z", false),
        ("2026-11-29T19:01:31.Z", false),
    ] {
        let expected: &[(&str, &str)] = if ok {
            &[]
        } else {
            &[("conditions[1].lastTransitionTime", "string.pattern")]
        };
        status(
            &format!("lastTransitionTime {value:?}"),
            with(&|c| c.last_transition_time = value.into()),
            expected,
        );
    }
    let time_65 = format!("2026-11-29T19:01:31.{}Z", "1".repeat(44));
    status(
        "a 65-character lastTransitionTime",
        with(&|c| c.last_transition_time = time_65.clone()),
        &[
            ("conditions[1].lastTransitionTime", "string.max_len"),
            ("conditions[1].lastTransitionTime", "string.pattern"),
        ],
    );
    let reason_1024 = format!("R{}", "a".repeat(1023));
    let reason_1025 = format!("R{}", "a".repeat(1024));
    for (value, expected) in [
        ("HostConflict", vec![]),
        ("A", vec![]),
        ("A_b,c:d_", vec![]),
        (reason_1024.as_str(), vec![]),
        (reason_1025.as_str(), vec!["string.max_len"]),
        ("1Invalid", vec!["string.pattern"]),
        ("Invalid:", vec!["string.pattern"]),
        ("Not valid", vec!["string.pattern"]),
    ] {
        let expected: Vec<_> = expected.into_iter().map(|r| ("conditions[1].reason", r)).collect();
        status(
            &format!("reason {value:?}"),
            with(&|c| c.reason = value.into()),
            &expected,
        );
    }
    status("an empty message", with(&|c| c.message.clear()), &[]);
    status(
        "a 32768-character message",
        with(&|c| c.message = "é".repeat(32768)),
        &[],
    );
    status(
        "a 32769-character message",
        with(&|c| c.message = "m".repeat(32769)),
        &[("conditions[1].message", "string.max_len")],
    );
    cases
}

/// protovalidate's answer for each message, in order.
fn judge(messages: &[&Judged]) -> Vec<Vec<aether_judges::protovalidate::Reported>> {
    let encoded: Vec<_> = messages.iter().map(|m| (m.proto_name(), m.encode())).collect();
    aether_judges::protovalidate::judge(&encoded)
}

use aether_judges::protovalidate::kubernetes_path;

#[test]
fn kubernetes_paths_from_proto_paths() {
    assert_eq!(kubernetes_path("spec", "tls.secret_name"), "spec.tls.secretName");
    assert_eq!(
        kubernetes_path("spec", "routes[12].match.prefix"),
        "spec.routes[12].match.prefix"
    );
    assert_eq!(
        kubernetes_path("status", "conditions[0].last_transition_time"),
        "status.conditions[0].lastTransitionTime"
    );
}

#[test]
fn agrees_with_protovalidate_on_every_rule() {
    let cases = cases();
    let messages: Vec<_> = cases.iter().map(|c| &c.message).collect();
    let answers = judge(&messages);
    let mut failures = Vec::new();
    let mut rules_seen = BTreeSet::new();
    let mut valid_cases = 0;
    for (case, answer) in cases.iter().zip(answers) {
        let mut reference: Vec<_> = answer
            .iter()
            .map(|(path, rule, message)| {
                let path = kubernetes_path(case.message.root(), path);
                (path, rule.clone(), message.clone())
            })
            .collect();
        reference.sort();
        // Messages are compared too: the standard rules' wording is protovalidate's.
        let rust = case.message.rust_violations();
        let pairs: Vec<_> = rust.iter().map(|(p, r, _)| (p.clone(), r.clone())).collect();
        let mut expected: Vec<_> = case
            .expected
            .iter()
            .map(|(p, r)| (p.clone(), (*r).to_owned()))
            .collect();
        expected.sort();
        if rust != reference || pairs != expected {
            failures.push(format!(
                "{}\n    rust:          {rust:?}\n    protovalidate: {reference:?}\n    expected:      {expected:?}",
                case.name
            ));
        }
        rules_seen.extend(answer.into_iter().map(|(_, rule, _)| rule));
        valid_cases += usize::from(expected.is_empty());
    }
    println!(
        "{} cases, {valid_cases} of them valid, {} disagreements",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );

    // Every rule of the proto was broken by some case, and some cases are valid.
    let every_rule = [
        "backends.unique_service_port",
        "bool.const",
        "conditions.unique_type",
        "enum.defined_only",
        "headers.unique_name",
        "int64.gte",
        "message.oneof",
        "path.no_dot_segment",
        "path.no_empty_segment",
        "path.no_encoded_slash",
        "repeated.max_items",
        "repeated.min_items",
        "repeated.unique",
        "required",
        "route.redirect_no_request_headers",
        "route.redirect_no_retries",
        "route.redirect_no_rewrite",
        "route.redirect_no_timeout",
        "route.redirect_prefix_needs_prefix_match",
        "route.rewrite_prefix_needs_prefix_match",
        "string.in",
        "string.max_len",
        "string.min_len",
        "string.not_in",
        "string.pattern",
        "uint32.in",
        "uint32.lte",
    ];
    assert_eq!(rules_seen.iter().map(String::as_str).collect::<Vec<_>>(), every_rule);
    assert!(valid_cases >= 20, "only {valid_cases} valid cases");
}

#[test]
fn the_error_lists_every_violation() {
    let mut spec = proposal();
    spec.hosts.clear();
    spec.routes[1].backend = None;
    let err = spec.validate().unwrap_err();
    let text = err.to_string();
    assert_eq!(
        text,
        "2 validation errors:\n  - spec.hosts: must contain at least 1 item(s) [repeated.min_items]\n  \
         - spec.routes[1]: one of backend, backends, redirect must be set [message.oneof]"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(err);
    assert!(boxed.to_string().contains("spec.routes[1]: one of"));
    // Another root, and the status's own.
    let at = spec.validate_at("virtualHost.spec").unwrap_err();
    assert_eq!(at.violations()[1].field_path, "virtualHost.spec.routes[1]");
    let status = VirtualHostStatus {
        conditions: vec![Condition {
            status: "Maybe".into(),
            ..condition()
        }],
        ..Default::default()
    };
    let err = status.validate().unwrap_err();
    assert_eq!(err.violations()[0].field_path, "status.conditions[0].status");
    assert_eq!(err.violations()[0].message, "must be in list [True, False, Unknown]");
    // A nested message on its own: paths start at its fields.
    let backend = RouteBackend {
        service: "Svc".into(),
        port: 0,
    };
    assert_eq!(backend.validate().unwrap_err().violations()[0].field_path, "service");
}
