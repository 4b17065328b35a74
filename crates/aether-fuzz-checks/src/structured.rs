//! An `Arbitrary` mirror of `VirtualHostSpec`, for the validate target.
//!
//! Random bytes rarely decode into a spec, and a spec of random strings is
//! rarely valid, so the fuzzer would mostly see the first violation. Here
//! every input builds a spec, and its strings are drawn from [`PIECES`] (the
//! values at the edges of each rule, as the fixtures hold them), joined,
//! repeated to the length limits, or arbitrary; so valid specs, and specs one
//! rule away from valid, are common.

use aether_api::config::v1::{
    HeaderMatch, HeaderModifier, HttpRoute, QueryParamMatch, RouteBackend, RouteMatch, RouteRedirect, RouteRetry,
    RouteRewrite, VirtualHostSpec, VirtualHostTls, WeightedBackend, header_match, query_param_match, route_match::Path,
    route_redirect, route_rewrite,
};
use arbitrary::Arbitrary;
use prost::Message;

use crate::bounds;

mod text;

use text::Budget;
pub use text::{PIECES, Text};

/// The provider number: mostly a named one, sometimes any.
#[derive(Debug, Arbitrary)]
pub enum Provider {
    Named(u8),
    Number(i32),
}

#[derive(Debug, Arbitrary)]
pub enum ArbitraryPath {
    Prefix(Text),
    Exact(Text),
    Regex(Text),
}

