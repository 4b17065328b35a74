//! The rule-tightening check on scratch copies of today's proto: each
//! edit below changes one buf.validate rule (or adds a field), and the
//! check names exactly the tightenings, with both values.

use std::path::{Path, PathBuf};

use xtask::breaking::rules::{Tightening, tightenings};
use xtask::{descriptors, proto_deps, workspace_root};

use crate::common::{self, PROTO};

/// The lowered descriptors of today's api/ with `edit` applied to the
/// proto's text.
fn compiled(edit: impl Fn(&str) -> String) -> Vec<u8> {
    let root = workspace_root();
    let deps = proto_deps::materialize(&root, &proto_deps::PinnedCrates::load(&root).unwrap()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    common::copy_api(scratch.path(), edit);
    descriptors::compile(scratch.path(), &[PathBuf::from("api")], &[deps])
        .unwrap()
        .proto3
}

fn own_files() -> Vec<String> {
    vec![
        Path::new(PROTO)
            .strip_prefix("api")
            .unwrap()
            .to_string_lossy()
            .into_owned(),
    ]
}

/// The tightenings from today's proto to today's with `from` replaced by `to`.
fn after(from: &str, to: &str) -> Vec<String> {
    static BASELINE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let baseline = BASELINE.get_or_init(|| compiled(|text| text.to_owned()));
    let current = compiled(|text| {
        assert!(
            text.contains(from),
            "the proto no longer holds {from:?}: update this test"
        );
        text.replacen(from, to, 1)
    });
    tightenings(baseline, &current, &own_files())
        .unwrap()
        .iter()
        .map(Tightening::to_string)
        .collect()
}

const HOSTS_MAX: &str = "(buf.validate.field).repeated.max_items = 16,";
const PORT: &str = "uint32 port = 2 [(buf.validate.field).uint32.lte = 65535];";
const PROVIDER: &str = "(buf.validate.field).enum.defined_only = true\n  ];";

#[test]
fn lowering_a_maximum_tightens_naming_field_rule_and_values() {
    assert_eq!(
        after(HOSTS_MAX, "(buf.validate.field).repeated.max_items = 8,"),
        ["VirtualHostSpec.hosts: repeated.max_items 16 → 8"]
    );
}

#[test]
fn raising_a_maximum_passes() {
    assert_eq!(
        after(HOSTS_MAX, "(buf.validate.field).repeated.max_items = 32,"),
        Vec::<String>::new()
    );
}

#[test]
fn a_new_field_with_rules_passes() {
    assert_eq!(
        after(
            "repeated HTTPRoute routes = 2 [",
            "string owner = 9 [(buf.validate.field).string.min_len = 3, (buf.validate.field).required = true];\n  \
             repeated HTTPRoute routes = 2 ["
        ),
        Vec::<String>::new()
    );
}

/// One row per kind of change: the edit, and every tightening the check
/// must name (none for a loosening).
#[test]
fn each_kind_of_tightening_is_named_and_each_loosening_passes() {
    let rows: &[(&str, &str, &[&str])] = &[
        // A larger minimum.
        (
            "(buf.validate.field).repeated.min_items = 1,\n    (buf.validate.field).repeated.max_items = 128",
            "(buf.validate.field).repeated.min_items = 2,\n    (buf.validate.field).repeated.max_items = 128",
            &["VirtualHostSpec.routes: repeated.min_items 1 → 2"],
        ),
        // A shorter maximum length, nested under `items`.
        (
            "(buf.validate.field).repeated.items.string.max_len = 253,",
            "(buf.validate.field).repeated.items.string.max_len = 200,",
            &["VirtualHostSpec.hosts: repeated.items.string.max_len 253 → 200"],
        ),
        // `unique` dropped: looser.
        ("(buf.validate.field).repeated.unique = true,", "", &[]),
        // Bounds on a number: lower, the same set written another way, a
        // stricter form at the same value, a new lower bound.
        (
            PORT,
            "uint32 port = 2 [(buf.validate.field).uint32.lte = 1024];",
            &["RouteBackend.port: uint32.lte 65535 → 1024"],
        ),
        (PORT, "uint32 port = 2 [(buf.validate.field).uint32.lt = 65536];", &[]),
        (
            PORT,
            "uint32 port = 2 [(buf.validate.field).uint32.lt = 65535];",
            &["RouteBackend.port: uint32.lt lte 65535 → 65535"],
        ),
        (
            PORT,
            "uint32 port = 2 [(buf.validate.field).uint32.lte = 65535, (buf.validate.field).uint32.gte = 1];",
            &["RouteBackend.port: uint32.gte - → 1"],
        ),
        // A new `required`, and a new set of allowed values.
        (
            PORT,
            "uint32 port = 2 [(buf.validate.field).uint32.lte = 65535, (buf.validate.field).required = true];",
            &["RouteBackend.port: required - → true"],
        ),
        (
            PORT,
            "uint32 port = 2 [(buf.validate.field).uint32.lte = 65535, (buf.validate.field).uint32.in = 80, \
             (buf.validate.field).uint32.in = 443];",
            &["RouteBackend.port: uint32.in - → [80, 443]"],
        ),
        // Enum rules: `defined_only` dropped is looser; a new `not_in` tightens.
        (PROVIDER, "(buf.validate.field).enum.defined_only = false\n  ];", &[]),
        (
            PROVIDER,
            "(buf.validate.field).enum.defined_only = true,\n    (buf.validate.field).enum.not_in = 2\n  ];",
            &["VirtualHostTLS.provider: enum.not_in - → [2]"],
        ),
        // A new CEL rule on an existing field, a changed one, a removed one.
        (
            "expression: \"!this.contains('%2F') && !this.contains('%2f')\"\n      }\n    ];\n\n    // Matches the request path only",
            "expression: \"!this.contains('%2F') && !this.contains('%2f')\"\n      },\n      \
             (buf.validate.field).cel = {id: \"path.short\", message: \"short\", expression: \"size(this) < 20\"}\n    ];\n\n    // Matches the request path only",
            &["RouteMatch.prefix: cel[path.short] - → `size(this) < 20`"],
        ),
        (
            "expression: \"!this.contains('//')\"",
            "expression: \"!this.contains('//') && !this.contains('~')\"",
            &[
                "RouteMatch.prefix: cel[path.no_empty_segment] `!this.contains('//')` → `!this.contains('//') && !this.contains('~')`",
            ],
        ),
        (
            "      (buf.validate.field).cel = {\n        id: \"path.no_empty_segment\"\n        \
             message: \"must not contain an empty path segment (//)\"\n        expression: \"!this.contains('//')\"\n      },\n",
            "",
            &[],
        ),
        // A message-level CEL rule, new: tighter.
        (
            "message RouteBackend {",
            "message RouteBackend {\n  option (buf.validate.message).cel = {id: \"backend.named\", message: \"named\", expression: \"this.service != ''\"};",
            &["RouteBackend: cel[backend.named] - → `this.service != ''`"],
        ),
        // A message oneof rule, new: tighter, named by its fields.
        (
            "message VirtualHostTLS {",
            "message VirtualHostTLS {\n  option (buf.validate.message).oneof = {fields: [\"secret_name\", \"provider\"]};",
            &["VirtualHostTLS: oneof - → [{fields: [\"secret_name\", \"provider\"]}]"],
        ),
        // The oneof no longer required: looser; required again is tighter.
        ("option (buf.validate.oneof).required = true;", "", &[]),
    ];
    for (from, to, expected) in rows {
        assert_eq!(after(from, to), *expected, "{from:?} → {to:?}");
    }
}
