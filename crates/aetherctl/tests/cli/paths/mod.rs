//! Snapshot settings for the binary's output: the directories it names
//! (temporary ones, the examples) differ between machines and runs.

use std::path::{Path, PathBuf};

/// The repository's `examples/`, as the tests name it to the binary.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs `assertions` with each of `dirs` shown as its label (`[dir]`,
/// `[examples]`) in the snapshots.
pub fn shown_as<R>(dirs: &[(&Path, &str)], assertions: impl FnOnce() -> R) -> R {
    let mut settings = insta::Settings::clone_current();
    for (dir, label) in dirs {
        settings.add_filter(&regex::escape(&dir.display().to_string()), *label);
    }
    settings.bind(assertions)
}
