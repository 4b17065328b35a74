//! Builds the synthetic set of the benchmarks and projects it once, for
//! measuring peak memory from outside:
//!
//! ```text
//! cargo build --release -p aether-projection --example scale
//! /usr/bin/time -v target/release/examples/scale 50000          # input + projection
//! /usr/bin/time -v target/release/examples/scale 50000 input    # input only
//! ```

use std::process::ExitCode;
use std::time::Instant;

use aether_projection::{ProjectionConfig, project};

#[path = "../benches/fixtures.rs"]
mod fixtures;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(Ok(n)) = args.next().map(|arg| arg.parse::<usize>()) else {
        eprintln!("usage: scale <objects> [input]");
        return ExitCode::FAILURE;
    };
    let objects = fixtures::objects(n);
    if args.next().as_deref() == Some("input") {
        println!("{} objects generated", objects.len());
        return ExitCode::SUCCESS;
    }
    let start = Instant::now();
    match project(objects, &ProjectionConfig::default()) {
        Ok(snapshot) => {
            println!(
                "{n} objects: {} virtual hosts, {} conflicts, {:?}",
                snapshot.route_configuration().unwrap().virtual_hosts.len(),
                snapshot.report.conflicts.len(),
                start.elapsed()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
