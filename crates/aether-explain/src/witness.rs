//! Requests read off a route's matchers: one that fits every matcher, and
//! near misses that break exactly one each, so that a route can be asked
//! about (by `aetherctl diff`, by the real-Envoy suite) without writing
//! requests by hand.
//!
//! ```
//! use aether_explain::witness;
//! use aether_projection::{ProjectionConfig, VirtualHostObject, project};
//!
//! let objects: Vec<VirtualHostObject> = serde_json::from_value(serde_json::json!([{
//!     "namespace": "default", "name": "api",
//!     "spec": {"hosts": ["api.example.com"], "routes": [
//!         {"match": {"prefix": "/users", "methods": ["POST"]}, "backend": {"service": "users"}}
//!     ]}
//! }])).unwrap();
//! let snapshot = project(&objects, &ProjectionConfig::default()).unwrap();
//! let config = snapshot.route_configuration().unwrap();
//! let route = &config.virtual_hosts[0].routes[0];
//! let found = witness::witnesses("api.example.com", route);
//! assert_eq!(found[0].breaks, None, "the first fits every matcher");
//! assert_eq!(found[0].request.to_string(), "POST http://api.example.com/users");
//! assert!(found.iter().any(|w| w.breaks.as_deref() == Some("method")));
//! ```

use aether_projection::envoy_route::header_matcher::HeaderMatchSpecifier;
use aether_projection::envoy_route::query_parameter_matcher::QueryParameterMatchSpecifier;
use aether_projection::envoy_route::route_match::PathSpecifier;
use aether_projection::envoy_route::{HeaderMatcher, QueryParameterMatcher, Route};
use aether_projection::{MatchKind, edge_normal_form};
use envoy_types::pb::envoy::r#type::matcher::v3::StringMatcher;
use envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern;
use regex_syntax::hir::{Class, Hir, HirKind};

use crate::request::{Request, Scheme};
use crate::routes::{self, Miss};

/// A request derived from a route, and the matcher it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    /// The request (plain HTTP).
    pub request: Request,
    /// `None` when it fits every matcher; else the one matcher it breaks,
    /// named as [`RouteResult::Failed`](crate::RouteResult::Failed) names it
    /// (`path`, `method`, `header NAME`, `query NAME`).
    pub breaks: Option<String>,
}

/// The requests of [`witnesses`], without their labels: the first fits
/// every matcher, the rest are near misses.
pub fn requests(host: &str, route: &Route) -> Vec<Request> {
    witnesses(host, route).into_iter().map(|w| w.request).collect()
}

