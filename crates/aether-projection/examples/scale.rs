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
use aether_testing::fleet;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(Ok(n)) = args.next().map(|arg| arg.parse::<usize>()) else {
        eprintln!("usage: scale <objects> [input]");
        return ExitCode::FAILURE;
    };
    let objects = fleet::objects(n);
    if args.next().as_deref() == Some("input") {
        println!("{} objects generated", objects.len());
        return ExitCode::SUCCESS;
    }
    let start = Instant::now();
    match project(&objects, &ProjectionConfig::default()) {
        Ok(snapshot) => {
            let elapsed = start.elapsed();
            println!(
                "{n} objects: {} bytes of RouteConfiguration, {} conflicts, {elapsed:?}",
                snapshot.route_configuration_binary().len(),
                snapshot.report.conflicts.len(),
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
