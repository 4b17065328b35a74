//! A route's match as Envoy's `RouteMatch`, and the routes' order.

use aether_api::config::v1::{
    HeaderMatch, QueryParamMatch, RouteMatch, VirtualHostSpec, header_match, query_param_match, route_match::Path,
};
use aether_api::precedence;
use envoy_types::pb::envoy::config::route::v3 as route;
use envoy_types::pb::envoy::r#type::matcher::v3::{RegexMatcher, StringMatcher, string_matcher::MatchPattern};

use crate::path::{MatchKind, edge_normal_form};

/// Envoy's match for a (valid) route match whose regular expressions all
/// pass [`re2::check`](aether_edge_limits::re2::check): the path in the form Envoy compares (see
/// [`edge_normal_form`]), the methods as a `:method` header match, then
/// the headers and the query parameters.
pub(crate) fn envoy_match(route_match: &RouteMatch) -> Option<route::RouteMatch> {
    // Every field named (no `..`): a new match field fails to compile here
    // until Envoy's matcher for it is written.
    let RouteMatch {
        path,
        methods,
        headers,
        query_params,
    } = route_match;
    // In the form Envoy compares normalized request paths with, or a path
    // written otherwise (`/%7Euser`) could never match.
    let path_specifier = match path.as_ref()? {
        Path::Prefix(prefix) => route::route_match::PathSpecifier::Prefix(edge_normal_form(prefix, MatchKind::Prefix)),
        Path::Exact(exact) => route::route_match::PathSpecifier::Path(edge_normal_form(exact, MatchKind::Exact)),
        Path::Regex(regex) => route::route_match::PathSpecifier::SafeRegex(regex_matcher(regex)),
    };
    let mut header_matchers = Vec::with_capacity(headers.len() + 1);
    if let Some(methods) = methods_matcher(methods) {
        header_matchers.push(methods);
    }
    header_matchers.extend(headers.iter().map(header_matcher));
    Some(route::RouteMatch {
        path_specifier: Some(path_specifier),
        headers: header_matchers,
        query_parameters: query_params.iter().map(query_parameter_matcher).collect(),
        ..Default::default()
    })
}

fn regex_matcher(regex: &str) -> RegexMatcher {
    // No engine named: Envoy's default, RE2, the one the guard models.
    RegexMatcher {
        regex: regex.to_owned(),
        engine_type: None,
    }
}

fn string_matcher(pattern: MatchPattern) -> StringMatcher {
    StringMatcher {
        ignore_case: false,
        match_pattern: Some(pattern),
    }
}

/// `methods` as Envoy matches a method: the `:method` pseudo-header, equal
/// to the one method, or to one of several (`GET|HEAD`: the methods are
/// upper-case letters, so the alternation needs no escaping, and nine of
/// them stay far below RE2's program limit, which a test checks).
fn methods_matcher(methods: &[String]) -> Option<route::HeaderMatcher> {
    let pattern = match methods {
        [] => return None,
        [method] => MatchPattern::Exact(method.clone()),
        methods => MatchPattern::SafeRegex(regex_matcher(&methods.join("|"))),
    };
    Some(route::HeaderMatcher {
        name: ":method".to_owned(),
        header_match_specifier: Some(route::header_matcher::HeaderMatchSpecifier::StringMatch(
            string_matcher(pattern),
        )),
        ..Default::default()
    })
}

fn header_matcher(header: &HeaderMatch) -> route::HeaderMatcher {
    use route::header_matcher::HeaderMatchSpecifier;
    let HeaderMatch { name, value, invert } = header;
    let specifier = value.as_ref().map(|value| match value {
        header_match::Value::Exact(exact) => {
            HeaderMatchSpecifier::StringMatch(string_matcher(MatchPattern::Exact(exact.clone())))
        }
        header_match::Value::Prefix(prefix) => {
            HeaderMatchSpecifier::StringMatch(string_matcher(MatchPattern::Prefix(prefix.clone())))
        }
        header_match::Value::Regex(regex) => {
            HeaderMatchSpecifier::StringMatch(string_matcher(MatchPattern::SafeRegex(regex_matcher(regex))))
        }
        header_match::Value::Present(_) => HeaderMatchSpecifier::PresentMatch(true),
    });
    route::HeaderMatcher {
        name: name.clone(),
        invert_match: *invert,
        header_match_specifier: specifier,
        ..Default::default()
    }
}

fn query_parameter_matcher(param: &QueryParamMatch) -> route::QueryParameterMatcher {
    use route::query_parameter_matcher::QueryParameterMatchSpecifier;
    let QueryParamMatch { name, value } = param;
    let specifier = value.as_ref().map(|value| match value {
        query_param_match::Value::Exact(exact) => {
            QueryParameterMatchSpecifier::StringMatch(string_matcher(MatchPattern::Exact(exact.clone())))
        }
        query_param_match::Value::Regex(regex) => {
            QueryParameterMatchSpecifier::StringMatch(string_matcher(MatchPattern::SafeRegex(regex_matcher(regex))))
        }
        query_param_match::Value::Present(_) => QueryParameterMatchSpecifier::PresentMatch(true),
    });
    route::QueryParameterMatcher {
        name: name.clone(),
        query_parameter_match_specifier: specifier,
    }
}

/// The indices of `spec.routes` in the order the edge tries them
/// ([`precedence::route_order`]), a prefix as long as the form Envoy
/// compares it in ([`edge_normal_form`]: `/%7Eu` counts as `/~u`).
pub(crate) fn route_order(spec: &VirtualHostSpec) -> Vec<usize> {
    precedence::route_order(spec, |prefix| edge_normal_form(prefix, MatchKind::Prefix).len())
}
