//! Random regular expressions in the syntax the guard reads (and some it
//! refuses), for the tests that compare the guard with RE2 and with Envoy.
//! Deterministic: a seed gives the same expressions on every run.

/// A stream of random expressions: literals, escapes, classes (Perl,
/// POSIX, ranges, non-ASCII), assertions, groups (capturing, named, with
/// flags), alternations and every kind of repetition, nested three deep;
/// and, [aimed](Self::near_limits), the same grammar with productions at
/// each limit RE2 and Envoy apply.
pub struct Expressions {
    rng: Rng,
    aimed: bool,
}

impl Expressions {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng(seed),
            aimed: false,
        }
    }

    /// The stream for `seed`, aimed at RE2's limits: nested counted
    /// repetitions whose counts multiply to about 1000 (under `{0}`,
    /// `{0,0}`, `{n,}`, `?`, `*` too), counts about 1000, empty repeats,
    /// programs about Envoy's 100, deep nesting, non-ASCII text and
    /// `\x{..}` up to and past `\x{10FFFF}`, and syntax that RE2 and Rust
    /// read differently or one of them refuses.
    pub fn near_limits(seed: u64) -> Self {
        Self {
            rng: Rng(seed),
            aimed: true,
        }
    }

    /// The next expression.
    pub fn next_expression(&mut self) -> String {
        if !self.aimed {
            return expression(&mut self.rng, 3, false);
        }
        let rng = &mut self.rng;
        match rng.below(10) {
            0..=2 => expression(rng, 3, true),
            3 | 4 => nested_counts(rng),
            5 => near_program_size(rng),
            6 => deep(rng),
            7 => format!("^{}$", expression(rng, 2, true)),
            _ => (0..=rng.below(3)).map(|_| limit_atom(rng)).collect(),
        }
    }
}

/// A small deterministic generator (SplitMix64): the same expressions on
/// every run, so a failure names one that stays failing.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const LITERALS: &[&str] = &[
    "a",
    "b",
    "k",
    "s",
    "z",
    "A",
    "K",
    "S",
    "0",
    "9",
    "/",
    "-",
    "_",
    "~",
    "%",
    "=",
    ",",
    ":",
    "@",
    "\\.",
    "\\*",
    "\\+",
    "\\?",
    "\\(",
    "\\)",
    "\\[",
    "\\]",
    "\\{",
    "\\}",
    "\\|",
    "\\^",
    "\\$",
    "\\\\",
    "\\/",
    "\\-",
    "\\x41",
    "\\x7f",
    "\\x{e9}",
    "\\xff",
    "\\x{2603}",
    "\\t",
    "\\n",
    "\\r",
    "\\f",
    "\\v",
    "\\a",
];
const CLASS_ITEMS: &[&str] = &[
    "a",
    "k",
    "s",
    "Z",
    "0",
    "-",
    "_",
    ".",
    "/",
    "a-z",
    "A-Z",
    "0-9",
    "a-f",
    "j-t",
    "K-S",
    "!-/",
    "\\x00-\\x1f",
    "\\x{80}-\\x{ff}",
    "\\xe9-\\xff",
    "\\x{a0}-\\x{bf}",
    "\\x{100}-\\x{17f}",
    "\\d",
    "\\D",
    "\\s",
    "\\S",
    "\\w",
    "\\W",
    "[:alpha:]",
    "[:^digit:]",
    "[:punct:]",
    "[:upper:]",
    "\\n",
    "\\]",
    "\\[",
    "\\^",
];
const OTHER_ATOMS: &[&str] = &[
    ".", "\\d", "\\D", "\\s", "\\S", "\\w", "\\W", "\\b", "\\B", "^", "$", "\\A", "\\z",
];
/// Constructs the guard refuses, mixed in so that refusals are exercised.
const REFUSED: &[&str] = &[
    "\\pL",
    "\\p{Greek}",
    "[a[b]]",
    "[a-z&&b-c]",
    "\\<",
    "\\b{end}",
    "(?x)a",
    "\\u0041",
    "(?<n>a)",
    "a{ 2}",
    "a{,2}",
    "(?-u:\\w)",
    "a**",
];
const FLAGS: &[&str] = &["i", "s", "m", "U", "-i", "is", "i-s", "-m"];

