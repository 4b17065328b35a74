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

mod actions;
mod fields;
mod matching;
mod request_handling;
mod status;

use std::collections::BTreeSet;

use aether_api::config::v1::{
    Condition, RouteBackend, RouteMatch, VirtualHostSpec, VirtualHostStatus, VirtualHostTls, route_match::Path,
};
use aether_api::validate::Validate;
use prost::Message as _;

use crate::common::{proposal_spec as proposal, route_to as route};

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

    fields::cases(&mut spec);
    matching::cases(&mut spec);
    actions::cases(&mut spec);
    request_handling::cases(&mut spec);

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

    status::cases(&mut cases);
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
