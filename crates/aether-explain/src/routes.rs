//! Trying a virtual host's routes in order, as Envoy does: each route's
//! path, then its header matchers (the method among them), then its query
//! parameters; the first route whose every matcher matches serves.

use aether_projection::envoy_route::header_matcher::HeaderMatchSpecifier;
use aether_projection::envoy_route::query_parameter_matcher::QueryParameterMatchSpecifier;
use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::envoy_route::{HeaderMatcher, QueryParameterMatcher, Route, RouteMatch};
use envoy_types::pb::envoy::r#type::matcher::v3::StringMatcher;
use envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern;

use crate::Request;

/// Why a route does not take the request: the matcher and why; or what
/// `explain` cannot judge.
pub(crate) enum Miss {
    Failed { matcher: String, why: String },
    Unpredictable(String),
}

/// Headers Envoy sets, removes or reads itself before it routes, so that a
/// route matching one sees Envoy's value rather than the client's.
const SET_BY_THE_EDGE: &[&str] = &[
    "connection",
    "content-length",
    "host",
    "keep-alive",
    "proxy-connection",
    "te",
    "transfer-encoding",
    "upgrade",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-request-id",
    "x-envoy-external-address",
];

/// `route`'s match in short, for people: `prefix /users`.
pub(crate) fn describe(route: &Route) -> String {
    match route.r#match.as_ref().and_then(|m| m.path_specifier.as_ref()) {
        Some(PathSpecifier::Prefix(prefix)) => format!("prefix {prefix}"),
        Some(PathSpecifier::Path(path)) => format!("exact {path}"),
        Some(PathSpecifier::SafeRegex(regex)) => format!("regex {}", regex.regex),
        _ => "(another kind of match)".to_owned(),
    }
}

/// Whether `route` takes `request`, whose normalized path is `path`.
pub(crate) fn try_route(route: &Route, request: &Request, path: &str) -> Result<(), Miss> {
    let Some(route_match) = &route.r#match else {
        return Err(Miss::Unpredictable("a route without match".to_owned()));
    };
    // Every field of Envoy's match named (no `..`): one this reading does
    // not model answers Unpredictable, and one Envoy adds fails to compile.
    let RouteMatch {
        path_specifier,
        case_sensitive,
        runtime_fraction,
        headers,
        query_parameters: parameters,
        cookies,
        grpc,
        tls_context,
        dynamic_metadata,
        filter_state,
    } = route_match;
    let unmodelled = case_sensitive.is_some_and(|c| !c.value)
        || runtime_fraction.is_some()
        || !cookies.is_empty()
        || grpc.is_some()
        || tls_context.is_some()
        || !dynamic_metadata.is_empty()
        || !filter_state.is_empty();
    if unmodelled {
        return Err(Miss::Unpredictable(
            "a route match of a kind the projection never writes".to_owned(),
        ));
    }
    let path_fits = match path_specifier {
        Some(PathSpecifier::Prefix(prefix)) => path.starts_with(prefix.as_str()),
        Some(PathSpecifier::Path(exact)) => path == exact,
        Some(PathSpecifier::SafeRegex(regex)) => full_match(&regex.regex, path.as_bytes())?,
        _ => {
            return Err(Miss::Unpredictable(
                "a path match of a kind the projection never writes".to_owned(),
            ));
        }
    };
    if !path_fits {
        return Err(Miss::Failed {
            matcher: "path".to_owned(),
            why: format!("`{path}` does not fit {}", describe(route)),
        });
    }
    for header in headers {
        header_matches(header, request)?;
    }
    let query = query_parameters(request.query().unwrap_or_default());
    for parameter in parameters {
        query_parameter_matches(parameter, &query)?;
    }
    Ok(())
}

