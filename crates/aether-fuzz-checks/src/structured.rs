//! The structured targets' inputs: specs drawn from the rules model
//! (`aether_specgen`, seeded with the repository's manifests), the fuzzer's
//! bytes making every choice.
//!
//! Random bytes rarely decode into a spec, and a spec of random strings is
//! rarely valid, so the fuzzer would mostly see the first violation. Here
//! every input draws a spec whose values sit at the edges of the proto's
//! rules, valid or one step past them; so valid specs, and specs one rule
//! away from valid, are common, and a rule added to the proto is drawn
//! without a line of this module changing.

use std::sync::LazyLock;

use aether_api::config::v1::VirtualHostSpec;
use aether_projection::VirtualHostObject;
use aether_specgen::{Choices as _, Generator};
use arbitrary::Unstructured;
use serde_json::json;

/// The chance of a doubtful value at each place, the input choosing one:
/// specs with none, one and several.
const BADNESS: [f64; 4] = [0.0, 0.005, 0.02, 0.06];

/// The generator of the validate target's specs.
static SPECS: LazyLock<Generator> = LazyLock::new(aether_testing::drawn::generator);

/// Few hosts, so that the projection target's objects contest them.
const HOSTS: &[&str] = &["api.example.com", "*.example.com", "web.example.com", "a.b.example.com"];

/// The generator of the projection target's specs: its hosts narrowed.
static OBJECT_SPECS: LazyLock<Generator> = LazyLock::new(|| {
    let mut generator = aether_testing::drawn::generator();
    let hosts: Vec<_> = HOSTS.iter().map(|h| json!(h)).collect();
    generator.narrow("hosts[]", &hosts).expect("hosts is a list of strings");
    generator
});

fn draw(generator: &Generator, input: &mut Unstructured) -> VirtualHostSpec {
    let badness = BADNESS[input.below(BADNESS.len())];
    aether_testing::drawn::decode(&generator.spec(input, badness))
}

/// The validate target's spec: every input makes one.
pub fn spec(input: &mut Unstructured) -> VirtualHostSpec {
    draw(&SPECS, input)
}

/// Namespaces and names: valid ones, and one invalid of each, which the
/// projection leaves out.
const NAMESPACES: &[&str] = &["default", "team-a", "Team_B"];
const NAMES: &[&str] = &["api", "web", "a.b", "-bad"];

/// The most objects of one input.
const MAX_OBJECTS: usize = 6;

/// Whether an object built here has metadata the projection accepts.
pub fn valid_metadata(object: &VirtualHostObject) -> bool {
    object.namespace != "Team_B" && object.name != "-bad"
}

/// The projection target's objects: few namespaces, names and hosts, so
/// that keys and hosts collide; creation days that tie, or none.
pub fn objects(input: &mut Unstructured) -> Vec<VirtualHostObject> {
    const JAN_1_2026: i64 = 1_767_225_600;
    let count = input.below(MAX_OBJECTS + 1);
    (0..count)
        .map(|_| {
            let namespace = NAMESPACES[input.below(NAMESPACES.len())].to_owned();
            let name = NAMES[input.below(NAMES.len())].to_owned();
            let created_day = input.chance(0.8).then(|| input.below(8));
            VirtualHostObject {
                namespace,
                name,
                creation_timestamp: created_day.map(|day| {
                    jiff::Timestamp::from_second(JAN_1_2026 + day as i64 * 86_400)
                        .expect("a day of 2026 is a valid timestamp")
                }),
                spec: std::sync::Arc::new(draw(&OBJECT_SPECS, input)),
                ..Default::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use aether_api::validate::Validate as _;
    use aether_specgen::{Choices as _, Rng};

    /// Random inputs of random lengths.
    fn inputs(count: usize) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(0xf0_22ed);
        (0..count)
            .map(|_| (0..rng.below(4096)).map(|_| rng.below(256) as u8).collect())
            .collect()
    }

    #[test]
    fn random_inputs_make_valid_specs_and_specs_a_rule_away() {
        let mut valid = 0;
        let all = inputs(400);
        for data in &all {
            let spec = super::spec(&mut arbitrary::Unstructured::new(data));
            valid += usize::from(spec.validate().is_ok());
        }
        assert!(
            valid >= all.len() / 10 && all.len() - valid >= all.len() / 10,
            "{valid} valid of {}",
            all.len()
        );
    }

    #[test]
    fn random_inputs_make_objects_that_contest_hosts() {
        let mut contested = 0;
        for data in inputs(200) {
            let objects = super::objects(&mut arbitrary::Unstructured::new(&data));
            let hosts: Vec<&String> = objects.iter().flat_map(|o| &o.spec.hosts).collect();
            let distinct: std::collections::BTreeSet<_> = hosts.iter().collect();
            contested += usize::from(distinct.len() < hosts.len());
        }
        assert!(contested >= 20, "{contested} of 200 inputs with a host claimed twice");
    }

    #[test]
    fn an_empty_input_still_makes_a_spec() {
        let spec = super::spec(&mut arbitrary::Unstructured::new(&[]));
        assert!(
            !spec.hosts.is_empty(),
            "required fields are drawn when no bad value is asked for"
        );
    }
}
