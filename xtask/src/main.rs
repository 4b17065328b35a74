//! `cargo xtask`: the project's build tasks.
//!
//! The data flows one way: the proto (`api/`) is compiled into descriptors
//! ([`descriptors`]), the generators named in `buf.gen.yaml` ([`plan`]) turn
//! them into files ([`generators`]), and [`outputs`] writes those files under
//! `generated/` or checks that they are current.

mod breaking;
mod ci;
mod codegen;
mod descriptors;
mod generators;
mod outputs;
mod plan;
mod proto_deps;
mod rules;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// `buf breaking` (WIRE_JSON) of api/ against an earlier commit.
    Breaking {
        /// The git revision to compare against.
        #[arg(long, default_value = "HEAD~1")]
        against: String,
    },
    /// The whole CI: pinned tools, drift check, buf, fmt, clippy and tests.
    Ci,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = workspace_root();
    let result = match cli.task {
        Task::Codegen { check } => codegen::run(&root, check),
        Task::Breaking { against } => breaking::run(&root, &against),
        Task::Ci => ci::run(&root),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the xtask crate lives one level below it.
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("xtask/ always has a parent directory")
        .to_path_buf()
}
