//! Running the external tools the tasks drive.

use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs `command` to completion, failing with the command line if it fails.
pub fn exec(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("could not start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}