fn class(rng: &mut Rng) -> String {
    let mut out = String::from("[");
    if rng.below(3) == 0 {
        out.push('^');
    }
    for _ in 0..=rng.below(4) {
        out.push_str(rng.pick(CLASS_ITEMS));
    }
    out.push(']');
    out
}

fn atom(rng: &mut Rng, depth: usize, aimed: bool) -> String {
    if aimed && rng.below(4) == 0 {
        return limit_atom(rng);
    }
    match rng.below(if depth == 0 { 4 } else { 9 }) {
        0 | 1 => rng.pick(LITERALS).to_owned(),
        2 => class(rng),
        3 => rng.pick(OTHER_ATOMS).to_owned(),
        4 => format!("({})", expression(rng, depth - 1, aimed)),
        5 => format!("(?:{})", expression(rng, depth - 1, aimed)),
        6 => format!("(?{}:{})", rng.pick(FLAGS), expression(rng, depth - 1, aimed)),
        7 => format!("(?P<g{}>{})", rng.below(1000), expression(rng, depth - 1, aimed)),
        _ => {
            if rng.below(8) == 0 {
                rng.pick(REFUSED).to_owned()
            } else {
                format!("(?{})", rng.pick(FLAGS))
            }
        }
    }
}

fn repeated(rng: &mut Rng, depth: usize, aimed: bool) -> String {
    let atom = atom(rng, depth, aimed);
    let op = if aimed && rng.below(3) == 0 {
        count_op(rng)
    } else {
        plain_op(rng)
    };
    let lazy = if !op.is_empty() && rng.below(4) == 0 { "?" } else { "" };
    // A flag group alone cannot be repeated; leave it bare.
    if atom.starts_with("(?") && !atom.contains(':') && !atom.starts_with("(?P") {
        return atom;
    }
    format!("{atom}{op}{lazy}")
}

fn plain_op(rng: &mut Rng) -> String {
    match rng.below(12) {
        0 => "*".to_owned(),
        1 => "+".to_owned(),
        2 => "?".to_owned(),
        3 => format!("{{{}}}", rng.below(6)),
        4 => format!("{{{},}}", rng.below(5)),
        5 => {
            let min = rng.below(4);
            format!("{{{},{}}}", min, min + rng.below(5))
        }
        _ => String::new(),
    }
}

fn expression(rng: &mut Rng, depth: usize, aimed: bool) -> String {
    let alternatives = 1 + usize::from(rng.below(3) == 0) * rng.below(4);
    let branches: Vec<String> = (0..alternatives)
        .map(|_| {
            (0..=rng.below(4))
                .map(|_| repeated(rng, depth, aimed))
                .collect::<String>()
        })
        .collect();
    branches.join("|")
}

/// Counts about RE2's limits: 0 and 1 (which divide nothing), the factors
/// of 1000 and their neighbours, and counts about 1000 itself.
const COUNTS: &[u32] = &[
    0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 19, 20, 21, 24, 25, 26, 31, 32, 33, 40, 49, 50, 51, 99, 100, 101, 124, 125, 126,
    199, 200, 201, 249, 250, 251, 333, 334, 499, 500, 501, 999, 1000, 1001,
];

/// A count near a limit, now and then anything up to 1002.
fn count(rng: &mut Rng) -> u32 {
    if rng.below(5) == 0 {
        u32::try_from(rng.below(1003)).unwrap_or(0)
    } else {
        COUNTS[rng.below(COUNTS.len())]
    }
}

