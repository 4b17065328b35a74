//! `cargo xtask ci`: everything CI checks.

use std::path::Path;

use anyhow::Result;

pub fn run(_root: &Path) -> Result<()> {
    anyhow::bail!("not yet")
}
