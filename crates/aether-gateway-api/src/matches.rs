//! A route's match as HTTPRoute matches.
//!
//! Paths, methods, exact and regex header and query values carry over.
//! What HTTPRoute has no form for becomes the nearest regular expression,
//! with a note (Gateway API leaves `RegularExpression` to each
//! implementation: Envoy-based ones read RE2, as this API does), or is
//! dropped with a note when no expression says it (an inverted header).

use aether_api::config::v1::route_match::Path;
use aether_api::config::v1::{HeaderMatch, QueryParamMatch, RouteMatch, header_match, query_param_match};
use gateway_api::httproutes::{
    HttpRouteRulesMatches, HttpRouteRulesMatchesHeaders, HttpRouteRulesMatchesHeadersType, HttpRouteRulesMatchesMethod,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteRulesMatchesQueryParams,
    HttpRouteRulesMatchesQueryParamsType,
};

use crate::{NoteKind, Notes};

/// What Gateway API says of its regular expressions.
const REGEX_SUPPORT: &str = "Gateway API leaves regular expressions to each implementation (Envoy-based ones read RE2, \
                             as here; others may refuse the route)";

/// The HTTPRoute matches (any one matching) of the route match at `path`:
/// one per method, as an HTTPRoute match holds one method.
pub(crate) fn convert(matched: Option<&RouteMatch>, path: &str, notes: &mut Notes) -> Vec<HttpRouteRulesMatches> {
    // Every field named (no `..`): a new match field fails to compile here
    // until it is converted or noted as dropped.
    let Some(RouteMatch {
        path: path_specifier,
        methods,
        headers,
        query_params,
    }) = matched
    else {
        return vec![HttpRouteRulesMatches::default()];
    };
    let path_match = match path_specifier {
        Some(Path::Exact(value)) => Some(path_value(HttpRouteRulesMatchesPathType::Exact, value)),
        Some(Path::Prefix(value)) => {
            prefix_note(value, &format!("{path}.prefix"), notes);
            Some(path_value(HttpRouteRulesMatchesPathType::PathPrefix, value))
        }
        Some(Path::Regex(value)) => {
            notes.push(
                format!("{path}.regex"),
                NoteKind::Differs,
                format!(
                    "{REGEX_SUPPORT}, and their rank among the other routes' paths (Envoy Gateway's, which this \
                     converter assumes: after exact paths, before prefixes)"
                ),
            );
            Some(path_value(HttpRouteRulesMatchesPathType::RegularExpression, value))
        }
        None => None,
    };
    let headers: Vec<_> = headers
        .iter()
        .enumerate()
        .filter_map(|(index, header)| convert_header(header, &format!("{path}.headers[{index}]"), notes))
        .collect();
    let query_params: Vec<_> = query_params
        .iter()
        .enumerate()
        .map(|(index, param)| convert_query_param(param, &format!("{path}.queryParams[{index}]"), notes))
        .collect();
    let base = HttpRouteRulesMatches {
        path: path_match,
        headers: (!headers.is_empty()).then_some(headers),
        query_params: (!query_params.is_empty()).then_some(query_params),
        method: None,
    };
    if methods.is_empty() {
        return vec![base];
    }
    methods
        .iter()
        .map(|method| HttpRouteRulesMatches {
            method: method_of(method),
            ..base.clone()
        })
        .collect()
}

fn path_value(kind: HttpRouteRulesMatchesPathType, value: &str) -> HttpRouteRulesMatchesPath {
    HttpRouteRulesMatchesPath {
        r#type: Some(kind),
        value: Some(value.to_owned()),
    }
}

/// A VirtualHost prefix is compared character by character; a Gateway API
/// `PathPrefix` element by element (`/users` matches `/users/7`, not
/// `/users2`; a trailing `/` is ignored, so `/api/` matches `/api`). Only
/// `/` means the same in both.
fn prefix_note(value: &str, path: &str, notes: &mut Notes) {
    if value == "/" {
        return;
    }
    let example = if let Some(without) = value.strip_suffix('/') {
        format!("PathPrefix {value} also matches {without}, which this prefix does not")
    } else {
        format!(
            "PathPrefix {value} does not match {value}x, which this prefix does (it matches {value} and {value}/...)"
        )
    };
    notes.push(
        path,
        NoteKind::Differs,
        format!("Gateway API compares path prefixes by segment, not by character: {example}"),
    );
}