/// A counted repetition of every form RE2 reads: `{n}`, `{n,}`, `{n,m}`.
fn count_op(rng: &mut Rng) -> String {
    let n = count(rng);
    match rng.below(5) {
        0 | 1 => format!("{{{n}}}"),
        2 => format!("{{{n},}}"),
        3 => format!("{{{},{n}}}", rng.below(usize::try_from(n).unwrap_or(0) + 1)),
        _ => format!("{{{n},{}}}", n + u32::try_from(rng.below(3)).unwrap_or(0)),
    }
}

/// A count of the form `op` on a count that brings `product` near `target`.
fn count_towards(rng: &mut Rng, product: u32, target: u32) -> String {
    let wanted = (target / product.max(1)).max(1);
    let n = match rng.below(4) {
        0 => wanted,
        1 => wanted + 1,
        2 => wanted.saturating_sub(1),
        _ => count(rng),
    };
    match rng.below(6) {
        0..=2 => format!("{{{n}}}"),
        3 => format!("{{{n},}}"),
        4 => format!("{{0,{n}}}"),
        _ => format!("{{{},{n}}}", n / 2),
    }
}

/// Counted repetitions nested two to four deep, whose counts multiply to
/// about 1000 (or a product near 1000 times a factor), in any group, with
/// alternatives and other atoms beside them, under an outer operator that
/// may make the program empty (`{0}`, `{0,0}`) or not.
fn nested_counts(rng: &mut Rng) -> String {
    let target = [1000, 1000, 999, 1001, 1002, 500, 2000][rng.below(7)];
    let mut product = 1;
    let mut inner = match rng.below(6) {
        0 => "(?:)".to_owned(),
        1 => class(rng),
        2 => rng.pick(OTHER_ATOMS).to_owned(),
        3 => expression(rng, 0, false),
        _ => rng.pick(LITERALS).to_owned(),
    };
    for level in 0..2 + rng.below(3) {
        let op = count_towards(rng, product, target);
        product = product.saturating_mul(leading_count(&op).max(1));
        // Group names differ (a name given twice is refused).
        let named = format!("(?P<n{level}x{}>", rng.below(1000));
        let open = ["(?:", "(?:", "(", "(?i:", named.as_str(), "(?s:"][rng.below(6)];
        let beside = match rng.below(6) {
            0 => format!("|{}", rng.pick(LITERALS)),
            1 => rng.pick(LITERALS).to_owned(),
            _ => String::new(),
        };
        inner = if inner.starts_with('(') || inner.len() == 1 {
            format!("{open}{inner}{op}{beside})")
        } else {
            format!("{open}(?:{inner}){op}{beside})")
        };
    }
    let outer = [
        "{0}", "{0}", "{0,0}", "{0,1}", "?", "*", "+", "{1}", "{1,}", "{2,}", "", "{0}?",
    ][rng.below(12)];
    let around = ["", "/", "^"][rng.below(3)];
    format!("{around}{inner}{outer}{}", ["", "x", "$", "|y"][rng.below(4)])
}

/// The count RE2 divides by for an operator `{n}`, `{n,}`, `{k,n}`.
fn leading_count(op: &str) -> u32 {
    let inner = op.trim_start_matches('{').trim_end_matches('}');
    let (min, max) = inner.split_once(',').unwrap_or((inner, inner));
    let max = if max.is_empty() { min } else { max };
    max.parse().unwrap_or(0)
}

/// A repeat of something empty: an empty group, assertions, a nullable
/// star or alternative, nested.
fn empty_repeat(rng: &mut Rng) -> String {
    let empty = [
        "(?:)",
        "()",
        "(?:|a)",
        "(?:^)",
        "(?:$)",
        "(?:\\b)",
        "(?:a*)",
        "(?:a?)",
        "(?:^|x)",
        "(?:(?:){2})",
    ][rng.below(10)];
    let op = count_op(rng);
    if rng.below(3) == 0 {
        format!("(?:{empty}{op}){}", count_op(rng))
    } else {
        format!("{empty}{op}")
    }
}

