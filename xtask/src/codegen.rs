//! `cargo xtask codegen`: buf.gen.yaml, carried out.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::generators::{self, Context, Output};
use crate::plan::Plan;
use crate::{outputs, proto_deps, rule_kinds};

pub fn run(root: &Path, check: bool) -> Result<()> {
    let generated = generate(root)?;
    if check {
        outputs::check(root, &generated)?;
        println!("generated/ is current ({} files)", generated.len());
        Ok(())
    } else {
        outputs::write(root, &generated)
    }
}

/// Every file under generated/, in memory, in a stable order.
pub fn generate(root: &Path) -> Result<Vec<Output>> {
    let plan = Plan::load(root)?;
    let pinned = proto_deps::PinnedCrates::load(root)?;
    let context = Context::load(root, &plan.input_dirs, pinned.clone())?;
    let mut files = Vec::new();
    for step in &plan.steps {
        files.extend(generators::run(&context, step)?);
    }
    files.push(readme(&files));
    files.extend(rule_kinds::generate(root, pinned)?);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// generated/README.md: what each file is, and that none is edited by hand.
fn readme(files: &[Output]) -> Output {
    let mut text = String::from(
        "# generated/\n\n\
         Written by `cargo xtask codegen` from `api/` as `buf.gen.yaml` declares. \
         Do not edit: change the proto or the xtask and regenerate. \
         CI runs `cargo xtask codegen --check`, which fails on any difference.\n\n",
    );
    let mut paths: Vec<_> = files
        .iter()
        .filter(|f| f.path.starts_with(outputs::GENERATED))
        .map(|f| f.path.display().to_string())
        .collect();
    paths.sort();
    for path in paths {
        let _ = writeln!(text, "- `{path}`");
    }
    Output {
        path: Path::new(outputs::GENERATED).join("README.md"),
        contents: text.into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generating_twice_is_byte_identical() {
        let root = crate::workspace_root();
        assert_eq!(generate(&root).unwrap(), generate(&root).unwrap());
    }

    #[test]
    fn the_checked_in_files_are_current() {
        let root = crate::workspace_root();
        outputs::check(&root, &generate(&root).unwrap()).unwrap();
    }

    #[test]
    fn check_names_each_hand_edited_missing_or_extra_file() {
        let root = crate::workspace_root();
        let generated = generate(&root).unwrap();
        let copy = tempfile::tempdir().unwrap();
        outputs::write(copy.path(), &generated).unwrap();
        outputs::check(copy.path(), &generated).unwrap();

        let edited = generated
            .iter()
            .find(|o| o.path.ends_with("aether.config.v1.rs"))
            .unwrap();
        let mut text = String::from_utf8(edited.contents.clone()).unwrap();
        text.push_str("// a hand edit\n");
        std::fs::write(copy.path().join(&edited.path), text).unwrap();
        let missing = generated.iter().find(|o| o.path.ends_with("aether.binpb")).unwrap();
        std::fs::remove_file(copy.path().join(&missing.path)).unwrap();
        std::fs::write(copy.path().join("generated/rust/old.rs"), "").unwrap();

        let message = outputs::check(copy.path(), &generated).unwrap_err().to_string();
        assert!(
            message.contains("stale:   generated/rust/aether.config.v1.rs"),
            "{message}"
        );
        assert!(
            message.contains("missing: generated/descriptors/aether.binpb"),
            "{message}"
        );
        assert!(message.contains("extra:   generated/rust/old.rs"), "{message}");
        assert!(message.contains("cargo xtask codegen"), "{message}");

        // Writing repairs it, extra file included.
        outputs::write(copy.path(), &generated).unwrap();
        outputs::check(copy.path(), &generated).unwrap();
    }
}
