//! An API author's next change, tried on a scratch copy of `api/`: a
//! `weight` with a range rule, a message-level CEL rule and a CEL rule on a
//! repeated field. Codegen must take all three (it used to refuse each) and
//! write them into the CRD and the validator.
//!
//! That the three judges agree on such rules is shown on the rule-kinds test
//! API, which has each of them (`Backend.weight`, `Backend`'s message rule,
//! `Lists.items`' and `Lists.scores`' list rules): see
//! xtask/tests/rule-kinds/tests.

use std::path::Path;

use serde_json::Value;
use xtask::generators::{self, Context, Output};
use xtask::plan::Plan;

use crate::common;

/// Every generated file for the proto in `root/api`, as `cargo xtask codegen`
/// would write it there.
fn generate(root: &Path) -> anyhow::Result<Vec<Output>> {
    let workspace = xtask::workspace_root();
    std::fs::copy(workspace.join("buf.gen.yaml"), root.join("buf.gen.yaml"))?;
    let plan = Plan::load(root)?;
    let pinned = xtask::proto_deps::PinnedCrates::load(&workspace)?;
    let context = Context::load(root, &plan.input_dirs, pinned)?;
    let mut files = Vec::new();
    for step in &plan.steps {
        files.extend(generators::run(&context, step)?);
    }
    Ok(files)
}

fn scratch_api(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_api(dir.path(), |proto| edit(proto.to_owned()));
    dir
}

fn file<'a>(files: &'a [Output], suffix: &str) -> &'a str {
    let output = files
        .iter()
        .find(|f| f.path.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix}"));
    std::str::from_utf8(&output.contents).unwrap()
}

fn with_the_new_rules(proto: String) -> String {
    let proto = proto.replacen(
        "message RouteBackend {",
        "message RouteBackend {\n  option (buf.validate.message).cel = {\n    id: \"backend.weighted_needs_port\"\n    \
         message: \"a weighted backend names its port\"\n    expression: \"this.weight <= 1u || this.port != 0u\"\n  };\n",
        1,
    );
    let proto = proto.replacen(
        "  uint32 port = 2 [(buf.validate.field).uint32.lte = 65535];",
        "  uint32 port = 2 [(buf.validate.field).uint32.lte = 65535];\n\n  // The weight.\n  \
         uint32 weight = 3 [(buf.validate.field).uint32 = {gte: 1, lte: 1000}];",
        1,
    );
    proto.replacen(
        "    (buf.validate.field).repeated.max_items = 128\n  ];",
        "    (buf.validate.field).repeated.max_items = 128,\n    (buf.validate.field).cel = {\n      \
         id: \"routes.one_healthz\"\n      message: \"at most one route matches /healthz exactly\"\n      \
         expression: \"this.filter(r, r.match.exact == '/healthz').size() <= 1\"\n    }\n  ];",
        1,
    )
}

#[test]
fn a_range_a_message_rule_and_a_list_rule_generate() {
    let scratch = scratch_api(with_the_new_rules);
    let files = generate(scratch.path()).unwrap();

    let crd: Value = serde_saphyr::from_str(file(&files, "virtualhosts.config.aether.io.yaml")).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let backend = &spec["properties"]["routes"]["items"]["properties"]["backend"];
    let weight = &backend["properties"]["weight"];
    assert_eq!(
        (weight["minimum"].as_i64(), weight["maximum"].as_i64()),
        (Some(1), Some(1000))
    );
    // weight's zero value breaks gte 1, so the property must be written.
    assert!(backend["required"].as_array().unwrap().contains(&"weight".into()));
    assert_eq!(
        backend["x-kubernetes-validations"][0]["rule"],
        "(has(self.weight) ? self.weight : 0) <= 1 || (has(self.port) ? self.port : 0) != 0"
    );
    // The list rule judges an absent list too, so it sits on the spec.
    let rules: Vec<_> = spec["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "(has(self.routes) ? self.routes : []).filter(r, (has(r.match) && has(r.match.exact) ? \
          r.match.exact : '') == '/healthz').size() <= 1"
        ]
    );

    let validator = file(&files, "aether.config.v1.validate.rs");
    for expected in [
        "\"uint32.gte_lte\"",
        "\"must be greater than or equal to 1 and less than or equal to 1000\"",
        "\"backend.weighted_needs_port\"",
        "\"routes.one_healthz\"",
    ] {
        assert!(validator.contains(expected), "{expected} not in the validator");
    }
}

#[test]
fn what_cannot_be_expressed_still_fails_naming_rule_and_field() {
    let scratch = scratch_api(|proto| {
        proto.replacen(
            "  uint32 port = 2 [(buf.validate.field).uint32.lte = 65535];",
            "  uint32 port = 2 [(buf.validate.field).uint32.lte = 65535];\n  \
             bytes key = 3 [(buf.validate.field).bytes.prefix = \"\\x01\"];",
            1,
        )
    });
    let err = format!("{:#}", generate(scratch.path()).unwrap_err());
    assert!(
        err.contains("bytes.prefix") && err.contains("aether.config.v1.RouteBackend.key"),
        "{err}"
    );
}
