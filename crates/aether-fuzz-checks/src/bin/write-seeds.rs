//! Writes the fuzz seeds made from the repository's manifests to
//! `<dir>/<target>/` (default `fuzz/seeds`), for `cargo fuzz run` and
//! `cargo fuzz cmin`. Run from the workspace root:
//! `cargo run -p aether-fuzz-checks --bin write-seeds`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::args_os()
        .nth(1)
        .map_or_else(|| root.join("fuzz/seeds"), PathBuf::from);
    let seeds = aether_fuzz_checks::seeds(&root)?;
    for seed in &seeds {
        let dir = out.join(seed.target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(&seed.name), &seed.bytes)?;
    }
    println!("wrote {} seeds under {}", seeds.len(), out.display());
    Ok(())
}
