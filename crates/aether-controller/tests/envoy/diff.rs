//! `aetherctl diff`'s witness requests on a real Envoy: for each change of
//! `examples/match-regex.yaml` in aetherctl's `tests/diff/` (a route moved,
//! a regex route added above a prefix, an older object taking the host),
//! the requests `diff` shows get their old outcome from Envoy running the
//! old manifests, and their new outcome once it runs the new ones.

use std::path::Path;

use aether_e2e::Mode;
use aether_e2e::edge::{PATIENCE, clusters, projection};
use aether_explain::diff::{Side, diff};
use aether_explain::{Outcome, Request};

use crate::edge;
use crate::explain::{agrees, send};

const CHANGES: &[&str] = &["route-moved.yaml", "regex-added.yaml", "host-taken.yaml"];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Envoy's answer to `request` agrees with `outcome`.
fn answers(edge: &aether_e2e::Edge, request: &Request, outcome: &Outcome) -> Result<(), String> {
    let response = send(edge, request, &request.headers).map_err(|e| format!("{request}: {e}"))?;
    agrees(outcome, &response).map_err(|why| format!("{request}: {why}"))
}

fn check(mode: Mode) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let old = read(&root.join("examples/match-regex.yaml"));
    let changes: Vec<(&str, String)> = CHANGES
        .iter()
        .map(|name| (*name, read(&root.join("crates/aetherctl/tests/diff").join(name))))
        .collect();
    let mut texts: Vec<&str> = vec![&old];
    texts.extend(changes.iter().map(|(_, text)| text.as_str()));
    let every_cluster = texts.iter().flat_map(|text| clusters(&[text])).collect();
    let edge = edge(mode, &[("set.yaml", &old)], &every_cluster);
    let old_objects = aether_manifests::parse_manifests(&old).expect("the example parses");
    let old_snapshot = projection(&[&old]);
    for (name, new) in &changes {
        let new_objects = aether_manifests::parse_manifests(new).expect("the change parses");
        let new_snapshot = projection(&[new]);
        let hosts = diff(
            Side::new(&old_snapshot, &old_objects),
            Side::new(&new_snapshot, &new_objects),
        );
        let witnesses: Vec<_> = hosts.iter().flat_map(|host| &host.witnesses).collect();
        assert!(!witnesses.is_empty(), "{name}: diff shows no request: {hosts:?}");
        for (side, text) in [("old", &old), ("new", new)] {
            edge.write("set.yaml", text);
            aether_e2e::wait_until(
                &format!("{mode:?} {name}: Envoy answering as the {side} manifests"),
                PATIENCE,
                || edge.logs(),
                || {
                    witnesses
                        .iter()
                        .map(|w| answers(&edge, &w.request, if side == "old" { &w.old } else { &w.new }))
                        .collect::<Result<Vec<()>, String>>()
                        .ok()
                },
            );
            // Settled: every witness answers as predicted, not just once.
            for witness in &witnesses {
                let outcome = if side == "old" { &witness.old } else { &witness.new };
                answers(&edge, &witness.request, outcome).unwrap_or_else(|why| panic!("{mode:?} {name} {side}: {why}"));
            }
        }
        assert_eq!(edge.rejected(), 0, "{mode:?} {name}: Envoy rejected\n{}", edge.logs());
    }
}

#[test]
fn diffs_witnesses_change_outcome_on_envoy_over_files() {
    check(Mode::Files);
}

#[test]
fn diffs_witnesses_change_outcome_on_envoy_over_xds() {
    check(Mode::Xds);
}
