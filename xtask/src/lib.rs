//! `cargo xtask`: the project's build tasks, as a library so that tests and
//! benches reach them.
//!
//! The data flows one way: the proto (`api/`) is compiled into descriptors
//! ([`descriptors`]), the generators named in `buf.gen.yaml` ([`plan`]) turn
//! them into files ([`generators`]), and [`outputs`] writes those files under
//! `generated/` or checks that they are current.

pub mod breaking;
pub mod ci;
pub mod codegen;
pub mod descriptors;
pub mod generators;
pub mod image;
pub mod match_probe;
pub mod outputs;
pub mod plan;
pub mod process;
pub mod proto_deps;
pub mod pyenv;
pub mod rule_kinds;
pub use aether_rules as rules;

use std::path::PathBuf;

/// The workspace root: the xtask crate lives one level below it.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("xtask/ always has a parent directory")
        .to_path_buf()
}
