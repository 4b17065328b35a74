//! `validate()` against an independent reading of the rules that need no
//! pattern, on decoded specs and on structured ones.

use aether_api::config::v1::{SecretProvider, VirtualHostSpec};
use aether_api::validate::Validate;

use crate::{Outcome, actions, structured};

/// `validate()` on specs built by [`structured::ArbitrarySpec`] from the
/// input, so that nearly every input becomes a spec (and many a valid one).
pub fn validate_structured(data: &[u8]) -> Outcome {
    let mut input = arbitrary::Unstructured::new(data);
    let Ok(spec) = input.arbitrary::<structured::ArbitrarySpec>() else {
        return Outcome::Rejected;
    };
    // The round trips are the decoding targets' business; here the run time
    // goes to validation.
    validate_is_consistent(&spec.build());
    Outcome::Decoded
}

/// `validate()` never panics, reports well-formed violations, and agrees
/// with an independent reading of the rules that need no pattern: a spec it
/// accepts has the counts, the required fields and the ranges the proto asks
/// for.
pub fn validate_is_consistent(spec: &VirtualHostSpec) {
    let result = spec.validate();
    if let Err(violations) = &result {
        assert!(!violations.is_empty(), "an error holds a violation");
        for violation in violations {
            assert!(!violation.rule_id.is_empty() && !violation.message.is_empty());
            assert!(
                violation.field_path.starts_with("spec."),
                "a spec's violation names a field under spec: {violation}"
            );
        }
    }
    if result.is_err() {
        return;
    }
    // Accepted: check the rules a reader of the proto can count by hand.
    assert!((1..=16).contains(&spec.hosts.len()), "hosts: 1 to 16, {spec:?}");
    for (i, host) in spec.hosts.iter().enumerate() {
        assert!(!host.is_empty() && host.len() <= 253, "host length, {spec:?}");
        assert!(!spec.hosts[i + 1..].contains(host), "unique hosts, {spec:?}");
        assert!(host.is_ascii() && !host.ends_with('.'), "host form, {spec:?}");
    }
    assert!((1..=128).contains(&spec.routes.len()), "routes: 1 to 128, {spec:?}");
    for route in &spec.routes {
        use aether_api::config::v1::route_match::Path;
        let route_match = route.r#match.as_ref().expect("an accepted route has a match");
        match route_match.path.as_ref() {
            Some(Path::Prefix(path) | Path::Exact(path)) => {
                assert!(path.starts_with('/') && path.len() <= 1024, "path form, {spec:?}");
                assert!(
                    !path.contains("//") && !path.contains("/../") && !path.to_ascii_lowercase().contains("%2f"),
                    "path segments, {spec:?}"
                );
            }
            Some(Path::Regex(regex)) => assert!(is_regex_text(regex), "regex form, {spec:?}"),
            None => panic!("an accepted match has a path, {spec:?}"),
        }
        match_fields_are_consistent(route_match, spec);
        actions::are_consistent(route, spec);
    }
    assert!((0..=2).contains(&spec.route_order), "route order, {spec:?}");
    if let Some(tls) = &spec.tls {
        assert!(!tls.secret_name.is_empty(), "secret name, {spec:?}");
        assert!(
            matches!(
                SecretProvider::try_from(tls.provider),
                Ok(SecretProvider::Kubernetes | SecretProvider::AwsSecretsManager)
            ),
            "provider, {spec:?}"
        );
    }
}

/// The rules of a `regex` member: 1 to 1024 printable ASCII characters.
fn is_regex_text(regex: &str) -> bool {
    (1..=1024).contains(&regex.len()) && regex.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// The counts and required parts of an accepted match's methods, headers and
/// query parameters.
fn match_fields_are_consistent(route_match: &aether_api::config::v1::RouteMatch, spec: &VirtualHostSpec) {
    use aether_api::config::v1::{header_match, query_param_match};
    const METHODS: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ];
    let methods = &route_match.methods;
    assert!(methods.len() <= 9, "methods: at most 9, {spec:?}");
    for (i, method) in methods.iter().enumerate() {
        assert!(METHODS.contains(&method.as_str()), "a listed method, {spec:?}");
        assert!(!methods[i + 1..].contains(method), "unique methods, {spec:?}");
    }
    assert!(route_match.headers.len() <= 16, "headers: at most 16, {spec:?}");
    for header in &route_match.headers {
        let name = &header.name;
        assert!(
            (1..=256).contains(&name.len()) && !name.bytes().any(|b| b.is_ascii_uppercase() || b == b':'),
            "header name, {spec:?}"
        );
        match header.value.as_ref() {
            Some(header_match::Value::Exact(v) | header_match::Value::Prefix(v)) => {
                assert!((1..=4096).contains(&v.len()) && v.is_ascii(), "header value, {spec:?}");
                assert!(!v.starts_with([' ', '\t']), "header value start, {spec:?}");
            }
            Some(header_match::Value::Regex(regex)) => assert!(is_regex_text(regex), "header regex, {spec:?}"),
            Some(header_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted header match has a value, {spec:?}"),
        }
    }
    assert!(
        route_match.query_params.len() <= 16,
        "query parameters: at most 16, {spec:?}"
    );
    for param in &route_match.query_params {
        let name = &param.name;
        assert!(
            (1..=256).contains(&name.len()) && !name.contains(['&', '=', '#', ' ']),
            "query parameter name, {spec:?}"
        );
        match param.value.as_ref() {
            Some(query_param_match::Value::Exact(v)) => {
                assert!(
                    (1..=1024).contains(&v.len()) && !v.contains(['&', '#', ' ']),
                    "query value, {spec:?}"
                );
            }
            Some(query_param_match::Value::Regex(regex)) => assert!(is_regex_text(regex), "query regex, {spec:?}"),
            Some(query_param_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted query parameter match has a value, {spec:?}"),
        }
    }
}
