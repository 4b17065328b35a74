//! The form in which the edge's Envoy compares request paths with routes.
//!
//! With the settings Envoy recommends for untrusted traffic
//! (HttpConnectionManager `normalize_path: true`, `merge_slashes: true`,
//! `path_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT`) Envoy rewrites
//! a request's path before route matching, then compares it with each
//! route's path as written, character by character. A route written in any
//! other form can never match: requests for `/%7Euser` arrive at the routes
//! as `/~user`. So the projection writes every route path in that normal
//! form, [`edge_normal_form`].
//!
//! Why this is our own code: `normalize_path` is Chromium's URL path
//! canonicalizer (a copy of it inside Envoy) with Envoy's own steps around
//! it, and no crate reproduces that. The `url` crate follows the WHATWG URL
//! standard, which decodes no escape (it keeps `%7E`), and RFC 3986
//! normalizers neither turn `%5C` into a slash nor read `..;` as `..`.
//! What follows was measured on Envoy 1.40 (see docs/envoy.md, "Route
//! paths", and `tests/integration/path_normal_form.rs`), step by step:
//!
//! 1. `%2F` and `%5C` (either case) are unescaped to `/` and `\`; Envoy then
//!    redirects the client to the normalized path, which it requests again,
//!    so that path goes through every step once more.
//! 2. A segment that starts with `.;` or `..;` (literal dots) loses its
//!    parameters: it becomes `.` or `..`. Escaped dots (`%2E%2E;`) are not
//!    taken for dots by this step.
//! 3. Chromium's canonicalizer: `\` becomes `/`; escapes of unreserved
//!    characters (`A-Z a-z 0-9 - . _ ~`) are decoded, every other escape is
//!    kept as written, hex case included (`%2a` stays `%2a`); the
//!    characters `` ^ ` { | } `` are escaped (`%5E`, `%60`, `%7B`, `%7C`,
//!    `%7D`; a request may hold them, a route never does); dot segments,
//!    with `%2E` counting as a dot (`.`, `%2E`, `..`, `.%2E`, `%2e%2E`, …),
//!    are removed, `..` taking the segment before it, never above the root.
//! 4. Runs of slashes become one; a path of slashes only becomes `//`.
//!
//! Paths with `%00` are refused by Envoy (400): no request ever reaches a
//! route holding one. Such a route is still written (in normal form), since
//! it is valid, but nothing matches it.

/// Which kind of match a path is: it decides whether the path's last segment
/// is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// A path prefix: requests may go on after it, within its last segment
    /// too (`/a/%2E` begins `/a/.b`).
    Prefix,
    /// A whole path.
    Exact,
}