/// A request to `host` (a `*.` wildcard is asked for as `w.` under it)
/// fitting every matcher of `route`, then near misses, each breaking one
/// matcher: the path one character off, another method, a header absent or
/// with a value that does not fit, a query parameter absent. Each is
/// checked against the matchers as [`explain`](crate::explain) reads them;
/// a request that cannot be built (a regex too hard to walk, matchers that
/// contradict each other) is left out, and with no fitting request, none.
pub fn witnesses(host: &str, route: &Route) -> Vec<Witness> {
    let host = match host.strip_prefix("*.") {
        Some(rest) => format!("w.{rest}"),
        None => host.to_owned(),
    };
    let Some(route_match) = &route.r#match else {
        return Vec::new();
    };
    let Some(path) = fitting_path(route_match.path_specifier.as_ref()) else {
        return Vec::new();
    };
    let mut base = Parts {
        method: "GET".to_owned(),
        path,
        headers: Vec::new(),
        query: Vec::new(),
    };
    let mut misses: Vec<(String, Parts)> = Vec::new();
    for header in &route_match.headers {
        if header.name == ":method" {
            let Some(method) = fitting_method(header) else {
                return Vec::new();
            };
            base.method = method;
        } else if let Some(value) = header_fit(header) {
            base.headers.extend(value.map(|v| (header.name.clone(), v)));
        } else {
            return Vec::new();
        }
    }
    for parameter in &route_match.query_parameters {
        let Some(value) = parameter_fit(parameter) else {
            return Vec::new();
        };
        base.query.push((parameter.name.clone(), value));
    }
    let fits = base.request(&host);
    if !sendable(&fits) || check(route, &fits).is_some() {
        return Vec::new();
    }
    for path in near_paths(route_match.path_specifier.as_ref(), &base.path) {
        misses.push(("path".to_owned(), Parts { path, ..base.clone() }));
    }
    for header in &route_match.headers {
        if header.name == ":method" {
            for method in METHODS {
                misses.push((
                    "method".to_owned(),
                    Parts {
                        method: (*method).to_owned(),
                        ..base.clone()
                    },
                ));
            }
            continue;
        }
        let matcher = format!("header {}", header.name);
        let without: Vec<(String, String)> = base
            .headers
            .iter()
            .filter(|(n, _)| n != &header.name)
            .cloned()
            .collect();
        misses.push((
            matcher.clone(),
            Parts {
                headers: without.clone(),
                ..base.clone()
            },
        ));
        for value in header_misses(header) {
            let mut headers = without.clone();
            headers.push((header.name.clone(), value));
            misses.push((
                matcher.clone(),
                Parts {
                    headers,
                    ..base.clone()
                },
            ));
        }
    }
    for parameter in &route_match.query_parameters {
        let matcher = format!("query {}", parameter.name);
        let without: Vec<(String, String)> = base
            .query
            .iter()
            .filter(|(n, _)| n != &parameter.name)
            .cloned()
            .collect();
        misses.push((
            matcher.clone(),
            Parts {
                query: without.clone(),
                ..base.clone()
            },
        ));
        if let Some(QueryParameterMatchSpecifier::StringMatch(string)) = &parameter.query_parameter_match_specifier
            && let Some(value) = non_fitting(string, Charset::Query)
        {
            let mut query = vec![(parameter.name.clone(), value)];
            query.extend(without);
            misses.push((matcher, Parts { query, ..base.clone() }));
        }
    }
    let mut found = vec![Witness {
        request: fits,
        breaks: None,
    }];
    // One near miss per kind of break is enough: the first that breaks it.
    for (matcher, parts) in misses {
        let request = parts.request(&host);
        let already = found.iter().any(|w| w.breaks.as_deref() == Some(matcher.as_str()));
        if !already && sendable(&request) && check(route, &request).as_deref() == Some(matcher.as_str()) {
            found.push(Witness {
                request,
                breaks: Some(matcher),
            });
        }
    }
    found
}

/// Methods tried for a near miss, HEAD last: its answer has no body.
const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"];

/// The pieces of a request being built.
#[derive(Debug, Clone)]
struct Parts {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    query: Vec<(String, String)>,
}

impl Parts {
    fn request(&self, host: &str) -> Request {
        let mut path = self.path.clone();
        for (index, (name, value)) in self.query.iter().enumerate() {
            path.push(if index == 0 { '?' } else { '&' });
            path.push_str(name);
            if !value.is_empty() {
                path.push('=');
                path.push_str(value);
            }
        }
        Request {
            server_name: None,
            method: self.method.clone(),
            scheme: Scheme::Http,
            host: host.to_owned(),
            path,
            headers: self.headers.clone(),
        }
    }
}

/// The matcher `request` fails at, per the model (`None`: it fits).
fn check(route: &Route, request: &Request) -> Option<String> {
    let routed = edge_normal_form(request.path_only(), MatchKind::Exact);
    match routes::try_route(route, request, &routed) {
        Ok(()) => None,
        Err(Miss::Failed { matcher, .. }) => Some(matcher),
        Err(Miss::Unpredictable(why)) => Some(format!("unpredictable: {why}")),
    }
}

/// Whether the request can go on the wire as written: visible ASCII only,
/// no fragment, header values without surrounding spaces.
fn sendable(request: &Request) -> bool {
    let visible = |text: &str| text.bytes().all(|b| (b'!'..=b'~').contains(&b));
    visible(&request.path)
        && request.path.starts_with('/')
        && !request.path.contains('#')
        && request.headers.iter().all(|(name, value)| {
            visible(name) && value.bytes().all(|b| (b' '..=b'~').contains(&b)) && value.trim() == value
        })
}

