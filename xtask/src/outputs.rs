//! Writing generated files, or proving the checked-in ones are current.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::generators::Output;

/// The directory the API's outputs live under, relative to the workspace root.
pub const GENERATED: &str = "generated";

/// Every directory codegen owns: the API's, and the test API's (see
/// [`crate::rule_kinds`]). A file in one that no generator writes is extra.
pub const OWNED_DIRS: [&str; 2] = [GENERATED, crate::rule_kinds::OUT_DIR];

/// Writes `outputs` under `root` and deletes files under generated/ that no
/// generator produces any more. Unchanged files are not touched.
pub fn write(root: &Path, outputs: &[Output]) -> Result<()> {
    for output in outputs {
        let path = root.join(&output.path);
        if std::fs::read(&path).ok().as_deref() == Some(output.contents.as_slice()) {
            continue;
        }
        std::fs::create_dir_all(path.parent().expect("outputs live under generated/"))?;
        std::fs::write(&path, &output.contents).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", output.path.display());
    }
    for leftover in leftovers(root, outputs)? {
        std::fs::remove_file(root.join(&leftover))?;
        println!("removed {}", leftover.display());
    }
    Ok(())
}

/// Fails, naming each file, if generated/ under `root` differs from `outputs`.
pub fn check(root: &Path, outputs: &[Output]) -> Result<()> {
    let mut problems = Vec::new();
    for output in outputs {
        match std::fs::read(root.join(&output.path)) {
            Ok(bytes) if bytes == output.contents => {}
            Ok(_) => problems.push(format!("  stale:   {}", output.path.display())),
            Err(_) => problems.push(format!("  missing: {}", output.path.display())),
        }
    }
    for leftover in leftovers(root, outputs)? {
        problems.push(format!("  extra:   {} (no generator writes it)", leftover.display()));
    }
    if !problems.is_empty() {
        bail!(
            "generated/ (or the test API's generated files) does not match the protos and the generators:\n{}\n\
             Run `cargo xtask codegen` and commit the result; never edit generated/ by hand.",
            problems.join("\n")
        );
    }
    Ok(())
}

/// Files under generated/ that no output names.
fn leftovers(root: &Path, outputs: &[Output]) -> Result<Vec<PathBuf>> {
    let wanted: BTreeSet<_> = outputs.iter().map(|o| o.path.clone()).collect();
    let mut found = Vec::new();
    for dir in OWNED_DIRS {
        list_files(root, Path::new(dir), &mut found)?;
    }
    found.retain(|path| !wanted.contains(path));
    found.sort();
    Ok(found)
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry?;
        let relative = dir.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            list_files(root, &relative, out)?;
        } else {
            out.push(relative);
        }
    }
    Ok(())
}
