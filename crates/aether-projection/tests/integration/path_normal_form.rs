//! The normal form of route paths (`edge_normal_form`), against what Envoy
//! 1.40 was measured to do, and its properties over random valid paths.

use std::sync::LazyLock;

use aether_api::config::v1::{RouteMatch, route_match::Path};
use aether_api::validate::Validate;
use aether_projection::{MatchKind, edge_normal_form};
use aether_rules::RuleKind;
use proptest::prelude::*;

/// One row per case: the route path as written; the path Envoy routed a
/// request for it as (`None`: Envoy answered 400), measured on Envoy 1.40
/// with `normalize_path`, `merge_slashes` and `UNESCAPE_AND_REDIRECT`,
/// following its redirect; the emitted exact path; the emitted prefix.
/// How it was measured: docs/envoy.md, "Route paths".
const MEASURED: &[(&str, Option<&str>, &str, &str)] = &[
    // Escapes of unreserved characters are decoded, in either hex case.
    ("/%7Euser", Some("/~user"), "/~user", "/~user"),
    ("/%7euser", Some("/~user"), "/~user", "/~user"),
    ("/%41BC", Some("/ABC"), "/ABC", "/ABC"),
    ("/%61bc", Some("/abc"), "/abc", "/abc"),
    ("/%2D%2E%5F", Some("/-._"), "/-._", "/-._"),
    ("/%30%39", Some("/09"), "/09", "/09"),
    // Every other escape is kept as written, hex case included.
    ("/a%2a", Some("/a%2a"), "/a%2a", "/a%2a"),
    ("/a%2A", Some("/a%2A"), "/a%2A", "/a%2A"),
    ("/a%20b", Some("/a%20b"), "/a%20b", "/a%20b"),
    ("/a%25", Some("/a%25"), "/a%25", "/a%25"),
    ("/a%25%32%35", Some("/a%2525"), "/a%2525", "/a%2525"),
    ("/%3A", Some("/%3A"), "/%3A", "/%3A"),
    ("/%3a", Some("/%3a"), "/%3a", "/%3a"),
    ("/%40", Some("/%40"), "/%40", "/%40"),
    (
        "/%21%24%26%27%28%29%2A%2B%2C%3B%3D",
        Some("/%21%24%26%27%28%29%2A%2B%2C%3B%3D"),
        "/%21%24%26%27%28%29%2A%2B%2C%3B%3D",
        "/%21%24%26%27%28%29%2A%2B%2C%3B%3D",
    ),
    ("/a%C3%A9", Some("/a%C3%A9"), "/a%C3%A9", "/a%C3%A9"),
    // Sub-delimiters, `:` and `@` are kept unescaped.
    (
        "/!$&'()*+,;=:@",
        Some("/!$&'()*+,;=:@"),
        "/!$&'()*+,;=:@",
        "/!$&'()*+,;=:@",
    ),
    // `%2E` is a dot, also in dot segments, which are removed.
    ("/a/%2E%2E/b", Some("/b"), "/b", "/b"),
    ("/a/%2e%2e/b", Some("/b"), "/b", "/b"),
    ("/a/%2e/b", Some("/a/b"), "/a/b", "/a/b"),
    ("/a/.%2E/b", Some("/b"), "/b", "/b"),
    ("/%2E%2E/a", Some("/a"), "/a", "/a"),
    ("/a/b/%2E%2E/", Some("/a/"), "/a/", "/a/"),
    // A prefix's last segment is incomplete: `/a/.` goes on as `/a/.b`.
    ("/a/%2E", Some("/a/"), "/a/", "/a/."),
    ("/a/%2E%2E", Some("/"), "/", "/a/.."),
    ("/a/b%2E", Some("/a/b."), "/a/b.", "/a/b."),
    ("/a/%2Eb", Some("/a/.b"), "/a/.b", "/a/.b"),
    ("/a/%2E%2E%2E", Some("/a/..."), "/a/...", "/a/..."),
    // A segment starting `.;` or `..;` is a dot segment, parameters and all
    // (whatever follows in a prefix's last segment, so it is resolved too).
    ("/a/..;/b", Some("/b"), "/b", "/b"),
    ("/a/.;x/b", Some("/a/b"), "/a/b", "/a/b"),
    ("/a/b/..;x", Some("/a/"), "/a/", "/a/"),
    ("/a/x;/b", Some("/a/x;/b"), "/a/x;/b", "/a/x;/b"),
    ("/a/...;/b", Some("/a/...;/b"), "/a/...;/b", "/a/...;/b"),
    // ... but only with literal dots: Envoy's one pass leaves `..;`, which
    // the next resolves; the route takes the resolved form (see `ONE_PASS`).
    ("/a/%2E%2E;/b", Some("/a/..;/b"), "/b", "/b"),
    // `%5C` is a slash (Envoy redirects to the unescaped path).
    ("/a%5Cb", Some("/a/b"), "/a/b", "/a/b"),
    ("/a%5cb", Some("/a/b"), "/a/b", "/a/b"),
    ("/a%5C%2E%2E%5Cb", Some("/b"), "/b", "/b"),
    ("/a%5C", Some("/a/"), "/a/", "/a/"),
    ("/a%5C..;/b", Some("/b"), "/b", "/b"),
    // A path of slashes only is `//` to Envoy; every path begins with `/`.
    ("/%5C", Some("//"), "//", "/"),
    ("/%5C%5C", Some("//"), "//", "/"),
    // Also when what follows is removed: every continuation gives `//` or
    // `/` and more.
    ("/%5C%5C/..;", Some("//"), "//", "/"),
    // `%2F` likewise (the proto refuses it: see `INVALID`).
    ("/a%2Fb", Some("/a/b"), "/a/b", "/a/b"),
    // Envoy refuses every request with `%00`: no form of this is reachable.
    ("/a%00b", None, "/a%00b", "/a%00b"),
    ("/users", Some("/users"), "/users", "/users"),
];