fn fitting_path(specifier: Option<&PathSpecifier>) -> Option<String> {
    match specifier? {
        PathSpecifier::Prefix(prefix) => Some(prefix.clone()),
        PathSpecifier::Path(exact) => Some(exact.clone()),
        PathSpecifier::SafeRegex(regex) => shortest(&regex.regex, Charset::Path),
        _ => None,
    }
}

/// Paths one character off the fitting one; [`witnesses`] keeps the first
/// the path matcher refuses.
fn near_paths(specifier: Option<&PathSpecifier>, fits: &str) -> Vec<String> {
    let mut shorter = fits.to_owned();
    shorter.pop();
    // Never a dangling escape (`/%C3%A`): cut the whole escape.
    if let Some(at) = shorter.rfind('%').filter(|at| shorter.len() - at < 3) {
        shorter.truncate(at);
    }
    let mut paths = match specifier {
        Some(PathSpecifier::Prefix(_)) => vec![shorter],
        _ => vec![format!("{fits}x"), shorter, format!("{fits}/")],
    };
    paths.retain(|p| p.starts_with('/'));
    paths
}

/// The first method of the method matcher (an exact method, or the first of
/// an alternation).
fn fitting_method(header: &HeaderMatcher) -> Option<String> {
    let Some(HeaderMatchSpecifier::StringMatch(string)) = &header.header_match_specifier else {
        return None;
    };
    match &string.match_pattern {
        Some(MatchPattern::Exact(method)) => Some(method.clone()),
        Some(MatchPattern::SafeRegex(regex)) => regex.regex.split('|').next().map(str::to_owned),
        _ => None,
    }
}

/// The value a header is sent with to fit `header` (`Some(None)`: not
/// sent); `None` when none can be built.
fn header_fit(header: &HeaderMatcher) -> Option<Option<String>> {
    match (&header.header_match_specifier, header.invert_match) {
        (Some(HeaderMatchSpecifier::PresentMatch(present)), invert) => {
            Some((*present != invert).then(|| "1".to_owned()))
        }
        (Some(HeaderMatchSpecifier::StringMatch(string)), false) => fitting(string, Charset::Header).map(Some),
        // An absent header fits no inverted value match: send one that does
        // not fit the value.
        (Some(HeaderMatchSpecifier::StringMatch(string)), true) => non_fitting(string, Charset::Header).map(Some),
        _ => None,
    }
}