/// A header matcher, as Envoy's: an absent header matches only `present`
/// inverted; a header sent several times is no prediction for a value
/// matcher (Envoy matches it value by value, inverted unmeasured).
fn header_matches(header: &HeaderMatcher, request: &Request) -> Result<(), Miss> {
    let is_method = header.name == ":method";
    let matcher = if is_method {
        "method".to_owned()
    } else {
        format!("header {}", header.name)
    };
    if SET_BY_THE_EDGE.contains(&header.name.as_str()) || header.name.starts_with("x-envoy-") {
        return Err(Miss::Unpredictable(format!(
            "{matcher}: the edge's Envoy sets or removes this header itself before routing"
        )));
    }
    if header.treat_missing_header_as_empty {
        return Err(Miss::Unpredictable(format!(
            "{matcher}: a header match the projection never writes"
        )));
    }
    let value = if is_method {
        Some(request.method.clone())
    } else {
        let values: Vec<&str> = request.header_values(&header.name).collect();
        // Measured on Envoy 1.40: a header sent twice matches a value
        // matcher when one of its values fits (`a` then `b` fits exact `a`),
        // not on the values joined; how inversion reads that is unmeasured.
        if values.len() > 1
            && !matches!(
                header.header_match_specifier,
                Some(HeaderMatchSpecifier::PresentMatch(_))
            )
        {
            return Err(Miss::Unpredictable(format!(
                "{matcher}: the header is sent {} times, which Envoy matches value by value",
                values.len()
            )));
        }
        (!values.is_empty()).then(|| values.join(","))
    };
    let fits = match (&header.header_match_specifier, &value) {
        (Some(HeaderMatchSpecifier::PresentMatch(present)), _) => (value.is_some() == *present) != header.invert_match,
        (_, None) => false,
        (Some(HeaderMatchSpecifier::StringMatch(string)), Some(value)) => {
            string_matches(string, value).map_err(Miss::Unpredictable)? != header.invert_match
        }
        _ => {
            return Err(Miss::Unpredictable(format!(
                "{matcher}: a header match the projection never writes"
            )));
        }
    };
    if fits {
        return Ok(());
    }
    let why = match (&value, is_method) {
        (None, _) => "not sent".to_owned(),
        (Some(value), true) => format!("{value} is not {}", expected(header)),
        (Some(value), false) if header.invert_match => {
            format!("`{value}` fits {}, and the match is inverted", expected(header))
        }
        (Some(value), false) => format!("`{value}` does not fit {}", expected(header)),
    };
    Err(Miss::Failed { matcher, why })
}

/// What a header matcher asks for, for people.
fn expected(header: &HeaderMatcher) -> String {
    match &header.header_match_specifier {
        Some(HeaderMatchSpecifier::StringMatch(string)) => pattern(string),
        Some(HeaderMatchSpecifier::PresentMatch(_)) => "present".to_owned(),
        _ => "(another kind of match)".to_owned(),
    }
}

fn pattern(string: &StringMatcher) -> String {
    match &string.match_pattern {
        Some(MatchPattern::Exact(exact)) => format!("exact `{exact}`"),
        Some(MatchPattern::Prefix(prefix)) => format!("prefix `{prefix}`"),
        Some(MatchPattern::SafeRegex(regex)) => format!("regex `{}`", regex.regex),
        _ => "(another kind of match)".to_owned(),
    }
}

fn string_matches(string: &StringMatcher, value: &str) -> Result<bool, String> {
    if string.ignore_case {
        return Err("a case-insensitive match, which the projection never writes".to_owned());
    }
    match &string.match_pattern {
        Some(MatchPattern::Exact(exact)) => Ok(value == exact),
        Some(MatchPattern::Prefix(prefix)) => Ok(value.starts_with(prefix.as_str())),
        Some(MatchPattern::SafeRegex(regex)) => full_match(&regex.regex, value.as_bytes()).map_err(|miss| match miss {
            Miss::Unpredictable(why) | Miss::Failed { why, .. } => why,
        }),
        _ => Err("a string match the projection never writes".to_owned()),
    }
}

/// The query's parameters as Envoy reads them for matching: split at `&`,
/// then at the first `=` (none: an empty value), nothing decoded; the first
/// of a name is the one matched.
fn query_parameters(query: &str) -> Vec<(&str, &str)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .collect()
}

