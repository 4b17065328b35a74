//! Specs drawn from the rules model (`aether_specgen`), seeded with the
//! specs written by hand: every example manifest and aether-api's fixtures.

use std::path::Path;

use aether_api::config::v1::VirtualHostSpec;
use aether_api::validate::Validate as _;
use aether_specgen::{Choices, Generator};

/// The root message every VirtualHost spec is drawn from.
pub const ROOT: &str = "aether.config.v1.VirtualHostSpec";

/// How many draws [`valid`] makes before it gives up.
const TRIES: usize = 1000;

/// The specs written by hand: every VirtualHost of `examples/` and of
/// aether-api's valid and invalid fixtures.
pub fn written() -> Vec<serde_json::Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dirs = [
        root.join("crates/aether-api/tests/fixtures/valid"),
        root.join("crates/aether-api/tests/fixtures/invalid"),
        root.join("examples"),
    ];
    let mut specs = Vec::new();
    for dir in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            // A file may hold several documents; each VirtualHost's spec counts.
            for document in text.split("\n---") {
                let Ok(object) = serde_saphyr::from_str::<serde_json::Value>(document) else {
                    continue;
                };
                if object["kind"] == "VirtualHost" {
                    specs.push(object["spec"].clone());
                }
            }
        }
    }
    specs
}

/// The generator of VirtualHost specs, seeded with [`written`].
pub fn generator() -> Generator {
    let mut generator =
        Generator::new(aether_api::reflect::FILE_DESCRIPTOR_SET, ROOT).expect("the rules model of the API reads");
    for spec in written() {
        generator.seed(&spec);
    }
    generator
}

/// A drawn spec as the typed message (a drawn spec always decodes).
pub fn decode(json: &serde_json::Value) -> VirtualHostSpec {
    serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{json} does not decode: {e}"))
}

/// A spec the validator accepts, drawn with `choices` aiming at valid
/// ones (a CEL rule across fields can still refuse a draw: it is drawn again).
pub fn valid(generator: &Generator, choices: &mut dyn Choices) -> VirtualHostSpec {
    for _ in 0..TRIES {
        let spec = decode(&generator.spec(choices, 0.0));
        if spec.validate().is_ok() {
            return spec;
        }
    }
    panic!("no valid spec in {TRIES} draws: the generator no longer aims at valid specs")
}
