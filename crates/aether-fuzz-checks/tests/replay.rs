//! The fuzz corpus and every crash the fuzzers found, replayed on stable
//! through the same invariants as the libFuzzer targets (`fuzz/`), so CI
//! checks them without nightly or cargo-fuzz.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use aether_fuzz_checks::{Outcome, TARGETS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files of `dir`, in name order; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

/// Runs `check` on every file of `dir`, naming the file that breaks an
/// invariant, and counts the files that decoded.
fn replay(dir: &Path, check: fn(&[u8]) -> Outcome) -> (usize, usize) {
    let files = files(dir);
    let mut decoded = 0;
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        match catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
            Ok(Outcome::Decoded) => decoded += 1,
            Ok(Outcome::Rejected) => {}
            Err(_) => panic!("{} breaks an invariant (the panic is above)", file.display()),
        }
    }
    (files.len(), decoded)
}

#[test]
fn every_fuzz_target_is_checked_here_and_has_a_corpus() {
    let mut on_disk: Vec<String> = files(&root().join("fuzz/fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .collect();
    on_disk.sort();
    let mut here: Vec<_> = TARGETS.iter().map(|t| t.name.to_owned()).collect();
    here.sort();
    assert_eq!(
        on_disk, here,
        "fuzz/fuzz_targets/ and aether_fuzz_checks::TARGETS differ"
    );
    for target in TARGETS {
        let corpus = root().join("fuzz/corpus").join(target.name);
        assert!(!files(&corpus).is_empty(), "{} is missing or empty", corpus.display());
    }
}

#[test]
fn the_corpus_and_every_regression_hold_every_invariant() {
    for target in TARGETS {
        let (count, decoded) = replay(&root().join("fuzz/corpus").join(target.name), target.check);
        // A corpus of inputs that all fail to decode would check nothing but
        // the error paths.
        assert!(decoded > 0, "{}: none of {count} corpus files decodes", target.name);
        // Inputs that once broke an invariant (see fuzz/README.md).
        replay(&root().join("fuzz/regressions").join(target.name), target.check);
    }
}

#[test]
fn every_repository_manifest_decodes_in_every_form_it_seeds() {
    let seeds = aether_fuzz_checks::seeds(&root()).unwrap();
    for target in [
        "manifest_yaml",
        "binary_spec",
        "kubernetes_json",
        "proto_json",
        "admission_review",
        "re2_guard",
        "re2_parity",
    ] {
        assert!(seeds.iter().any(|s| s.target == target), "no seed for {target}");
    }
    for seed in &seeds {
        let check = TARGETS.iter().find(|t| t.name == seed.target).unwrap().check;
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&seed.bytes)))
            .unwrap_or_else(|_| panic!("seed {}/{} breaks an invariant", seed.target, seed.name));
        // The guard's seeds include expressions it refuses (from the invalid
        // fixtures, and generated ones); refusing them is its job.
        if !seed.target.starts_with("re2_") {
            assert_eq!(outcome, Outcome::Decoded, "seed {}/{}", seed.target, seed.name);
        }
    }
}
