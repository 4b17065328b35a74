//! The published crate holds what it needs and nothing more: its sources,
//! the generated code and the three generated files it reads, its README,
//! changelog and license; no other README, test data or descriptor set
//! (the edition-2024 set and Envoy's are the workspace's, not the crate's).

use std::process::Command;

/// Every file `cargo package` would publish, but those cargo writes itself.
fn packaged() -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .args(["package", "-p", "aether-api", "--list", "--allow-dirty", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|f| ![".cargo_vcs_info.json", "Cargo.toml.orig", "Cargo.toml", "Cargo.lock"].contains(f))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_package_holds_only_what_the_crate_needs() {
    let files = packaged();
    let (sources, data): (Vec<&String>, Vec<&String>) = files.iter().partition(|f| f.ends_with(".rs"));
    assert_eq!(
        data,
        [
            "CHANGELOG.md",
            "LICENSE",
            "README.md",
            "generated/crds/virtualhost.schema.json",
            "generated/crds/virtualhosts.config.aether.io.yaml",
            "generated/descriptors/aether.proto3.binpb",
        ]
    );
    // Every source file of src/ and the generated code, and nothing of tests/.
    for needed in [
        "src/lib.rs",
        "generated/rust/aether.config.v1.rs",
        "generated/rust/aether.config.v1.serde.rs",
        "generated/rust/aether.config.v1.validate.rs",
    ] {
        assert!(
            sources.iter().any(|f| *f == needed),
            "{needed} is not packaged: {files:?}"
        );
    }
    // Every file under src/, in modules' folders too.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = vec![root.join("src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            assert!(sources.iter().any(|f| **f == name), "{name} is not packaged: {files:?}");
        }
    }
    assert!(
        sources
            .iter()
            .all(|f| f.starts_with("src/") || f.starts_with("generated/rust/") || f.starts_with("examples/")),
        "{sources:?}"
    );
}

#[test]
fn the_license_is_the_apache_license_2_0_as_the_manifest_says() {
    let license = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/LICENSE")).unwrap();
    assert_eq!(env!("CARGO_PKG_LICENSE"), "Apache-2.0");
    assert!(license.contains("Apache License\n                           Version 2.0, January 2004"));
    assert!(license.contains("END OF TERMS AND CONDITIONS"));
    assert_eq!(license.lines().count(), 202, "the standard text, whole");
}
