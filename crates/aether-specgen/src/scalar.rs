//! One scalar place's candidate values: drawn from its rules' edges and
//! labelled by the rules themselves, so a sample can aim at valid specs
//! and still cross every edge. The labels are a guess the judges overrule:
//! the parity tests compare the judges, never these labels.

use aether_rules::{Bound, CelRule, Rule, RuleKind, Scalar};
use prost_reflect::Kind;

use crate::regex::Pattern;
use crate::val::Val;
use crate::{Choices, Rng};
use crate::{cel, formats};

/// What the rules say of a value: valid, invalid, or not known here (a
/// CEL rule this crate does not evaluate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    Valid,
    Invalid,
    Unknown,
}

/// The rules on one scalar place.
pub struct Rules<'a> {
    pub kind: Kind,
    pub rules: &'a [Rule],
    pub cel: &'a [CelRule],
}

/// The candidates of one place, by label.
#[derive(Default)]
pub struct Pool {
    pub valid: Vec<Val>,
    pub invalid: Vec<Val>,
    pub unknown: Vec<Val>,
    /// The invalid candidates breaking each rule (indexes into `invalid`):
    /// a doubtful draw picks a rule first, so a rule few candidates break
    /// (`min_len` 1: only `""`) is drawn as often as one many break.
    by_rule: Vec<Vec<usize>>,
    /// The zero value is refused (`required` without presence).
    zero_refused: bool,
}

impl Pool {
    pub fn add(&mut self, value: Val, label: Label) {
        self.add_breaking(value, label, &[]);
    }

    fn add_breaking(&mut self, value: Val, label: Label, broken: &[usize]) {
        let label = if self.zero_refused && is_zero(&value) {
            Label::Invalid
        } else {
            label
        };
        if label == Label::Invalid && !self.invalid.contains(&value) {
            for &rule in broken {
                if self.by_rule.len() <= rule {
                    self.by_rule.resize(rule + 1, Vec::new());
                }
                self.by_rule[rule].push(self.invalid.len());
            }
        }
        let list = match label {
            Label::Valid => &mut self.valid,
            Label::Invalid => &mut self.invalid,
            Label::Unknown => &mut self.unknown,
        };
        if !list.contains(&value) {
            list.push(value);
        }
    }

    /// The candidates of a place with `rules`, and of the CEL literals
    /// and sizes other rules compare this field with.
    pub fn build(rules: &Rules, literals: &[Val], sizes: &[u64]) -> Pool {
        let mut pool = Pool::default();
        let mut candidates = Vec::new();
        // A fixed seed: the pools are the same every run.
        let mut rng = Rng::new(0x5ca1_ab1e);
        match &rules.kind {
            Kind::String => strings(rules, literals, sizes, &mut rng, &mut candidates),
            Kind::Bytes => bytes(rules, sizes, &mut candidates),
            Kind::Bool => candidates.extend([Val::Bool(false), Val::Bool(true)]),
            Kind::Enum(e) => candidates.extend(e.values().map(|v| Val::Int(v.number().into()))),
            Kind::Float | Kind::Double => doubles(rules, literals, &mut candidates),
            Kind::Message(_) => {}
            kind => integers(rules, literals, kind, &mut candidates),
        }
        for value in candidates {
            let (label, broken) = judge(rules, &value);
            pool.add_breaking(value, label, &broken);
        }
        pool.by_rule.retain(|indexes| !indexes.is_empty());
        pool
    }

    /// Labels the zero value invalid (for a `required` field without presence).
    pub fn refuse_zero(&mut self) {
        self.zero_refused = true;
        let zero = is_zero;
        let moved: Vec<Val> = self
            .valid
            .iter()
            .chain(&self.unknown)
            .filter(|v| zero(v))
            .cloned()
            .collect();
        self.valid.retain(|v| !zero(v));
        self.unknown.retain(|v| !zero(v));
        for value in moved {
            self.add(value, Label::Invalid);
        }
    }