/// Values of the header that break `header` (its absence is tried apart).
fn header_misses(header: &HeaderMatcher) -> Vec<String> {
    match (&header.header_match_specifier, header.invert_match) {
        (Some(HeaderMatchSpecifier::PresentMatch(_)), _) => vec!["1".to_owned()],
        (Some(HeaderMatchSpecifier::StringMatch(string)), false) => {
            non_fitting(string, Charset::Header).into_iter().collect()
        }
        (Some(HeaderMatchSpecifier::StringMatch(string)), true) => {
            fitting(string, Charset::Header).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// The value a query parameter is sent with to fit (empty: the name alone).
fn parameter_fit(parameter: &QueryParameterMatcher) -> Option<String> {
    match &parameter.query_parameter_match_specifier {
        Some(QueryParameterMatchSpecifier::PresentMatch(true)) => Some("1".to_owned()),
        Some(QueryParameterMatchSpecifier::StringMatch(string)) => fitting(string, Charset::Query),
        _ => None,
    }
}

/// A value the string matcher takes.
fn fitting(string: &StringMatcher, charset: Charset) -> Option<String> {
    match string.match_pattern.as_ref()? {
        MatchPattern::Exact(exact) => Some(exact.clone()),
        // One character more: a prefix ending in a space is still sent whole.
        MatchPattern::Prefix(prefix) => Some(format!("{prefix}1")),
        MatchPattern::SafeRegex(regex) => shortest(&regex.regex, charset),
        _ => None,
    }
}

/// A value the string matcher refuses, near the one it takes when it can.
fn non_fitting(string: &StringMatcher, charset: Charset) -> Option<String> {
    let near = fitting(string, charset).map(|fit| {
        let mut off = fit.clone();
        off.pop();
        [format!("{fit}x"), off, format!("x{fit}")]
    });
    let candidates = near
        .into_iter()
        .flatten()
        .chain(["x", "0", "-", "zz", "Z9"].map(str::to_owned));
    candidates.into_iter().find(|value| {
        !value.is_empty()
            && value.bytes().all(|b| charset.allows(b))
            && match string.match_pattern.as_ref() {
                Some(MatchPattern::Exact(exact)) => value != exact,
                Some(MatchPattern::Prefix(prefix)) => !value.starts_with(prefix.as_str()),
                Some(MatchPattern::SafeRegex(regex)) => {
                    matches!(routes::full_match(&regex.regex, value.as_bytes()), Ok(false))
                }
                _ => false,
            }
    })
}

/// Where a string is sent, which decides the bytes a regex's classes are
/// drawn from.
#[derive(Debug, Clone, Copy)]
enum Charset {
    Path,
    Header,
    Query,
}

impl Charset {
    /// The bytes a class is drawn from, best first: none that the edge
    /// rewrites (`.`, `/` and `%` in a path: dot segments, merged slashes,
    /// escapes) or that ends the string (`&`, `#`).
    fn preferred(self) -> &'static [u8] {
        match self {
            Charset::Path => b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_~!$'()*+,;=:@",
            Charset::Header => {
                b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_~.!$'()*+,;=:@/&#%?[]{}<>|^`\"\\"
            }
            Charset::Query => b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_~.!$'()*+,;:@/",
        }
    }

    fn allows(self, byte: u8) -> bool {
        match self {
            Charset::Path => (b'!'..=b'~').contains(&byte) && !b"?#".contains(&byte),
            Charset::Header => (b'!'..=b'~').contains(&byte),
            Charset::Query => (b'!'..=b'~').contains(&byte) && !b"&#=".contains(&byte),
        }
    }
}

/// The longest string built for a regex: beyond it, no witness.
const MAX_WITNESS: usize = 4096;

/// A shortest string the whole of which `regex` matches, drawn from
/// `charset`, checked with the model's own matcher; `None` when the walk
/// finds none.
fn shortest(regex: &str, charset: Charset) -> Option<String> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(regex)
        .ok()?;
    let text = String::from_utf8(walk(&hir, charset)?).ok()?;
    // A path starts with `/`: a regex that does not ask for one may still
    // take one more character in front.
    let candidates = match charset {
        Charset::Path if !text.starts_with('/') => vec![format!("/{text}")],
        _ => vec![text],
    };
    candidates
        .into_iter()
        .find(|text| matches!(routes::full_match(regex, text.as_bytes()), Ok(true)))
}

fn walk(hir: &Hir, charset: Charset) -> Option<Vec<u8>> {
    match hir.kind() {
        // Anchors and word boundaries add nothing; the check afterwards
        // refuses a string they would not let through.
        HirKind::Empty | HirKind::Look(_) => Some(Vec::new()),
        HirKind::Literal(literal) => Some(literal.0.to_vec()),
        HirKind::Class(Class::Bytes(class)) => charset
            .preferred()
            .iter()
            .find(|b| class.ranges().iter().any(|r| (r.start()..=r.end()).contains(b)))
            .map(|b| vec![*b]),
        HirKind::Class(Class::Unicode(class)) => charset
            .preferred()
            .iter()
            .find(|b| {
                class
                    .ranges()
                    .iter()
                    .any(|r| (r.start()..=r.end()).contains(&char::from(**b)))
            })
            .map(|b| vec![*b]),
        HirKind::Repetition(repetition) => {
            let one = walk(&repetition.sub, charset)?;
            let times = usize::try_from(repetition.min).ok()?;
            (one.len().saturating_mul(times) <= MAX_WITNESS).then(|| one.repeat(times))
        }
        HirKind::Capture(capture) => walk(&capture.sub, charset),
        HirKind::Concat(parts) => {
            let mut out = Vec::new();
            for part in parts {
                out.extend(walk(part, charset)?);
                if out.len() > MAX_WITNESS {
                    return None;
                }
            }
            Some(out)
        }
        HirKind::Alternation(choices) => choices
            .iter()
            .filter_map(|choice| walk(choice, charset))
            .min_by_key(Vec::len),
    }
}

#[cfg(test)]
#[path = "witness_tests.rs"]
mod tests;
