//! `validate()` against an independent reading of the rules that need no
//! pattern, on decoded specs and on structured ones.

use aether_api::config::v1::{
    HeaderMatch, QueryParamMatch, RouteMatch, RouteOrder, SecretProvider, VirtualHostSpec, header_match,
    query_param_match, route_match::Path,
};
use aether_api::validate::Validate;
use prost_reflect::ReflectMessage;

use crate::{Outcome, actions, bounds, structured};

/// `validate()` on specs drawn from the rules model with the input's bytes
/// ([`structured::spec`]), so that every input becomes a spec (and many a
/// valid one).
pub fn validate_structured(data: &[u8]) -> Outcome {
    let spec = structured::spec(&mut arbitrary::Unstructured::new(data));
    // The round trips are the decoding targets' business; here the run time
    // goes to validation.
    validate_is_consistent(&spec);
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
    // Accepted: check the rules a reader of the proto can count by hand (the
    // numbers are the proto's, read from the rules model).
    let hosts = bounds::min_items::<VirtualHostSpec>("hosts")..=bounds::max_items::<VirtualHostSpec>("hosts");
    assert!(hosts.contains(&spec.hosts.len()), "hosts: {hosts:?}, {spec:?}");
    let host_len = bounds::item_max_len::<VirtualHostSpec>("hosts");
    for (i, host) in spec.hosts.iter().enumerate() {
        assert!(!host.is_empty() && host.len() <= host_len, "host length, {spec:?}");
        assert!(!spec.hosts[i + 1..].contains(host), "unique hosts, {spec:?}");
        assert!(host.is_ascii() && !host.ends_with('.'), "host form, {spec:?}");
    }
    let routes = bounds::min_items::<VirtualHostSpec>("routes")..=bounds::max_items::<VirtualHostSpec>("routes");
    assert!(routes.contains(&spec.routes.len()), "routes: {routes:?}, {spec:?}");
    for route in &spec.routes {
        let route_match = route.r#match.as_ref().expect("an accepted route has a match");
        match route_match.path.as_ref() {
            Some(Path::Prefix(path)) => assert!(actions::is_path::<RouteMatch>(path, "prefix"), "prefix, {spec:?}"),
            Some(Path::Exact(path)) => assert!(actions::is_path::<RouteMatch>(path, "exact"), "exact, {spec:?}"),
            Some(Path::Regex(regex)) => assert!(is_regex_text::<RouteMatch>(regex, "regex"), "regex, {spec:?}"),
            None => panic!("an accepted match has a path, {spec:?}"),
        }
        match_fields_are_consistent(route_match, spec);
        actions::are_consistent(route, spec);
    }
    assert!(RouteOrder::try_from(spec.route_order).is_ok(), "route order, {spec:?}");
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

/// The rules of a `regex` member `M.field`: printable ASCII characters, as
/// many as its length rules allow.
fn is_regex_text<M: ReflectMessage + Default>(regex: &str, field: &str) -> bool {
    (bounds::min_len::<M>(field)..=bounds::max_len::<M>(field)).contains(&regex.len())
        && regex.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// The counts and required parts of an accepted match's methods, headers and
/// query parameters.
fn match_fields_are_consistent(route_match: &RouteMatch, spec: &VirtualHostSpec) {
    let methods = &route_match.methods;
    let listed = bounds::item_one_of::<RouteMatch>("methods");
    let most = bounds::max_items::<RouteMatch>("methods");
    assert!(methods.len() <= most, "methods: at most {most}, {spec:?}");
    for (i, method) in methods.iter().enumerate() {
        assert!(bounds::holds_text(listed, method), "a listed method, {spec:?}");
        assert!(!methods[i + 1..].contains(method), "unique methods, {spec:?}");
    }
    let most = bounds::max_items::<RouteMatch>("headers");
    assert!(route_match.headers.len() <= most, "headers: at most {most}, {spec:?}");
    let name_len = bounds::min_len::<HeaderMatch>("name")..=bounds::max_len::<HeaderMatch>("name");
    for header in &route_match.headers {
        let name = &header.name;
        assert!(
            name_len.contains(&name.len()) && !name.bytes().any(|b| b.is_ascii_uppercase() || b == b':'),
            "header name, {spec:?}"
        );
        let text = |v: &str, member: &str| {
            let len = bounds::min_len::<HeaderMatch>(member)..=bounds::max_len::<HeaderMatch>(member);
            assert!(len.contains(&v.len()) && v.is_ascii(), "header value, {spec:?}");
            assert!(!v.starts_with([' ', '\t']), "header value start, {spec:?}");
        };
        match header.value.as_ref() {
            Some(header_match::Value::Exact(v)) => text(v, "exact"),
            Some(header_match::Value::Prefix(v)) => text(v, "prefix"),
            Some(header_match::Value::Regex(regex)) => {
                assert!(is_regex_text::<HeaderMatch>(regex, "regex"), "header regex, {spec:?}")
            }
            Some(header_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted header match has a value, {spec:?}"),
        }
    }
    let most = bounds::max_items::<RouteMatch>("query_params");
    assert!(
        route_match.query_params.len() <= most,
        "query parameters: at most {most}, {spec:?}"
    );
    let name_len = bounds::min_len::<QueryParamMatch>("name")..=bounds::max_len::<QueryParamMatch>("name");
    for param in &route_match.query_params {
        let name = &param.name;
        assert!(
            name_len.contains(&name.len()) && !name.contains(['&', '=', '#', ' ']),
            "query parameter name, {spec:?}"
        );
        match param.value.as_ref() {
            Some(query_param_match::Value::Exact(v)) => {
                let len = bounds::min_len::<QueryParamMatch>("exact")..=bounds::max_len::<QueryParamMatch>("exact");
                assert!(
                    len.contains(&v.len()) && !v.contains(['&', '#', ' ']),
                    "query value, {spec:?}"
                );
            }
            Some(query_param_match::Value::Regex(regex)) => {
                assert!(
                    is_regex_text::<QueryParamMatch>(regex, "regex"),
                    "query regex, {spec:?}"
                )
            }
            Some(query_param_match::Value::Present(present)) => assert!(present, "present is true, {spec:?}"),
            None => panic!("an accepted query parameter match has a value, {spec:?}"),
        }
    }
}