    /// A value: invalid or unknown with probability `badness`, otherwise
    /// valid (unknown now and then, and when nothing valid is known).
    pub fn pick(&self, choices: &mut dyn Choices, badness: f64) -> Option<&Val> {
        let doubtful = |choices: &mut dyn Choices| {
            if !self.by_rule.is_empty() && choices.chance(0.5) {
                let rule = &self.by_rule[choices.below(self.by_rule.len())];
                return Some(&self.invalid[rule[choices.below(rule.len())]]);
            }
            let total = self.invalid.len() + self.unknown.len();
            (total > 0).then(|| {
                let i = choices.below(total);
                self.invalid
                    .get(i)
                    .unwrap_or_else(|| &self.unknown[i - self.invalid.len()])
            })
        };
        if choices.chance(badness) || self.valid.is_empty() {
            return doubtful(choices).or_else(|| self.valid.first());
        }
        if !self.unknown.is_empty() && choices.chance(UNKNOWN_RATE) {
            return Some(&self.unknown[choices.below(self.unknown.len())]);
        }
        Some(&self.valid[choices.below(self.valid.len())])
    }
}

fn is_zero(value: &Val) -> bool {
    match value {
        Val::Bool(b) => !b,
        Val::Int(i) => *i == 0,
        Val::Double(d) => *d == 0.0,
        Val::Str(s) => s.is_empty(),
        Val::Bytes(b) => b.is_empty(),
        Val::Msg(_) => false,
    }
}

/// How often a place that is meant to be valid takes a value of unknown
/// label: CEL rules then see both sides without a bad value drawn.
const UNKNOWN_RATE: f64 = 0.02;

/// Characters that break common patterns: space, upper case, the URL
/// delimiters, a control character and a non-ASCII letter.
const BREAKERS: [char; 10] = [' ', 'A', '/', '.', '%', '*', ':', '\n', '\u{e9}', '-'];

fn strings(rules: &Rules, literals: &[Val], sizes: &[u64], rng: &mut Rng, out: &mut Vec<Val>) {
    let mut seeds: Vec<String> = Vec::new();
    for rule in rules.rules {
        match &rule.kind {
            RuleKind::Const(s) | RuleKind::Prefix(s) | RuleKind::Suffix(s) | RuleKind::Contains(s) => {
                seeds.push(s.text())
            }
            RuleKind::NotContains(s) => seeds.push(format!("a{}a", s.text())),
            RuleKind::In(values) | RuleKind::NotIn(values) => seeds.extend(values.iter().map(Scalar::text)),
            RuleKind::Pattern(p) => {
                if let Some(pattern) = Pattern::new(&p.source) {
                    seeds.extend((0..24).map(|_| pattern.draw(rng)));
                }
            }
            RuleKind::Format(format) => {
                let check = formats::check_of(*format);
                seeds.extend((0..24).filter_map(|_| formats::draw(&check, rng)));
            }
            _ => {}
        }
    }
    seeds.extend(literals.iter().filter_map(|l| match l {
        Val::Str(s) => Some(s.clone()),
        _ => None,
    }));
    // A plain value meeting the affixes and the shortest length asked.
    let affix = |kind: fn(&RuleKind) -> Option<&Scalar>| {
        rules
            .rules
            .iter()
            .find_map(|r| kind(&r.kind))
            .map(Scalar::text)
            .unwrap_or_default()
    };
    let prefix = affix(|k| if let RuleKind::Prefix(s) = k { Some(s) } else { None });
    let suffix = affix(|k| if let RuleKind::Suffix(s) = k { Some(s) } else { None });
    let contains = affix(|k| if let RuleKind::Contains(s) = k { Some(s) } else { None });
    seeds.push(format!("{prefix}{contains}abc{suffix}"));
    seeds.push(String::new());
    let lengths = lengths(rules.rules, sizes);
    let mut all = Vec::new();
    for seed in &seeds {
        all.push(seed.clone());
        for &n in &lengths {
            all.push(resize(seed, n, 'a'));
            all.push(resize(seed, n, '\u{e9}'));
        }
        for (i, c) in BREAKERS.iter().enumerate() {
            let at = [0, seed.len() / 2, seed.len()][i % 3];
            let at = (0..=at).rev().find(|&i| seed.is_char_boundary(i)).unwrap_or(0);
            let mut broken = seed.clone();
            broken.insert(at, *c);
            all.push(broken);
        }
        all.push(seed.to_uppercase());
        // CEL literals inside a value: `contains('//')` and friends.
        for literal in literals {
            if let Val::Str(l) = literal {
                let middle = (0..=seed.len() / 2)
                    .rev()
                    .find(|&i| seed.is_char_boundary(i))
                    .unwrap_or(0);
                all.push(format!("{}{l}{}", &seed[..middle], &seed[middle..]));
                all.push(format!("{seed}{l}"));
            }
        }
    }
    out.extend(all.into_iter().map(Val::Str));
}

