//! The rules model as codegen reads it from `api/`: documentation, standard
//! rules with protovalidate's ids and messages, oneofs and CEL rules.

use aether_rules::{Api, Bound, RuleKind, Scalar};

fn api() -> Api {
    let root = xtask::workspace_root();
    let plan = xtask::plan::Plan::load(&root).unwrap();
    let pinned = xtask::proto_deps::PinnedCrates::load(&root).unwrap();
    xtask::generators::Context::load(&root, &plan.input_dirs, pinned)
        .unwrap()
        .api
}

#[test]
fn reads_the_hosts_rules_and_docs() {
    let api = api();
    let spec = api.message("aether.config.v1.VirtualHostSpec").unwrap();
    assert!(
        spec.doc.starts_with("The desired state of a VirtualHost"),
        "{}",
        spec.doc
    );
    let hosts = &spec.fields[0];
    assert_eq!(hosts.name(), "hosts");
    let kinds: Vec<_> = hosts.rules.iter().map(|r| (r.id.as_str(), &r.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("repeated.min_items", &RuleKind::MinItems(1)),
            ("repeated.max_items", &RuleKind::MaxItems(16)),
            ("repeated.unique", &RuleKind::Unique)
        ]
    );
    assert_eq!(hosts.rules[0].message, "must contain at least 1 item(s)");
    let items = hosts.items.as_ref().unwrap();
    assert_eq!(items.rules[0].kind, RuleKind::MaxLen(253));
    assert_eq!(items.rules[0].message, "must be at most 253 characters");
    assert!(matches!(&items.rules[1].kind, RuleKind::Pattern(p) if p.source.starts_with("^(\\*\\.)?")));
}

#[test]
fn reads_oneof_required_and_cel_rules() {
    let api = api();
    let route_match = api.message("aether.config.v1.RouteMatch").unwrap();
    assert_eq!(route_match.oneofs[0].name, "path");
    assert!(route_match.oneofs[0].required);
    let prefix = &route_match.fields[0];
    let ids: Vec<_> = prefix.cel.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["path.no_empty_segment", "path.no_dot_segment", "path.no_encoded_slash"]
    );
}

#[test]
fn reads_numeric_and_enum_rules() {
    let api = api();
    let backend = api.message("aether.config.v1.RouteBackend").unwrap();
    let port = &backend.fields[1].rules[0];
    assert_eq!(
        (port.id.as_str(), port.message.as_str()),
        ("uint32.lte", "must be less than or equal to 65535")
    );
    assert_eq!(
        port.kind,
        RuleKind::Range {
            lower: None,
            upper: Some(Bound {
                value: Scalar::UInt(65535),
                inclusive: true
            }),
            exclusive: false
        }
    );
    let tls = api.message("aether.config.v1.VirtualHostTLS").unwrap();
    assert!(tls.fields[1].required);
    assert_eq!(tls.fields[1].rules[0].kind, RuleKind::DefinedOnly);
    let provider = api
        .enums
        .iter()
        .find(|e| e.full_name == "aether.config.v1.SecretProvider")
        .unwrap();
    assert_eq!(provider.values[1].0, "SECRET_PROVIDER_KUBERNETES");
}