/// The form Envoy compares request paths with, for a route path `path` of
/// the proto's character set (RFC 3986 path characters and `%XX` escapes).
/// Bytes outside it are copied unchanged.
///
/// - [`MatchKind::Exact`]: the path Envoy routes a request for `path` as,
///   normalized until it no longer changes. Envoy itself normalizes once
///   (twice when it redirected), which differs only for a segment like
///   `%2E%2E;`: one pass leaves `..;`, the next resolves it. Written once
///   more, such a path would be one no normalized request ever had, so the
///   route takes the resolved form, which requests spelling the segment
///   with literal dots (`/a/..;/b`) reach.
/// - [`MatchKind::Prefix`]: the normal form of the paths the prefix begins.
///   It is normalized as if followed by an ordinary character, which is then
///   taken off again, so that its last segment is not taken for complete:
///   `/a/%2E` becomes `/a/.` (matching `/a/.b`), not `/a/`. Where every
///   continuation is removed as a dot segment (`/a/b/..;`), the prefix is
///   what is left (`/a/`). Envoy's `//` for a path of slashes is `/` here,
///   since every normalized path begins with `/`.
///
/// ```
/// use aether_projection::{MatchKind, edge_normal_form};
///
/// assert_eq!(edge_normal_form("/%7Euser", MatchKind::Prefix), "/~user");
/// assert_eq!(edge_normal_form("/a/%2E%2E/b", MatchKind::Exact), "/b");
/// assert_eq!(edge_normal_form("/a/%2E", MatchKind::Prefix), "/a/.");
/// assert_eq!(edge_normal_form("/a/%2E", MatchKind::Exact), "/a/");
/// assert_eq!(edge_normal_form("/a%2a", MatchKind::Exact), "/a%2a");
/// // Characters a route never holds, as a request's path may.
/// assert_eq!(edge_normal_form("/a{b}|^`", MatchKind::Exact), "/a%7Bb%7D%7C%5E%60");
/// ```
pub fn edge_normal_form(path: &str, kind: MatchKind) -> String {
    if is_plain(path) {
        return path.to_owned();
    }
    match kind {
        MatchKind::Exact => to_utf8(fixed_point(path.as_bytes().to_vec())),
        MatchKind::Prefix => {
            // Not a hex digit, dot, slash or `;`: nothing it follows can
            // read it as part of an escape or of a dot segment's name.
            const CONTINUATION: u8 = b'x';
            let mut continued = path.as_bytes().to_vec();
            continued.push(CONTINUATION);
            let mut normal = fixed_point(continued);
            if normal.last() == Some(&CONTINUATION) {
                normal.pop();
            }
            if normal == b"//" {
                normal.truncate(1);
            }
            to_utf8(normal)
        }
    }
}

/// Characters Envoy escapes in a request path (`/a{b` is routed as
/// `/a%7Bb`), measured on Envoy 1.40 over every printable ASCII character.
/// A route's path never holds one (the proto's character set); a request's
/// may, and `aetherctl explain` routes requests in this form too.
const ESCAPED_BY_ENVOY: &[u8] = b"^`{|}";

/// Whether no step can change `path`, of either kind: it has no escape, no
/// `\`, no `;`, no character Envoy escapes, no empty segment and no dot
/// segment (not even a last one, which a prefix keeps). Most route paths are
/// such (`/users`), and skip the copies of the steps.
fn is_plain(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains(['%', '\\', ';', '^', '`', '{', '|', '}'])
        && !path.contains("//")
        && !path.split('/').any(|segment| segment == "." || segment == "..")
}

/// Steps 1 to 4 until the path no longer changes. It ends: after the first
/// pass the path begins with `/` and holds no `\`, and from then on every
/// step that changes it makes it shorter.
fn fixed_point(mut path: Vec<u8>) -> Vec<u8> {
    loop {
        let next = merge_slashes(canonicalize(&strip_dot_segment_parameters(unescape_slashes(&path))));
        if next == path {
            return path;
        }
        path = next;
    }
}

/// Step 1: `%2F` to `/`, `%5C` to `\`, either hex case.
fn unescape_slashes(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        match escaped(path, i) {
            Some(b'/') => out.push(b'/'),
            Some(b'\\') => out.push(b'\\'),
            _ => {
                out.push(path[i]);
                i += 1;
                continue;
            }
        }
        i += 3;
    }
    out
}

/// Step 2: a segment (between `/`s; `\` does not count here) starting with
/// `.;` or `..;` keeps only its dots.
fn strip_dot_segment_parameters(path: Vec<u8>) -> Vec<u8> {
    if !path.windows(2).any(|pair| pair == b".;") {
        return path;
    }
    let segments: Vec<&[u8]> = path
        .split(|&b| b == b'/')
        .map(|segment| {
            if segment.starts_with(b"..;") {
                &segment[..2]
            } else if segment.starts_with(b".;") {
                &segment[..1]
            } else {
                segment
            }
        })
        .collect();
    segments.join(&b'/')
}