/// The methods the API allows are exactly Gateway API's.
fn method_of(method: &str) -> Option<HttpRouteRulesMatchesMethod> {
    use HttpRouteRulesMatchesMethod::*;
    Some(match method {
        "GET" => Get,
        "HEAD" => Head,
        "POST" => Post,
        "PUT" => Put,
        "DELETE" => Delete,
        "CONNECT" => Connect,
        "OPTIONS" => Options,
        "TRACE" => Trace,
        "PATCH" => Patch,
        _ => return None,
    })
}

/// A regular expression (RE2, whole value) matching what starts with `prefix`.
pub(crate) fn prefix_regex(prefix: &str) -> String {
    format!("{}.*", regex_syntax::escape(prefix))
}

fn convert_header(header: &HeaderMatch, path: &str, notes: &mut Notes) -> Option<HttpRouteRulesMatchesHeaders> {
    let HeaderMatch { name, value, invert } = header;
    if *invert {
        notes.push(
            format!("{path}.invert"),
            NoteKind::Dropped,
            format!(
                "Gateway API has no inverted header match: this entry is left out, so the rule also takes requests \
                 it would have refused (header {name}); narrow the rule another way"
            ),
        );
        return None;
    }
    let (kind, value) = match value.as_ref()? {
        header_match::Value::Exact(value) => (HttpRouteRulesMatchesHeadersType::Exact, value.clone()),
        header_match::Value::Regex(value) => {
            notes.push(format!("{path}.regex"), NoteKind::Differs, REGEX_SUPPORT);
            (HttpRouteRulesMatchesHeadersType::RegularExpression, value.clone())
        }
        header_match::Value::Prefix(value) => {
            let regex = prefix_regex(value);
            notes.push(
                format!("{path}.prefix"),
                NoteKind::Differs,
                format!(
                    "Gateway API has no prefix header match: written as the regular expression {regex}; {REGEX_SUPPORT}"
                ),
            );
            (HttpRouteRulesMatchesHeadersType::RegularExpression, regex)
        }
        header_match::Value::Present(_) => {
            notes.push(
                format!("{path}.present"),
                NoteKind::Differs,
                format!("Gateway API has no presence match: written as the regular expression .*; {REGEX_SUPPORT}"),
            );
            (HttpRouteRulesMatchesHeadersType::RegularExpression, ".*".to_owned())
        }
    };
    Some(HttpRouteRulesMatchesHeaders {
        name: name.clone(),
        r#type: Some(kind),
        value,
    })
}

/// Gateway API's query parameter names: RFC 9110 tokens.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte))
}

fn convert_query_param(param: &QueryParamMatch, path: &str, notes: &mut Notes) -> HttpRouteRulesMatchesQueryParams {
    let QueryParamMatch { name, value } = param;
    if !is_token(name) {
        notes.push(
            format!("{path}.name"),
            NoteKind::Needs,
            format!(
                "Gateway API accepts only token characters (A-Z a-z 0-9 !#$%&'*+-.^_`|~) in a query parameter name; \
                 {name:?} must be renamed before the HTTPRoute is accepted"
            ),
        );
    }
    let (kind, value) = match value {
        Some(query_param_match::Value::Exact(value)) => (HttpRouteRulesMatchesQueryParamsType::Exact, value.clone()),
        Some(query_param_match::Value::Regex(value)) => {
            notes.push(format!("{path}.regex"), NoteKind::Differs, REGEX_SUPPORT);
            (HttpRouteRulesMatchesQueryParamsType::RegularExpression, value.clone())
        }
        Some(query_param_match::Value::Present(_)) | None => {
            notes.push(
                format!("{path}.present"),
                NoteKind::Differs,
                format!("Gateway API has no presence match: written as the regular expression .*; {REGEX_SUPPORT}"),
            );
            (HttpRouteRulesMatchesQueryParamsType::RegularExpression, ".*".to_owned())
        }
    };
    HttpRouteRulesMatchesQueryParams {
        name: name.clone(),
        r#type: Some(kind),
        value,
    }
}
