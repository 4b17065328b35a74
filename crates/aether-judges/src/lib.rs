//! The judges a spec is compared by (dev-only): the CRD as the API server
//! judges it offline, and the reference protovalidate (Python). It does not
//! depend on `aether-api`, so that `aether-api`'s own tests can use it
//! without a second copy of its types.

pub mod crd;
pub mod protovalidate;

use std::path::{Path, PathBuf};

/// The workspace root: the nearest directory above this crate that holds `buf.gen.yaml`.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("buf.gen.yaml").is_file())
        .expect("the crate lies inside the workspace")
        .to_path_buf()
}

/// The pinned Python (protobuf 7.x, protovalidate 2.x) that `cargo xtask ci`
/// installs into target/pyenv; `AETHER_PYTHON` overrides it. Missing, the
/// test fails: the reference runtimes are part of what these tests prove.
pub fn reference_python() -> PathBuf {
    if let Some(path) = std::env::var_os("AETHER_PYTHON") {
        return path.into();
    }
    let path = workspace_root().join("target/pyenv/bin/python");
    assert!(
        path.exists(),
        "{} is missing: run `cargo xtask pyenv` (or `cargo xtask ci`) to install the pinned \
         reference runtimes, or point AETHER_PYTHON at a Python that has them",
        path.display()
    );
    path
}
