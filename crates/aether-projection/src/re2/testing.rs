//! Random regular expressions in the syntax the guard reads (and some it
//! refuses), for the tests that compare the guard with RE2 and with Envoy.
//! Deterministic: a seed gives the same expressions on every run.

/// A stream of random expressions: literals, escapes, classes (Perl,
/// POSIX, ranges, non-ASCII), assertions, groups (capturing, named, with
/// flags), alternations and every kind of repetition, nested three deep.
pub struct Expressions(Rng);

impl Expressions {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(Rng(seed))
    }

    /// The next expression.
    pub fn next_expression(&mut self) -> String {
        expression(&mut self.0, 3)
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

fn atom(rng: &mut Rng, depth: usize) -> String {
    match rng.below(if depth == 0 { 4 } else { 9 }) {
        0 | 1 => rng.pick(LITERALS).to_owned(),
        2 => class(rng),
        3 => rng.pick(OTHER_ATOMS).to_owned(),
        4 => format!("({})", expression(rng, depth - 1)),
        5 => format!("(?:{})", expression(rng, depth - 1)),
        6 => format!("(?{}:{})", rng.pick(FLAGS), expression(rng, depth - 1)),
        7 => format!("(?P<g{}>{})", rng.below(1000), expression(rng, depth - 1)),
        _ => {
            if rng.below(8) == 0 {
                rng.pick(REFUSED).to_owned()
            } else {
                format!("(?{})", rng.pick(FLAGS))
            }
        }
    }
}

fn repeated(rng: &mut Rng, depth: usize) -> String {
    let atom = atom(rng, depth);
    let op = match rng.below(12) {
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
    };
    let lazy = if !op.is_empty() && rng.below(4) == 0 { "?" } else { "" };
    // A flag group alone cannot be repeated; leave it bare.
    if atom.starts_with("(?") && !atom.contains(':') && !atom.starts_with("(?P") {
        return atom;
    }
    format!("{atom}{op}{lazy}")
}

fn expression(rng: &mut Rng, depth: usize) -> String {
    let alternatives = 1 + usize::from(rng.below(3) == 0) * rng.below(4);
    let branches: Vec<String> = (0..alternatives)
        .map(|_| (0..=rng.below(4)).map(|_| repeated(rng, depth)).collect::<String>())
        .collect();
    branches.join("|")
}