#[derive(Debug, Arbitrary)]
pub enum HeaderValue {
    Exact(Text),
    Prefix(Text),
    Regex(Text),
    Present(bool),
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryHeader {
    pub name: Text,
    /// `None`: the required value missing.
    pub value: Option<HeaderValue>,
    pub invert: bool,
}

#[derive(Debug, Arbitrary)]
pub enum QueryValue {
    Exact(Text),
    Regex(Text),
    Present(bool),
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryQueryParam {
    pub name: Text,
    pub value: Option<QueryValue>,
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryRoute {
    /// `None` and `Some(None)`: a missing match, and a match without a path.
    pub path: Option<Option<ArbitraryPath>>,
    pub backend: Option<(Text, u32)>,
    /// The rest of the match (dropped with a missing match).
    pub methods: Vec<Text>,
    pub headers: Vec<ArbitraryHeader>,
    pub query_params: Vec<ArbitraryQueryParam>,
    /// The actions beyond `backend`.
    pub actions: ArbitraryActions,
}

/// A path replacement of a rewrite or a redirect.
#[derive(Debug, Arbitrary)]
pub enum Replace {
    Prefix(Text),
    Path(Text),
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryRedirect {
    pub scheme: Text,
    pub host: Text,
    pub port: u32,
    pub replace: Option<Replace>,
    /// Mostly unset or one of the listed codes; sometimes any.
    pub status_code: u16,
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryHeaderChanges {
    pub set: Vec<(Text, Text)>,
    pub add: Vec<(Text, Text)>,
    pub remove: Vec<Text>,
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryActions {
    /// Weighted backends: service, port, weight.
    pub backends: Vec<(Text, u32, u32)>,
    pub redirect: Option<ArbitraryRedirect>,
    pub rewrite: Option<(Option<Replace>, Text)>,
    pub request_headers: Option<ArbitraryHeaderChanges>,
    pub response_headers: Option<ArbitraryHeaderChanges>,
    pub timeout: Text,
    /// Attempts, per-try timeout, conditions.
    pub retries: Option<(u8, Text, Vec<Text>)>,
}

#[derive(Debug, Arbitrary)]
pub struct ArbitrarySpec {
    pub hosts: Vec<Text>,
    pub routes: Vec<ArbitraryRoute>,
    /// Appended to `routes` this many times (at most two past the route
    /// limit), to reach that limit without its worth of input.
    pub repeat_last_route: u8,
    pub tls: Option<(Text, Provider)>,
    /// The route order: a named one (0 to 2) or any number.
    pub route_order: Provider,
}

impl ArbitrarySpec {
    /// The spec this describes.
    pub fn build(&self) -> VirtualHostSpec {
        self.build_within(&mut Budget::new())
    }

    fn build_within(&self, b: &mut Budget) -> VirtualHostSpec {
        let mut routes: Vec<HttpRoute> = self.routes.iter().map(|route| build_route(route, b)).collect();
        if let Some(last) = routes.last().cloned() {
            let most = bounds::max_items::<VirtualHostSpec>("routes") + 2;
            let copies = b.copies(usize::from(self.repeat_last_route).min(most), last.encoded_len());
            routes.extend(std::iter::repeat_n(last, copies));
        }
        VirtualHostSpec {
            hosts: b.texts(&self.hosts),
            routes,
            tls: self.tls.as_ref().map(|(secret_name, provider)| VirtualHostTls {
                secret_name: b.text(secret_name),
                provider: match provider {
                    Provider::Named(n) => bounds::declared::<VirtualHostTls>("provider", *n),
                    Provider::Number(n) => *n,
                },
            }),
            route_order: match self.route_order {
                Provider::Named(n) => bounds::declared::<VirtualHostSpec>("route_order", n),
                Provider::Number(n) => n,
            },
        }
    }
}

fn build_route(route: &ArbitraryRoute, b: &mut Budget) -> HttpRoute {
    HttpRoute {
        r#match: route.path.as_ref().map(|path| RouteMatch {
            path: path.as_ref().map(|path| match path {
                ArbitraryPath::Prefix(text) => Path::Prefix(b.text(text)),
                ArbitraryPath::Exact(text) => Path::Exact(b.text(text)),
                ArbitraryPath::Regex(text) => Path::Regex(b.text(text)),
            }),
            methods: b.texts(&route.methods),
            headers: route.headers.iter().map(|header| build_header(header, b)).collect(),
            query_params: route
                .query_params
                .iter()
                .map(|param| build_query_param(param, b))
                .collect(),
        }),
        backend: route.backend.as_ref().map(|(service, port)| RouteBackend {
            service: b.text(service),
            port: near(*port, bounds::lte::<RouteBackend>("port")),
        }),
        ..build_actions(&route.actions, b)
    }
}

/// Mostly in range, where the rule's edges are (`bound` is an `lte`).
fn near(value: u32, bound: u64) -> u32 {
    if value & 0x8000_0000 == 0 {
        let past = u32::try_from(bound + 5).expect("a uint32 bound, with room above it");
        value % past
    } else {
        value
    }
}

fn build_header_changes(changes: &ArbitraryHeaderChanges, b: &mut Budget) -> HeaderModifier {
    let mut pairs = |list: &[(Text, Text)]| {
        list.iter()
            .map(|(name, value)| aether_api::config::v1::HeaderValue {
                name: b.text(name),
                value: b.text(value),
            })
            .collect()
    };
    HeaderModifier {
        set: pairs(&changes.set),
        add: pairs(&changes.add),
        remove: b.texts(&changes.remove),
    }
}

fn build_actions(actions: &ArbitraryActions, b: &mut Budget) -> HttpRoute {
    // The unset code, then the listed ones.
    let codes = bounds::one_of::<RouteRedirect>("status_code");
    HttpRoute {
        backends: actions
            .backends
            .iter()
            .map(|(service, port, weight)| WeightedBackend {
                service: b.text(service),
                port: near(*port, bounds::lte::<WeightedBackend>("port")),
                weight: near(*weight, bounds::lte::<WeightedBackend>("weight")),
            })
            .collect(),
        redirect: actions.redirect.as_ref().map(|r| RouteRedirect {
            scheme: b.text(&r.scheme),
            host: b.text(&r.host),
            port: near(r.port, bounds::lte::<RouteRedirect>("port")),
            replace: r.replace.as_ref().map(|replace| match replace {
                Replace::Prefix(text) => route_redirect::Replace::Prefix(b.text(text)),
                Replace::Path(text) => route_redirect::Replace::Path(b.text(text)),
            }),
            status_code: if r.status_code & 0x8000 == 0 {
                match usize::from(r.status_code) % (codes.len() + 1) {
                    0 => 0,
                    i => u32::try_from(bounds::uint(&codes[i - 1])).expect("a uint32 status code"),
                }
            } else {
                u32::from(r.status_code & 0x7fff)
            },
        }),
        rewrite: actions.rewrite.as_ref().map(|(replace, host)| RouteRewrite {
            replace: replace.as_ref().map(|replace| match replace {
                Replace::Prefix(text) => route_rewrite::Replace::Prefix(b.text(text)),
                Replace::Path(text) => route_rewrite::Replace::Path(b.text(text)),
            }),
            host: b.text(host),
        }),
        request_headers: actions.request_headers.as_ref().map(|c| build_header_changes(c, b)),
        response_headers: actions.response_headers.as_ref().map(|c| build_header_changes(c, b)),
        timeout: b.text(&actions.timeout),
        retries: actions
            .retries
            .as_ref()
            .map(|(attempts, per_try_timeout, retry_on)| RouteRetry {
                attempts: u32::from(attempts % 12),
                per_try_timeout: b.text(per_try_timeout),
                retry_on: b.texts(retry_on),
            }),
        ..HttpRoute::default()
    }
}

fn build_header(header: &ArbitraryHeader, b: &mut Budget) -> HeaderMatch {
    use header_match::Value;
    HeaderMatch {
        name: b.text(&header.name),
        value: header.value.as_ref().map(|value| match value {
            HeaderValue::Exact(text) => Value::Exact(b.text(text)),
            HeaderValue::Prefix(text) => Value::Prefix(b.text(text)),
            HeaderValue::Regex(text) => Value::Regex(b.text(text)),
            HeaderValue::Present(present) => Value::Present(*present),
        }),
        invert: header.invert,
    }
}

fn build_query_param(param: &ArbitraryQueryParam, b: &mut Budget) -> QueryParamMatch {
    use query_param_match::Value;
    QueryParamMatch {
        name: b.text(&param.name),
        value: param.value.as_ref().map(|value| match value {
            QueryValue::Exact(text) => Value::Exact(b.text(text)),
            QueryValue::Regex(text) => Value::Regex(b.text(text)),
            QueryValue::Present(present) => Value::Present(*present),
        }),
    }
}

/// Namespaces and names: valid ones, and one invalid of each, which the
/// projection leaves out.
const NAMESPACES: &[&str] = &["default", "team-a", "Team_B"];
const NAMES: &[&str] = &["api", "web", "a.b", "-bad"];

/// Whether an object built here has metadata the projection accepts.
pub fn valid_metadata(object: &aether_projection::VirtualHostObject) -> bool {
    object.namespace != "Team_B" && object.name != "-bad"
}

/// A set of VirtualHost objects for the projection target.
#[derive(Debug, Arbitrary)]
pub struct ArbitraryObjects(pub Vec<ArbitraryObject>);

#[derive(Debug, Arbitrary)]
pub struct ArbitraryObject {
    pub namespace: u8,
    pub name: u8,
    /// Days after 2026-01-01, or no creation time: equal days tie, as
    /// objects created in the same second do.
    pub created_day: Option<u8>,
    pub spec: ArbitrarySpec,
}

impl ArbitraryObjects {
    /// The objects this describes, their repetition within one budget.
    pub fn build(&self) -> Vec<aether_projection::VirtualHostObject> {
        const JAN_1_2026: i64 = 1_767_225_600;
        let b = &mut Budget::new();
        self.0
            .iter()
            .map(|object| aether_projection::VirtualHostObject {
                namespace: NAMESPACES[usize::from(object.namespace) % NAMESPACES.len()].to_owned(),
                name: NAMES[usize::from(object.name) % NAMES.len()].to_owned(),
                creation_timestamp: object.created_day.map(|day| {
                    jiff::Timestamp::from_second(JAN_1_2026 + i64::from(day) * 86_400)
                        .expect("a day of 2026 is a valid timestamp")
                }),
                spec: std::sync::Arc::new(object.spec.build_within(b)),
                ..Default::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