/// The lengths at the edges of the length rules (each bound and one past
/// it) and of the sizes CEL rules compare with (each and either side).
fn lengths(rules: &[Rule], sizes: &[u64]) -> Vec<usize> {
    let mut out: Vec<u64> = sizes.iter().flat_map(|&n| [n.saturating_sub(1), n, n + 1]).collect();
    for rule in rules {
        match rule.kind {
            RuleKind::Len(n) | RuleKind::LenBytes(n) => out.extend([n.saturating_sub(1), n, n + 1]),
            RuleKind::MinLen(n) | RuleKind::MinBytes(n) => out.extend([n.saturating_sub(1), n]),
            RuleKind::MaxLen(n) | RuleKind::MaxBytes(n) => out.extend([n, n + 1]),
            _ => {}
        }
    }
    out.into_iter().map(|n| n as usize).collect()
}

/// `seed` cut or grown to `n` characters, growing by repeating `fill`
/// before the last character (inside the value, after any prefix).
fn resize(seed: &str, n: usize, fill: char) -> String {
    let chars: Vec<char> = seed.chars().collect();
    if chars.len() >= n {
        return chars[..n].iter().collect();
    }
    let fill = if fill == 'a' {
        chars.get(chars.len().saturating_sub(2)).copied().unwrap_or('a')
    } else {
        fill
    };
    let keep = chars.len().saturating_sub(1);
    let mut out: String = chars[..keep].iter().collect();
    out.extend(std::iter::repeat_n(fill, n - chars.len()));
    out.extend(&chars[keep..]);
    out
}

fn bytes(rules: &Rules, sizes: &[u64], out: &mut Vec<Val>) {
    let mut seeds: Vec<Vec<u8>> = vec![b"abc".to_vec(), Vec::new()];
    for rule in rules.rules {
        match &rule.kind {
            RuleKind::Const(Scalar::Bytes(b))
            | RuleKind::Prefix(Scalar::Bytes(b))
            | RuleKind::Suffix(Scalar::Bytes(b))
            | RuleKind::Contains(Scalar::Bytes(b)) => seeds.push(b.clone()),
            RuleKind::In(values) | RuleKind::NotIn(values) => seeds.extend(values.iter().filter_map(|v| match v {
                Scalar::Bytes(b) => Some(b.clone()),
                _ => None,
            })),
            _ => {}
        }
    }
    for seed in &seeds {
        out.push(Val::Bytes(seed.clone()));
        for n in lengths(rules.rules, sizes) {
            let mut grown = seed.clone();
            grown.resize(n, b'a');
            out.push(Val::Bytes(grown));
        }
        let mut flipped = seed.clone();
        flipped.push(0xff);
        out.push(Val::Bytes(flipped));
    }
}