/// Rows whose emitted exact path is not what Envoy's one pass made of the
/// written path, but what a second pass makes of that.
const ONE_PASS: &[&str] = &["/a/%2E%2E;/b"];
/// Rows the proto refuses; every other row is valid today.
const INVALID: &[&str] = &["/a%2Fb"];

fn valid(path: &str) -> bool {
    RouteMatch {
        path: Some(Path::Prefix(path.to_owned())),
        ..Default::default()
    }
    .validate()
    .is_ok()
}

#[test]
fn route_paths_take_the_form_envoy_routes_requests_as() {
    for &(written, routed, exact, prefix) in MEASURED {
        assert_eq!(edge_normal_form(written, MatchKind::Exact), exact, "exact {written}");
        assert_eq!(edge_normal_form(written, MatchKind::Prefix), prefix, "prefix {written}");
        assert_eq!(valid(written), !INVALID.contains(&written), "{written}");
        match routed {
            Some(routed) if ONE_PASS.contains(&written) => {
                assert_ne!(routed, exact, "{written}");
                assert_eq!(edge_normal_form(routed, MatchKind::Exact), exact, "{written}");
            }
            Some(routed) => assert_eq!(routed, exact, "{written}"),
            None => assert!(written.contains("%00"), "{written}"),
        }
    }
}

/// A path of the proto's character set, with every kind of escape, dots and
/// `;` often, no `%2F`; valid paths are drawn from these.
fn path_strategy() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        4 => "[A-Za-z0-9_~-]{1,3}",
        3 => prop::sample::select(&[".", "..", "%2E", "%2e", ";", "%5C", "%5c", "%3B", "%7E", "%41", "%00"][..])
            .prop_map(str::to_owned),
        1 => "[!$&'()*+,;=:@]",
        2 => "%[0-9A-Fa-f]{2}".prop_filter("no encoded slash", |e| !e.eq_ignore_ascii_case("%2F")),
    ];
    let segment = prop::collection::vec(atom, 1..5).prop_map(|atoms| atoms.concat());
    (prop::collection::vec(segment, 0..6), any::<bool>()).prop_map(|(segments, trailing_slash)| {
        let mut path = format!("/{}", segments.join("/"));
        if trailing_slash && !segments.is_empty() {
            path.push('/');
        }
        path
    })
}