/// Step 3, Chromium's path canonicalizer, on the proto's character set
/// (which holds nothing Chromium escapes, and no `%` without two hex digits).
fn canonicalize(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 1);
    if !matches!(path.first(), Some(b'/' | b'\\')) {
        out.push(b'/');
    }
    let mut i = 0;
    while i < path.len() {
        if let Some(dot) = dot_len(path, i) {
            // Only a dot right after a slash can begin a dot segment.
            if out.last() == Some(&b'/') {
                match after_dot(path, i + dot) {
                    Dots::Current(consumed) => {
                        i += dot + consumed;
                        continue;
                    }
                    Dots::Parent(consumed) => {
                        back_up_one_segment(&mut out);
                        i += dot + consumed;
                        continue;
                    }
                    Dots::Name => {}
                }
            }
            out.push(b'.');
            i += dot;
            continue;
        }
        match (path[i], escaped(path, i)) {
            (b'\\', _) => out.push(b'/'),
            (byte, _) if ESCAPED_BY_ENVOY.contains(&byte) => out.extend(format!("%{byte:02X}").bytes()),
            (_, Some(byte)) if is_unreserved(byte) => {
                out.push(byte);
                i += 3;
                continue;
            }
            // Any other escape is copied as written: `%`, then its two hex
            // digits as ordinary characters on the next turns.
            (byte, _) => out.push(byte),
        }
        i += 1;
    }
    out
}

/// What a dot at the start of a segment turns out to be, with how many
/// input bytes after the dot(s) it takes (the slash that ends it).
enum Dots {
    /// `.`: the segment goes.
    Current(usize),
    /// `..`: it goes, and takes the segment before it.
    Parent(usize),
    /// The start of a name (`.well-known`, `..b`, `...`).
    Name,
}

/// Classifies the segment whose first dot ends at `i`.
fn after_dot(path: &[u8], i: usize) -> Dots {
    match path.get(i) {
        None => return Dots::Current(0),
        Some(b'/' | b'\\') => return Dots::Current(1),
        Some(_) => {}
    }
    if let Some(second) = dot_len(path, i) {
        match path.get(i + second) {
            None => return Dots::Parent(second),
            Some(b'/' | b'\\') => return Dots::Parent(second + 1),
            Some(_) => {}
        }
    }
    Dots::Name
}

/// The length of the dot at `i`: 1 for `.`, 3 for `%2E` or `%2e`.
fn dot_len(path: &[u8], i: usize) -> Option<usize> {
    if path.get(i) == Some(&b'.') {
        Some(1)
    } else if escaped(path, i) == Some(b'.') {
        Some(3)
    } else {
        None
    }
}

/// Drops the last segment of `out`, which ends in a slash, keeping the
/// slash before it; at the root, nothing.
fn back_up_one_segment(out: &mut Vec<u8>) {
    let before_last = out.len().saturating_sub(1);
    let keep = out[..before_last]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(1, |slash| slash + 1);
    out.truncate(keep);
}

/// Step 4: runs of slashes become one; a path of slashes only, `//`, as
/// Envoy writes it.
fn merge_slashes(path: Vec<u8>) -> Vec<u8> {
    if !path.windows(2).any(|pair| pair == b"//") {
        return path;
    }
    if path.iter().all(|&b| b == b'/') {
        return b"//".to_vec();
    }
    let mut out = Vec::with_capacity(path.len());
    for &byte in &path {
        if !(byte == b'/' && out.last() == Some(&b'/')) {
            out.push(byte);
        }
    }
    out
}

/// The byte the escape at `i` stands for, if `path[i..]` starts with one.
fn escaped(path: &[u8], i: usize) -> Option<u8> {
    match path.get(i..i + 3)? {
        [b'%', high, low] => Some(hex(*high)? << 4 | hex(*low)?),
        _ => None,
    }
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit)
        .to_digit(16)
        .and_then(|value| u8::try_from(value).ok())
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

/// Every step cuts and joins only at ASCII bytes and decodes escapes only to
/// ASCII, so valid UTF-8 in gives valid UTF-8 out; the lossy conversion is
/// never lossy.
fn to_utf8(path: Vec<u8>) -> String {
    String::from_utf8(path).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