fn integers(rules: &Rules, literals: &[Val], kind: &Kind, out: &mut Vec<Val>) {
    let (min, max): (i128, i128) = match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => (i32::MIN.into(), i32::MAX.into()),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => (i64::MIN.into(), i64::MAX.into()),
        Kind::Uint32 | Kind::Fixed32 => (0, u32::MAX.into()),
        _ => (0, u64::MAX.into()),
    };
    let mut values = vec![0i128, 1, -1, 2, 7, 100, min, max];
    for rule in rules.rules {
        for scalar in scalars(&rule.kind) {
            if let Some(v) = as_int(scalar) {
                values.extend([v - 1, v, v + 1]);
            }
        }
    }
    for literal in literals {
        if let Val::Int(v) = literal {
            values.extend([v - 1, *v, v + 1]);
        }
    }
    out.extend(values.into_iter().filter(|v| (min..=max).contains(v)).map(Val::Int));
}

fn doubles(rules: &Rules, literals: &[Val], out: &mut Vec<Val>) {
    // No NaN nor infinity: the Kubernetes form cannot write them (the
    // `finite` rule is for binary specs; see `Coverage`).
    let mut values = vec![0.0, 1.0, -1.0, 0.5, f64::MAX, f64::MIN];
    values.extend([f32::MAX, f32::MIN].map(f64::from));
    for rule in rules.rules {
        for scalar in scalars(&rule.kind) {
            if let Scalar::Double(v) = scalar {
                values.extend([v - 0.5, *v, v + 0.5, next_up(*v), next_down(*v)]);
            }
        }
    }
    for literal in literals {
        if let Val::Double(v) = literal {
            values.extend([v - 0.5, *v, v + 0.5]);
        }
    }
    if matches!(rules.kind, Kind::Float) {
        // What a float can hold: the candidates as the wire carries them.
        values = values.into_iter().map(|v| f64::from(v as f32)).collect();
    }
    out.extend(values.into_iter().filter(|v| v.is_finite()).map(Val::Double));
}

fn next_up(v: f64) -> f64 {
    if v.is_finite() {
        f64::from_bits(if v >= 0.0 { v.to_bits() + 1 } else { v.to_bits() - 1 })
    } else {
        v
    }
}

fn next_down(v: f64) -> f64 {
    -next_up(-v)
}

/// The values a rule names.
fn scalars(kind: &RuleKind) -> Vec<&Scalar> {
    match kind {
        RuleKind::Const(s) => vec![s],
        RuleKind::In(v) | RuleKind::NotIn(v) => v.iter().collect(),
        RuleKind::Range { lower, upper, .. } => lower.iter().chain(upper).map(|b| &b.value).collect(),
        _ => Vec::new(),
    }
}

fn as_int(scalar: &Scalar) -> Option<i128> {
    match scalar {
        Scalar::Int(i) => Some((*i).into()),
        Scalar::UInt(u) => Some((*u).into()),
        _ => None,
    }
}

/// What the standard rules (and the CEL rules this crate evaluates) say
/// of `value`.
pub fn label(rules: &Rules, value: &Val) -> Label {
    judge(rules, value).0
}

/// The label, and the indexes of the rules broken (standard rules, then CEL).
fn judge(rules: &Rules, value: &Val) -> (Label, Vec<usize>) {
    let verdicts = rules
        .rules
        .iter()
        .map(|rule| holds(&rule.kind, value))
        .chain(rules.cel.iter().map(|rule| cel::eval_on(&rule.expr, value)));
    let mut label = Label::Valid;
    let mut broken = Vec::new();
    for (i, verdict) in verdicts.enumerate() {
        match verdict {
            Some(true) => {}
            Some(false) => broken.push(i),
            None if label == Label::Valid => label = Label::Unknown,
            None => {}
        }
    }
    if !broken.is_empty() {
        label = Label::Invalid;
    }
    (label, broken)
}

