//! The Kubernetes JSON form: what manifests are written in.

use aether_api::config::v1::{
    Condition, HeaderMatch, QueryParamMatch, RouteMatch, RouteOrder, SecretProvider, VirtualHostSpec,
    VirtualHostStatus, VirtualHostTls, header_match, query_param_match, route_match::Path,
};
use serde_json::json;

use crate::common;

#[test]
fn the_proposal_manifest_decodes_into_the_expected_struct_and_back() {
    let manifest = common::proposal_manifest();
    let spec: VirtualHostSpec = serde_json::from_value(manifest["spec"].clone()).unwrap();
    assert_eq!(spec, common::proposal_spec());
    // Written back, it is the manifest's spec exactly: short enum names,
    // flattened oneofs, camelCase, and no `port` where the default is meant.
    assert_eq!(serde_json::to_value(&spec).unwrap(), manifest["spec"]);
}

#[test]
fn enum_values_are_written_short_and_read_short_or_full() {
    let tls = VirtualHostTls {
        secret_name: "s".into(),
        provider: SecretProvider::AwsSecretsManager.into(),
    };
    assert_eq!(
        serde_json::to_value(&tls).unwrap(),
        json!({"secretName": "s", "provider": "AWS_SECRETS_MANAGER"})
    );
    for name in ["KUBERNETES", "SECRET_PROVIDER_KUBERNETES"] {
        let tls: VirtualHostTls = serde_json::from_value(json!({"secretName": "s", "provider": name})).unwrap();
        assert_eq!(tls.provider(), SecretProvider::Kubernetes, "{name}");
    }
}

#[test]
fn an_unknown_enum_name_or_a_number_is_rejected_naming_the_choices() {
    let err = serde_json::from_value::<VirtualHostTls>(json!({"provider": "VAULT"})).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("VAULT") && text.contains("KUBERNETES"), "{text}");
    assert!(serde_json::from_value::<VirtualHostTls>(json!({"provider": 1})).is_err());
}

#[test]
fn unknown_fields_are_rejected_by_name() {
    let err = serde_json::from_value::<VirtualHostSpec>(json!({"hosts": ["a"], "retries": 3})).unwrap_err();
    assert!(err.to_string().contains("retries"), "{err}");
    let err = serde_json::from_value::<VirtualHostSpec>(json!({"routes": [{"match": {"suffix": "/a"}}]})).unwrap_err();
    assert!(err.to_string().contains("suffix"), "{err}");
    let err = serde_json::from_value::<RouteMatch>(json!({"headers": [{"name": "a", "suffix": "b"}]})).unwrap_err();
    assert!(err.to_string().contains("suffix"), "{err}");
    let err = serde_json::from_value::<VirtualHostStatus>(json!({"conditions": [{"type": "A", "severity": "x"}]}))
        .unwrap_err();
    assert!(err.to_string().contains("severity"), "{err}");
}

#[test]
fn both_oneof_members_at_once_are_rejected() {
    // Whichever comes second, the error names the oneof and all its members,
    // not a "duplicate field".
    for route_match in [
        r#"{"prefix": "/a", "exact": "/b"}"#,
        r#"{"exact": "/b", "prefix": "/a"}"#,
        r#"{"regex": "/b", "prefix": "/a"}"#,
    ] {
        let json = format!(r#"{{"routes": [{{"match": {route_match}}}]}}"#);
        let err = serde_json::from_str::<VirtualHostSpec>(&json).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("only one of `prefix`, `exact`, `regex` may be set (oneof `path`) at line 1"),
            "{err}"
        );
    }
    let err = serde_json::from_str::<HeaderMatch>(r#"{"name": "a", "present": true, "exact": "b"}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("only one of `exact`, `prefix`, `regex`, `present` may be set (oneof `value`)"),
        "{err}"
    );
    let err = serde_json::from_str::<QueryParamMatch>(r#"{"name": "a", "regex": "b", "exact": "b"}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("only one of `exact`, `regex`, `present` may be set (oneof `value`)"),
        "{err}"
    );
}

