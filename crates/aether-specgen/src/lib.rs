//! Specs drawn from an API's rules model: valid ones, and ones just past
//! each rule's edge, in the Kubernetes JSON form.
//!
//! The generator knows no message of its own: it walks the descriptors
//! from a root message and, at each place (a field, a list's elements, a
//! map's keys and values), draws from candidates the rules there give
//! (each bound and one past it, `in` and `not_in` values, strings a pattern
//! or format matches and near misses, the literals CEL rules compare the
//! field with), labelled by those rules. Presence follows the rules too:
//! required fields and oneofs are set, each optional field half the time.
//! `badness` is the chance, at each place, of a value the rules refuse or
//! cannot label here (CEL across fields); the judges under test decide.
//!
//! ```
//! # fn main() -> anyhow::Result<()> {
//! let descriptors = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../generated/descriptors/aether.proto3.binpb"))?;
//! let generator = aether_specgen::Generator::new(&descriptors, "aether.config.v1.VirtualHostSpec")?;
//! let spec = generator.spec(&mut aether_specgen::Rng::new(1), 0.0);
//! assert!(spec.get("hosts").is_some()); // required: always drawn when no bad value is asked for
//! # Ok(()) }
//! ```

pub mod any;
mod cel;
pub mod coverage;
mod draw;
mod formats;
mod regex;
mod scalar;
mod seed;
mod val;

use std::collections::BTreeMap;

use aether_rules::Api;
use anyhow::{Context, Result};
use prost_reflect::{DescriptorPool, MessageDescriptor};

pub use coverage::Coverage;
use scalar::Pool;

/// Where a generator's choices come from: a seeded generator, a fuzzer's
/// bytes, a proptest runner.
pub trait Choices {
    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize;
    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool;
}

/// A small deterministic generator (SplitMix64): the same specs every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Choices for Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// A fuzzer's bytes. Once they run out every answer is the smallest (no
/// optional field, no doubtful value, the fewest items): `Unstructured`
/// itself answers zeros then, which would read as "yes" to every chance and
/// draw the largest spec for the shortest input.
#[cfg(feature = "arbitrary")]
impl Choices for arbitrary::Unstructured<'_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 || self.is_empty() {
            return 0;
        }
        self.choose_index(n).unwrap_or(0)
    }

    fn chance(&mut self, p: f64) -> bool {
        if self.is_empty() {
            return false;
        }
        let byte: u8 = self.arbitrary().unwrap_or(u8::MAX);
        f64::from(byte) < p * 256.0
    }
}

/// The specs of one root message, drawn from its API's rules.
pub struct Generator {
    api: Api,
    root: MessageDescriptor,
    /// The candidates of each scalar place (`routes[].match.prefix`).
    pools: BTreeMap<String, Pool>,
}

impl Generator {
    /// The generator of `root` (a full message name), from a lowered
    /// descriptor set holding it, its rules and `buf/validate/validate.proto`.
    pub fn new(proto3_descriptors: &[u8], root: &str) -> Result<Self> {
        let pool = DescriptorPool::decode(proto3_descriptors).context("decoding the descriptors")?;
        let message = pool
            .get_message_by_name(root)
            .with_context(|| format!("no message {root} in the descriptors"))?;
        let package = message.package_name().to_owned();
        let own: Vec<String> = pool
            .files()
            .filter(|f| f.package_name() == package)
            .map(|f| f.name().to_owned())
            .collect();
        let api = Api::load(proto3_descriptors, &own).context("reading the rules")?;
        // The model's descriptors are its own pool's: take the root from it.
        let root = api
            .message(root)
            .map(|m| m.descriptor.clone())
            .with_context(|| format!("{root} is not in the rules model"))?;
        let mut generator = Self {
            api,
            root,
            pools: BTreeMap::new(),
        };
        generator.pools = draw::pools(&generator);
        Ok(generator)
    }

    /// The root message.
    pub fn root(&self) -> &MessageDescriptor {
        &self.root
    }

    /// The rules model the generator draws from.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// One spec, taking a doubtful value with probability `badness` at each
    /// place (0: aiming at valid specs).
    pub fn spec(&self, choices: &mut dyn Choices, badness: f64) -> serde_json::Value {
        serde_json::Value::Object(draw::message(self, &self.root, "", choices, badness, 0, &[]))
    }

    /// Adds the values of a spec written by hand (an example, a fixture, a
    /// case) to the candidates of each place it sets.
    pub fn seed(&mut self, spec: &serde_json::Value) {
        let root = self.root.clone();
        seed::message(self, &root, spec, "");
    }

    /// Makes `values` the only ones a valid draw takes at the scalar place
    /// `place` (`hosts[]`, `routes[].match.prefix`), labelled by its rules;
    /// the rules' invalid candidates stay. A test narrows a place to make
    /// draws collide (a few hosts, so objects contest them) or to aim at a
    /// judge's limits (expressions near a regex engine's). Errors when
    /// `place` is not a scalar place under the root.
    pub fn narrow(&mut self, place: &str, values: &[serde_json::Value]) -> Result<()> {
        anyhow::ensure!(
            seed::narrow(self, place, values),
            "{place} is not a scalar place of {}",
            self.root.full_name()
        );
        Ok(())
    }
}

/// A spec strategy for proptest: each case draws one spec from a seed.
#[cfg(feature = "proptest")]
pub fn strategy(
    generator: std::sync::Arc<Generator>,
    badness: f64,
) -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    any::<u64>().prop_map(move |seed| generator.spec(&mut crate::Rng::new(seed), badness))
}