fn holds(kind: &RuleKind, value: &Val) -> Option<bool> {
    let text = || match value {
        Val::Str(s) => Some(s.as_str()),
        _ => None,
    };
    let size = || match value {
        Val::Str(s) => Some(s.chars().count() as u64),
        Val::Bytes(b) => Some(b.len() as u64),
        _ => None,
    };
    let byte_size = || text().map(|s| s.len() as u64);
    let raw = || match value {
        Val::Str(s) => Some(s.as_bytes().to_vec()),
        Val::Bytes(b) => Some(b.clone()),
        _ => None,
    };
    let scalar_bytes = |s: &Scalar| match s {
        Scalar::String(s) => Some(s.as_bytes().to_vec()),
        Scalar::Bytes(b) => Some(b.clone()),
        _ => None,
    };
    Some(match kind {
        RuleKind::Const(s) => equals(value, s)?,
        RuleKind::In(values) => values.iter().any(|s| equals(value, s) == Some(true)),
        RuleKind::NotIn(values) => !values.iter().any(|s| equals(value, s) == Some(true)),
        RuleKind::Range {
            lower,
            upper,
            exclusive,
        } => {
            let above = match lower {
                Some(b) => Some(beyond(value, b, true)?),
                None => None,
            };
            let below = match upper {
                Some(b) => Some(beyond(value, b, false)?),
                None => None,
            };
            match (above, below, exclusive) {
                (Some(a), Some(b), true) => a || b,
                (a, b, _) => a.unwrap_or(true) && b.unwrap_or(true),
            }
        }
        RuleKind::Finite => matches!(value, Val::Double(d) if d.is_finite()),
        RuleKind::Len(n) => size()? == *n,
        RuleKind::MinLen(n) => size()? >= *n,
        RuleKind::MaxLen(n) => size()? <= *n,
        RuleKind::LenBytes(n) => byte_size()? == *n,
        RuleKind::MinBytes(n) => byte_size()? >= *n,
        RuleKind::MaxBytes(n) => byte_size()? <= *n,
        RuleKind::Pattern(p) => crate::regex::is_match(&p.source, text()?).unwrap_or(false),
        RuleKind::Prefix(s) => raw()?.starts_with(&scalar_bytes(s)?),
        RuleKind::Suffix(s) => raw()?.ends_with(&scalar_bytes(s)?),
        RuleKind::Contains(s) => contains(&raw()?, &scalar_bytes(s)?),
        RuleKind::NotContains(s) => !contains(&raw()?, &scalar_bytes(s)?),
        RuleKind::Format(format) => formats::passes(&formats::check_of(*format), text()?),
        // Every candidate an enum gets is a declared value.
        RuleKind::DefinedOnly => true,
        _ => return None,
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

fn equals(value: &Val, scalar: &Scalar) -> Option<bool> {
    Some(match (value, scalar) {
        (Val::Bool(a), Scalar::Bool(b)) => a == b,
        (Val::Int(a), s) => *a == as_int(s)?,
        (Val::Double(a), Scalar::Double(b)) => a == b,
        (Val::Str(a), Scalar::String(b)) => a == b,
        (Val::Bytes(a), Scalar::Bytes(b)) => a == b,
        _ => return None,
    })
}

/// Whether `value` lies past `bound` on the right side: above a lower
/// bound (`lower`), below an upper one.
fn beyond(value: &Val, bound: &Bound, lower: bool) -> Option<bool> {
    let ordering = match (value, &bound.value) {
        // NaN is on no side of any bound: protovalidate refuses it.
        (Val::Double(a), _) if a.is_nan() => return Some(false),
        (Val::Int(a), s) => a.cmp(&as_int(s)?),
        (Val::Double(a), Scalar::Double(b)) => a.partial_cmp(b)?,
        _ => return None,
    };
    use std::cmp::Ordering::*;
    Some(match (ordering, lower) {
        (Equal, _) => bound.inclusive,
        (Greater, true) | (Less, false) => true,
        _ => false,
    })
}
