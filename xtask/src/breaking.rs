//! `cargo xtask breaking`: `buf breaking` against an earlier commit.

use std::path::Path;

use anyhow::Result;

pub fn run(_root: &Path, _against: &str) -> Result<()> {
    anyhow::bail!("not yet")
}