fn query_parameter_matches(parameter: &QueryParameterMatcher, query: &[(&str, &str)]) -> Result<(), Miss> {
    let matcher = format!("query {}", parameter.name);
    let value = query
        .iter()
        .find(|(name, _)| *name == parameter.name)
        .map(|(_, value)| *value);
    let Some(value) = value else {
        return Err(Miss::Failed {
            matcher,
            why: "not sent".to_owned(),
        });
    };
    let fits = match &parameter.query_parameter_match_specifier {
        Some(QueryParameterMatchSpecifier::PresentMatch(true)) => true,
        Some(QueryParameterMatchSpecifier::StringMatch(string)) => {
            string_matches(string, value).map_err(Miss::Unpredictable)?
        }
        _ => {
            return Err(Miss::Unpredictable(format!(
                "{matcher}: a match the projection never writes"
            )));
        }
    };
    if fits {
        return Ok(());
    }
    let why = match &parameter.query_parameter_match_specifier {
        Some(QueryParameterMatchSpecifier::StringMatch(string)) => {
            format!("`{value}` (its first value) does not fit {}", pattern(string))
        }
        _ => "no match".to_owned(),
    };
    Err(Miss::Failed { matcher, why })
}

/// Whether the whole of `text` fits `regex`, read as the edge's RE2 reads
/// it: on bytes, `\d \s \w \b` ASCII. The RE2 guard admits only expressions
/// Rust's `regex` reads the same way; one it cannot read is no prediction.
pub(crate) fn full_match(regex: &str, text: &[u8]) -> Result<bool, Miss> {
    let anchored = format!(r"\A(?:{})\z", byte_escapes(regex));
    let compiled = regex::bytes::RegexBuilder::new(&anchored)
        .unicode(false)
        .build()
        .map_err(|e| Miss::Unpredictable(format!("regex `{regex}` does not read as RE2 reads it: {e}")))?;
    Ok(compiled.is_match(text))
}

/// `regex` with each `\x{HH}` of at most `\x{FF}` written `\xHH`. RE2 in
/// Latin-1 reads both as the byte; Rust's `regex`, even without Unicode,
/// reads the braced form as a code point (its UTF-8 bytes, and an error in
/// a class), the two-digit form as the byte. Found by `tests/re2_matching.rs`
/// (`\x{e9}` fitted the byte E9 for RE2, not for `regex`).
fn byte_escapes(regex: &str) -> std::borrow::Cow<'_, str> {
    if !regex.contains("\\x{") {
        return std::borrow::Cow::Borrowed(regex);
    }
    let mut out = String::with_capacity(regex.len());
    let mut rest = regex;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let braced = rest.strip_prefix("\\x{").and_then(|tail| {
            let end = tail.find('}')?;
            let value = u32::from_str_radix(&tail[..end], 16).ok().filter(|v| *v <= 0xFF)?;
            Some((value, &tail[end + 1..]))
        });
        match braced {
            Some((value, tail)) => {
                out.push_str(&format!("\\x{value:02X}"));
                rest = tail;
            }
            // Any other escape, `\\` included, is copied whole: its next
            // character is never the start of another escape.
            None => {
                let next = rest[1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&rest[..1 + next]);
                rest = &rest[1 + next..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braced_byte_escapes_are_written_as_the_bytes_re2_reads() {
        assert_eq!(byte_escapes(r"a\x{e9}[\x{80}-\x{ff}]"), r"a\xE9[\x80-\xFF]");
        assert_eq!(byte_escapes(r"\\x{e9}"), r"\\x{e9}", "an escaped backslash, then text");
        assert_eq!(byte_escapes(r"\x{100}"), r"\x{100}", "above a byte: as written");
        assert!(full_match(r"\x{e9}", b"\xe9").ok().unwrap());
        assert!(full_match(r"[\x{80}-\x{ff}]+", b"\x80\xff").ok().unwrap());
    }

    #[test]
    fn a_regex_matches_the_whole_text_on_bytes_with_ascii_classes() {
        let fits = |regex: &str, text: &str| full_match(regex, text.as_bytes()).ok().unwrap();
        assert!(fits("/v[0-9]+", "/v12"));
        assert!(!fits("/v[0-9]+", "/v12/x"), "anchored at both ends");
        assert!(fits("a|b", "b"), "the alternation is grouped before anchoring");
        assert!(!fits(r"\d", "٣"), r"\d is ASCII");
        assert!(fits("..", "é"), "`.` is one byte");
    }

    #[test]
    fn the_query_is_split_without_decoding_and_a_name_alone_has_an_empty_value() {
        assert_eq!(
            query_parameters("a=1&b&&c=x=y&a=2&%41=3"),
            [("a", "1"), ("b", ""), ("c", "x=y"), ("a", "2"), ("%41", "3")]
        );
    }
}
