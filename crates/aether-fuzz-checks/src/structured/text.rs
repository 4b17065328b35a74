//! The strings of the structured inputs: pieces at the edges of the rules,
//! joined and repeated within one budget per input.

use arbitrary::Arbitrary;

/// Strings at the edges of the rules: valid and invalid hosts, paths,
/// service and secret names, regular expressions, methods, header and query
/// parameter names and values. Append only: corpus files index into this.
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
    "^/users/[0-9]+$",
    "[",
    "(a|b)*",
    "a{1000}",
    "(?i)",
    "\\",
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "get",
    "x-env",
    "X-Env",
    ":method",
    "!#$%&'*+-.^_`|~",
    "canary",
    "Bearer ",
    "\t",
    "\r\n",
    "\u{7f}",
    "version",
    "&",
    "=",
    "15s",
    "0s",
    "1m30s",
    "1.5s",
    "99999h99999m99999s99999ms",
    "host",
    "connection",
    "transfer-encoding",
    "5xx",
    "connect-failure",
    "refused-stream",
    "retriable-status-codes",
    "http",
    "https",
    "/v2",
    "new.example.com",
];

/// A string: a piece, two strings joined, a piece repeated, or anything.
#[derive(Debug, Arbitrary)]
pub enum Text {
    Piece(u8),
    Join(Box<Text>, Box<Text>),
    /// Up to `MAX_TEXT` characters of copies: past every length limit.
    Repeat(u8, u16),
    Raw(String),
}

/// Past every length limit of a spec (the tests compare it with the rules
/// model's longest), so a string this long is as good as a longer one:
/// building stops here.
pub(super) const MAX_TEXT: usize = 4200;

/// What repetition may add to one input (a spec, or a set of objects): the characters `Repeat` pushes,
/// and the bytes of the copies of the last route. Enough for three strings
/// past the longest limit, or 130 copies of a route of 1 KiB; without it a
/// few hundred bytes of input built megabytes (a median of 54 KB per input
/// of the projection's corpus, 13 MB at most), and every execution spent its
/// time copying and scanning them rather than on the rules.
pub(super) const REPEAT_BUDGET: usize = 3 * MAX_TEXT + 130 * 1024;

/// The repetition left to the input being built (see [`REPEAT_BUDGET`]).
pub(super) struct Budget(usize);

impl Budget {
    pub(super) fn new() -> Self {
        Budget(REPEAT_BUDGET)
    }

    pub(super) fn text(&mut self, text: &Text) -> String {
        let mut out = String::new();
        self.text_into(text, &mut out);
        out
    }

    pub(super) fn texts(&mut self, texts: &[Text]) -> Vec<String> {
        texts.iter().map(|text| self.text(text)).collect()
    }

    pub(super) fn text_into(&mut self, text: &Text, out: &mut String) {
        if out.len() > MAX_TEXT {
            return;
        }
        match text {
            Text::Piece(i) => out.push_str(piece(*i)),
            Text::Join(a, b) => {
                self.text_into(a, out);
                self.text_into(b, out);
            }
            Text::Repeat(i, times) => {
                let piece = piece(*i);
                for _ in 0..usize::from(*times) % (MAX_TEXT + 1) {
                    if out.len() > MAX_TEXT || self.0 < piece.len() {
                        break;
                    }
                    self.0 -= piece.len();
                    out.push_str(piece);
                }
            }
            Text::Raw(s) => out.push_str(s),
        }
    }

    /// How many copies of a route of `size` bytes are left, of `wanted`.
    pub(super) fn copies(&mut self, wanted: usize, size: usize) -> usize {
        let copies = wanted.min(self.0 / size.max(1));
        self.0 -= copies * size;
        copies
    }
}

pub(super) fn piece(i: u8) -> &'static str {
    PIECES[usize::from(i) % PIECES.len()]
}
