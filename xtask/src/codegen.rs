//! `cargo xtask codegen`: buf.gen.yaml, carried out.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::generators::{self, Output};
use crate::plan::Plan;
use crate::{descriptors, outputs, proto_deps};

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
    let deps = proto_deps::materialize(root)?;
    let compiled = descriptors::compile(root, &plan.input_dirs, &[deps])?;
    let mut files = Vec::new();
    for step in &plan.steps {
        files.extend(generators::run(step, &compiled)?);
    }
    files.push(readme(&files));
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
    let mut paths: Vec<_> = files.iter().map(|f| f.path.display().to_string()).collect();
    paths.sort();
    for path in paths {
        let _ = writeln!(text, "- `{path}`");
    }
    Output {
        path: Path::new(outputs::GENERATED).join("README.md"),
        contents: text.into_bytes(),
    }
}