fn valid_path_strategy() -> impl Strategy<Value = String> {
    path_strategy().prop_filter("valid by the proto", |path| valid(path))
}

/// The proto's pattern for a route path (`RouteMatch.prefix`), read from
/// the rules model.
static PATH_PATTERN: LazyLock<regex::Regex> = LazyLock::new(|| {
    let generator = aether_testing::drawn::generator();
    let source = generator
        .api()
        .message("aether.config.v1.RouteMatch")
        .and_then(|m| m.fields.iter().find(|f| f.json_name() == "prefix"))
        .and_then(|f| {
            f.rules.iter().find_map(|r| match &r.kind {
                RuleKind::Pattern(p) => Some(p.source.clone()),
                _ => None,
            })
        })
        .expect("RouteMatch.prefix has a pattern");
    regex::Regex::new(&source).expect("the proto's pattern compiles")
});

/// Whether `path` is in the proto's character set (its pattern).
fn in_character_set(path: &str) -> bool {
    PATH_PATTERN.is_match(path)
}

/// What Envoy removes as a dot segment.
fn is_dot_segment(segment: &str) -> bool {
    matches!(segment, "." | "..") || segment.starts_with(".;") || segment.starts_with("..;")
}

/// Each escape left, by the byte it stands for.
fn escaped_bytes(path: &str) -> Vec<u8> {
    path.match_indices('%')
        .map(|(i, _)| u8::from_str_radix(&path[i + 1..i + 3], 16).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn the_normal_form_is_a_fixed_point_in_the_character_set(path in valid_path_strategy()) {
        for kind in [MatchKind::Exact, MatchKind::Prefix] {
            let normal = edge_normal_form(&path, kind);
            prop_assert_eq!(&edge_normal_form(&normal, kind), &normal, "{:?} of {}", kind, path);
            prop_assert!(in_character_set(&normal), "{:?} of {}: {}", kind, path, normal);
            for byte in escaped_bytes(&normal) {
                prop_assert!(!matches!(byte, b'/' | b'\\'), "encoded slash: {:?} of {}: {}", kind, path, normal);
                let unreserved = byte.is_ascii_alphanumeric() || b"-._~".contains(&byte);
                prop_assert!(!unreserved, "undecoded: {:?} of {}: {}", kind, path, normal);
            }
            // Envoy writes a path of slashes only as `//`: an exact route
            // for one (`/%5C`) must say so to be reached.
            prop_assert!(!normal.contains("//") || (kind == MatchKind::Exact && normal == "//"), "{:?} of {}: {}", kind, path, normal);
            let segments: Vec<&str> = normal.split('/').skip(1).collect();
            // A prefix's last segment goes on in the request (`/a/.` in `/a/.b`).
            let complete = match kind {
                MatchKind::Exact => &segments[..],
                MatchKind::Prefix => &segments[..segments.len() - 1],
            };
            prop_assert!(!complete.iter().any(|s| is_dot_segment(s)), "{:?} of {}: {}", kind, path, normal);
        }
    }

    /// Whatever a request adds to a prefix within its last segment, the path
    /// it is routed as begins with the emitted prefix; and the emitted prefix
    /// so continued is a normal path, so some request reaches the route.
    #[test]
    fn a_prefix_begins_every_path_that_continues_it(path in valid_path_strategy(), more in "[A-Za-z0-9_~-]{1,4}") {
        let prefix = edge_normal_form(&path, MatchKind::Prefix);
        let continued = edge_normal_form(&format!("{path}{more}"), MatchKind::Exact);
        prop_assert!(continued.starts_with(&prefix), "{} + {}: {} under {}", path, more, continued, prefix);
        let request = format!("{prefix}{more}");
        prop_assert_eq!(edge_normal_form(&request, MatchKind::Exact), request);
    }

    /// Paths that need no change keep their spelling, so routes written in
    /// normal form (most are) are emitted as written.
    #[test]
    fn a_path_in_normal_form_is_kept(path in valid_path_strategy()) {
        let exact = edge_normal_form(&path, MatchKind::Exact);
        if exact == path {
            prop_assert_eq!(edge_normal_form(&path, MatchKind::Prefix), path);
        }
    }
}
