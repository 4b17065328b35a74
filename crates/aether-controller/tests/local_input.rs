//! Local mode on the inputs of issue 12 that once made it serve the wrong
//! thing: each case fails on the code before its fix.

mod common;

use aether_controller::local::Local;
use aether_manifests::testing::atomic_writer_volume;
use common::{named, options, served_hosts};

/// A ConfigMap mounted as a volume: every pass reads each file once (no
/// duplicates reported), and a new version replaces the old one whole.
#[test]
fn a_configmap_volume_is_read_once_per_file_and_follows_its_versions() {
    let (input, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b, c) = (named("a"), named("b"), named("c"));
    atomic_writer_volume(input.path(), "1", &[("a.yaml", &a), ("b.yaml", &b)]);
    let mut local = Local::new(options(input.path(), out.path())).unwrap();
    for pass in 0..2 {
        let summary = local.reconcile().unwrap();
        assert_eq!(summary.input_errors, 0, "pass {pass}: {summary:?}");
        assert_eq!(served_hosts(out.path()), ["a.example.com", "b.example.com"]);
    }
    atomic_writer_volume(input.path(), "2", &[("a.yaml", &a), ("sub/c.yaml", &c)]);
    let summary = local.reconcile().unwrap();
    assert_eq!(summary.input_errors, 0, "{summary:?}");
    assert_eq!(served_hosts(out.path()), ["a.example.com", "c.example.com"]);
}
