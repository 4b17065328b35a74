//! `buf.gen.yaml`: which generators run and where their output goes.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

/// The generators built into the xtask, by the `local` name buf.gen.yaml uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generator {
    DescriptorSet,
    Prost,
    Serde,
    Crd,
    Validate,
    Regexes,
    Conditions,
    Deploy,
    EnvoyBootstrap,
    EnvoyRoute,
    Reference,
}

impl Generator {
    const ALL: [(&'static str, Generator); 11] = [
        ("aether-descriptor-set", Generator::DescriptorSet),
        ("aether-prost", Generator::Prost),
        ("aether-serde", Generator::Serde),
        ("aether-crd", Generator::Crd),
        ("aether-validate", Generator::Validate),
        ("aether-regexes", Generator::Regexes),
        ("aether-conditions", Generator::Conditions),
        ("aether-deploy", Generator::Deploy),
        ("aether-envoy-bootstrap", Generator::EnvoyBootstrap),
        ("aether-envoy-route", Generator::EnvoyRoute),
        ("aether-reference", Generator::Reference),
    ];

    fn from_local_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, g)| *g)
    }
}

/// One plugin line: a generator and its output directory (relative to the root).
#[derive(Debug, Clone)]
pub struct Step {
    pub generator: Generator,
    pub out: PathBuf,
}

/// What `buf.gen.yaml` asks for.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Directories holding the proto sources (`inputs[].directory`).
    pub input_dirs: Vec<PathBuf>,
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BufGen {
    version: String,
    inputs: Vec<Input>,
    plugins: Vec<Plugin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    directory: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Plugin {
    local: String,
    out: PathBuf,
}

impl Plan {
    pub fn load(root: &Path) -> Result<Self> {
        let path = root.join("buf.gen.yaml");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    fn parse(text: &str) -> Result<Self> {
        let file: BufGen = serde_saphyr::from_str(text)?;
        ensure!(file.version == "v2", "version must be v2, not {:?}", file.version);
        ensure!(!file.inputs.is_empty(), "no inputs: name the proto directory");
        let mut steps = Vec::new();
        for plugin in file.plugins {
            let Some(generator) = Generator::from_local_name(&plugin.local) else {
                let known: Vec<_> = Generator::ALL.iter().map(|(n, _)| *n).collect();
                bail!(
                    "plugin `local: {}` is not a generator the xtask has (it has: {})",
                    plugin.local,
                    known.join(", ")
                );
            };
            ensure!(
                plugin.out.starts_with("generated"),
                "plugin {} writes to {}: every output belongs under generated/",
                plugin.local,
                plugin.out.display()
            );
            steps.push(Step {
                generator,
                out: plugin.out,
            });
        }
        Ok(Self {
            input_dirs: file.inputs.into_iter().map(|i| i.directory).collect(),
            steps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_checked_in_file() {
        let plan = Plan::load(&crate::workspace_root()).unwrap();
        assert_eq!(plan.input_dirs, vec![PathBuf::from("api")]);
        let generators: Vec<_> = plan.steps.iter().map(|s| s.generator).collect();
        assert!(generators.contains(&Generator::Prost));
        assert!(generators.contains(&Generator::Serde));
        assert!(generators.contains(&Generator::Crd));
        assert!(generators.contains(&Generator::Deploy));
    }

    #[test]
    fn rejects_an_unknown_plugin_naming_it() {
        let err = Plan::parse(
            "version: v2\ninputs: [{directory: api}]\nplugins: [{local: protoc-gen-go, out: generated/go}]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("protoc-gen-go"), "{err}");
    }

    #[test]
    fn rejects_output_outside_generated() {
        let err = Plan::parse("version: v2\ninputs: [{directory: api}]\nplugins: [{local: aether-prost, out: src}]\n")
            .unwrap_err();
        assert!(err.to_string().contains("under generated/"), "{err}");
    }
}