/// A program about Envoy's 100: one byte range, a class, `.` (one or two
/// byte ranges), alternatives, repeated about as often as 100 allows.
fn near_program_size(rng: &mut Rng) -> String {
    let (unit, around) = [
        ("x", 96),
        (".", 48),
        ("(?s:.)", 96),
        ("[a-z]", 96),
        ("(?i)k", 96),
        ("\\w", 24),
        ("[^/]", 48),
        ("(?:ab|cd)", 16),
        ("(a)", 32),
        ("\\x{e9}", 96),
        ("[\\x{80}-\\x{ff}]", 96),
    ][rng.below(11)];
    let n = around - 6 + rng.below(12);
    let tail = ["", "$", "/", ".*", "(?:/.*)?"][rng.below(5)];
    match rng.below(3) {
        0 => format!("{unit}{{{n}}}{tail}"),
        1 => format!("{unit}{{{},{n}}}{tail}", n / 2),
        _ => format!("/{}{tail}", unit.repeat(n.min(60))),
    }
}

/// Groups nested about as deep as the guard's 100 levels, and past them.
fn deep(rng: &mut Rng) -> String {
    let depth = 20 + rng.below(100);
    let (open, close) = [("(", ")"), ("(?:", ")"), ("(?:a|", ")"), ("(?:", ")?"), ("(?:", "){1}")][rng.below(5)];
    format!("{}{}{}", open.repeat(depth), rng.pick(LITERALS), close.repeat(depth))
}

/// Text RE2 and Rust read differently, or one of them refuses: non-ASCII
/// characters, escapes of every width, Perl and PCRE syntax.
const ODD: &[&str] = &[
    "\u{e9}",
    "\u{ff}",
    "\u{2603}",
    "\u{1f600}",
    "[\u{e9}-\u{ff}]",
    "[a-\u{e9}]",
    "\\x{0}",
    "\\x{7f}",
    "\\x{80}",
    "\\x{ff}",
    "\\x{100}",
    "\\x{fffd}",
    "\\x{10ffff}",
    "\\x{110000}",
    "\\x{d800}",
    "\\x{}",
    "\\x0",
    "[\\x{80}-\\x{10ffff}]",
    "[^\\x{0}-\\x{ff}]",
    "[^\\x00-\\xfe]",
    "\\C",
    "\\Q.*\\E",
    "\\Z",
    "\\z",
    "\\G",
    "\\0",
    "\\8",
    "\\cA",
    "\\e",
    "\\pN",
    "\\p{Latin}",
    "\\PL",
    "(?=a)",
    "(?!a)",
    "(?#c)",
    "(?P=n)",
    "(?P<n>a)(?P<n>b)",
    "(?P<>a)",
    "(?P<1a>a)",
    "[[:word:]]",
    "[[:foo:]]",
    "[[=a=]]",
    "[]a]",
    "[^]a]",
    "[a-]",
    "[\\d-z]",
    "[z-a]",
    "(?i)\\x{e9}",
    "(?i:[k-\\x{ff}])",
    "(?u)a",
    "(?i-)a",
    "(?)a",
    "(?-)a",
    "(?U)a*",
    "(?m)^$",
    "(?s-i:.)",
    "a{09}",
    "a{00}",
    "a{1,02}",
    "(?:(?:a{09}){200}){0}",
    "a{,3}",
    "a{3,2}",
    "a{ 2}",
    "a{2,3}{4}",
    "a*?",
    "a+?",
    "a??",
    "a*+",
    "{",
    "a{",
    "a{1",
    "x{2}{",
    "\\b{start}",
    "\\<",
    "*",
    "(|)",
    "(?:|)",
    "^*",
    "$+",
    "\\b{2}",
    "(?:^){1000}",
];

/// One production aimed at a limit.
fn limit_atom(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 | 1 => nested_counts(rng),
        2 => empty_repeat(rng),
        3 => format!("{}{}", rng.pick(LITERALS), count_op(rng)),
        _ => rng.pick(ODD).to_owned(),
    }
}
