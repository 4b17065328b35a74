//! The `aetherctl` binary's command line: usage errors, `--help` and `crd`.

use crate::common::aetherctl;

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["validate"][..],
        &["validate", "--output", "xml", "x.yaml"][..],
        &["frobnicate"][..],
        &["crd", "extra"][..],
    ] {
        let run = aetherctl(args);
        assert_eq!(run.code, 2, "{args:?}");
        // clap's own message: the help, or the error and how to get help.
        assert!(
            run.stderr.contains("Usage: aetherctl") || run.stderr.contains("For more information, try '--help'"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{args:?}");
    }
    let run = aetherctl(&["validate", "--output", "xml", "x.yaml"]);
    assert!(
        run.stderr.contains("invalid value 'xml' for '--output <OUTPUT>'"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_documents_exit_codes_limits_and_the_json_shape() {
    let run = aetherctl(&["validate", "--help"]);
    assert_eq!(run.code, 0);
    for needle in [
        "Exit codes:",
        "2  a usage, I/O or parse error",
        "file size             16777216 bytes",
        "nesting depth         64 levels",
        "alias expansion       100000 nodes",
        "\"errors\": [{\"file\", \"document\": number|null",
    ] {
        assert!(run.stdout.contains(needle), "no {needle:?} in:\n{}", run.stdout);
    }
}

#[test]
fn crd_prints_the_generated_crd() {
    let run = aetherctl(&["crd"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, aether_api::CRD_YAML);
    assert!(run.stdout.contains("name: virtualhosts.config.aether.io"));
}