#[test]
fn the_match_fields_read_and_write_in_the_kubernetes_form() {
    // The example of the Kubernetes form the matches were designed from.
    let manifest = json!({
        "hosts": ["api.example.com"],
        "routeOrder": "SPECIFICITY",
        "routes": [{
            "match": {
                "regex": "^/users/[0-9]+$",
                "methods": ["GET", "HEAD"],
                "headers": [
                    {"name": "x-env", "exact": "canary"},
                    {"name": "x-debug", "present": true, "invert": true},
                ],
                "queryParams": [{"name": "version", "exact": "2"}],
            },
            "backend": {"service": "svc-users", "port": 8080},
        }],
    });
    let spec: VirtualHostSpec = serde_json::from_value(manifest.clone()).unwrap();
    assert_eq!(spec.route_order(), RouteOrder::Specificity);
    let route_match = spec.routes[0].r#match.as_ref().unwrap();
    assert_eq!(route_match.path, Some(Path::Regex("^/users/[0-9]+$".into())));
    assert_eq!(route_match.methods, ["GET", "HEAD"]);
    assert_eq!(
        route_match.headers,
        [
            HeaderMatch {
                name: "x-env".into(),
                value: Some(header_match::Value::Exact("canary".into())),
                invert: false,
            },
            HeaderMatch {
                name: "x-debug".into(),
                value: Some(header_match::Value::Present(true)),
                invert: true,
            },
        ]
    );
    assert_eq!(
        route_match.query_params,
        [QueryParamMatch {
            name: "version".into(),
            value: Some(query_param_match::Value::Exact("2".into())),
        }]
    );
    // Written back, it is the manifest exactly: `invert: false` and an
    // unset route order are omitted, as every zero value is.
    assert_eq!(serde_json::to_value(&spec).unwrap(), manifest);
    // A set member is written even when it holds its zero value, or the
    // oneof would read back unset.
    let present_false = HeaderMatch {
        name: "a".into(),
        value: Some(header_match::Value::Present(false)),
        invert: false,
    };
    assert_eq!(
        serde_json::to_value(&present_false).unwrap(),
        json!({"name": "a", "present": false})
    );
}

#[test]
fn the_route_order_is_written_short_and_read_short_or_full() {
    for (name, order) in [
        ("LISTED", RouteOrder::Listed),
        ("ROUTE_ORDER_LISTED", RouteOrder::Listed),
        ("SPECIFICITY", RouteOrder::Specificity),
        ("ROUTE_ORDER_SPECIFICITY", RouteOrder::Specificity),
    ] {
        let spec: VirtualHostSpec = serde_json::from_value(json!({"routeOrder": name})).unwrap();
        assert_eq!(spec.route_order(), order, "{name}");
    }
    let spec = VirtualHostSpec {
        route_order: RouteOrder::Specificity.into(),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&spec).unwrap(),
        json!({"routeOrder": "SPECIFICITY"})
    );
    let err = serde_json::from_value::<VirtualHostSpec>(json!({"routeOrder": "RANDOM"})).unwrap_err();
    assert!(
        err.to_string().contains("RANDOM") && err.to_string().contains("SPECIFICITY"),
        "{err}"
    );
}

#[test]
fn absent_fields_are_omitted() {
    let spec = VirtualHostSpec::default();
    assert_eq!(serde_json::to_value(&spec).unwrap(), json!({}));
}

#[test]
fn conditions_carry_observed_generation_as_a_number() {
    let status = VirtualHostStatus {
        conditions: vec![Condition {
            r#type: "Accepted".into(),
            status: "True".into(),
            observed_generation: 3,
            last_transition_time: "2026-11-29T19:01:31Z".into(),
            reason: "Accepted".into(),
            message: String::new(),
        }],
        route_count: 3,
    };
    let value = serde_json::to_value(&status).unwrap();
    assert_eq!(
        value,
        json!({"conditions": [{"type": "Accepted", "status": "True", "observedGeneration": 3,
            "lastTransitionTime": "2026-11-29T19:01:31Z", "reason": "Accepted"}], "routeCount": 3})
    );
    assert_eq!(serde_json::from_value::<VirtualHostStatus>(value).unwrap(), status);
    // The proto field name is accepted too, as pbjson does for the other messages.
    let snake: Condition = serde_json::from_value(json!({"observed_generation": 4})).unwrap();
    assert_eq!(snake.observed_generation, 4);
}
