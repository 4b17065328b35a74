//! An `Arbitrary` mirror of `VirtualHostSpec`, for the validate target.
//!
//! Random bytes rarely decode into a spec, and a spec of random strings is
//! rarely valid, so the fuzzer would mostly see the first violation. Here
//! every input builds a spec, and its strings are drawn from [`PIECES`] (the
//! values at the edges of each rule, as the fixtures hold them), joined,
//! repeated to the length limits, or arbitrary; so valid specs, and specs one
//! rule away from valid, are common.

use aether_api::config::v1::{HttpRoute, RouteBackend, RouteMatch, VirtualHostSpec, VirtualHostTls, route_match::Path};
use arbitrary::Arbitrary;

/// Strings at the edges of the rules: valid and invalid hosts, paths,
/// service and secret names. Append only: corpus files index into this.
pub const PIECES: &[&str] = &[
    "",
    "api.example.com",
    "*.example.com",
    "*",
    "a*.example.com",
    "api.example.com:443",
    "api.example.com.",
    "API.example.com",
    "10.0.0.1",
    "[::1]",
    "xn--bcher-kva.example",
    "a",
    "-a",
    "a-",
    ".",
    "/",
    "/users",
    "/healthz",
    "//",
    "/./",
    "/../",
    "/.",
    "/..",
    "%2F",
    "%2f",
    "%41",
    "%4",
    "?q=1",
    "#frag",
    " ",
    "~!$&'()*+,;=:@",
    "svc-users",
    "svc.users",
    "svc_users",
    "example-tls",
    "é",
    "\u{0}",
];

/// A string: a piece, two strings joined, a piece repeated, or anything.
#[derive(Debug, Arbitrary)]
pub enum Text {
    Piece(u8),
    Join(Box<Text>, Box<Text>),
    /// Up to 1100 copies: past the 1024-character path limit.
    Repeat(u8, u16),
    Raw(String),
}

/// Past every length limit of a spec (1024 for a path), so a string this
/// long is as good as a longer one: building stops here, which keeps deep
/// `Join`s of `Repeat`s from making megabytes and the target fast.
const MAX_TEXT: usize = 1100;

impl Text {
    fn build(&self) -> String {
        let mut out = String::new();
        self.build_into(&mut out);
        out
    }

    fn build_into(&self, out: &mut String) {
        if out.len() > MAX_TEXT {
            return;
        }
        match self {
            Text::Piece(i) => out.push_str(piece(*i)),
            Text::Join(a, b) => {
                a.build_into(out);
                b.build_into(out);
            }
            Text::Repeat(i, times) => {
                let piece = piece(*i);
                for _ in 0..*times % 1101 {
                    if out.len() > MAX_TEXT {
                        break;
                    }
                    out.push_str(piece);
                }
            }
            Text::Raw(s) => out.push_str(s),
        }
    }
}

fn piece(i: u8) -> &'static str {
    PIECES[usize::from(i) % PIECES.len()]
}

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
}

#[derive(Debug, Arbitrary)]
pub struct ArbitraryRoute {
    /// `None` and `Some(None)`: a missing match, and a match without a path.
    pub path: Option<Option<ArbitraryPath>>,
    pub backend: Option<(Text, u32)>,
}

#[derive(Debug, Arbitrary)]
pub struct ArbitrarySpec {
    pub hosts: Vec<Text>,
    pub routes: Vec<ArbitraryRoute>,
    /// Appended to `routes` this many times (at most 130), to reach the
    /// 128-route limit without 128 routes' worth of input.
    pub repeat_last_route: u8,
    pub tls: Option<(Text, Provider)>,
}

impl ArbitrarySpec {
    /// The spec this describes.
    pub fn build(&self) -> VirtualHostSpec {
        let mut routes: Vec<HttpRoute> = self.routes.iter().map(build_route).collect();
        if let Some(last) = routes.last().cloned() {
            routes.extend(std::iter::repeat_n(last, usize::from(self.repeat_last_route.min(130))));
        }
        VirtualHostSpec {
            hosts: self.hosts.iter().map(Text::build).collect(),
            routes,
            tls: self.tls.as_ref().map(|(secret_name, provider)| VirtualHostTls {
                secret_name: secret_name.build(),
                provider: match provider {
                    Provider::Named(n) => i32::from(n % 3),
                    Provider::Number(n) => *n,
                },
            }),
            ..Default::default()
        }
    }
}

fn build_route(route: &ArbitraryRoute) -> HttpRoute {
    HttpRoute {
        r#match: route.path.as_ref().map(|path| RouteMatch {
            path: path.as_ref().map(|path| match path {
                ArbitraryPath::Prefix(text) => Path::Prefix(text.build()),
                ArbitraryPath::Exact(text) => Path::Exact(text.build()),
            }),
            ..Default::default()
        }),
        backend: route.backend.as_ref().map(|(service, port)| RouteBackend {
            service: service.build(),
            // Mostly in range, where the rule's edges are.
            port: if port & 0x8000_0000 == 0 { port % 65_540 } else { *port },
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
    /// The objects this describes.
    pub fn build(&self) -> Vec<aether_projection::VirtualHostObject> {
        const JAN_1_2026: i64 = 1_767_225_600;
        self.0
            .iter()
            .map(|object| aether_projection::VirtualHostObject {
                namespace: NAMESPACES[usize::from(object.namespace) % NAMESPACES.len()].to_owned(),
                name: NAMES[usize::from(object.name) % NAMES.len()].to_owned(),
                creation_timestamp: object.created_day.map(|day| {
                    jiff::Timestamp::from_second(JAN_1_2026 + i64::from(day) * 86_400)
                        .expect("a day of 2026 is a valid timestamp")
                }),
                spec: object.spec.build(),
                read_problems: Vec::new(),
            })
            .collect()
    }
}
