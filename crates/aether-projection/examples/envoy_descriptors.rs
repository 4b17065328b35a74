//! Writes `descriptors/envoy_route_v3.binpb`: the part of envoy-types' own
//! descriptor set (`src/generated/types.bin` in its crate) that
//! `envoy.config.route.v3.RouteConfiguration` needs, without source info.
//!
//! envoy-types ships the descriptors but exposes no API for them, so the
//! subset is checked in; the `descriptors_match_envoy_types` test proves it
//! is still what this command writes.
//!
//! ```text
//! cargo run -p aether-projection --example envoy_descriptors -- <envoy-types dir> [out]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: envoy_descriptors <envoy-types crate dir> [out.binpb]");
        return ExitCode::FAILURE;
    };
    let out = args
        .next()
        .unwrap_or_else(|| "crates/aether-projection/descriptors/envoy_route_v3.binpb".into());
    let full = match std::fs::read(std::path::Path::new(&dir).join("src/generated/types.bin")) {
        Ok(bytes) => bytes,
        Err(err) => {
            eprintln!("reading types.bin under {dir}: {err}");
            return ExitCode::FAILURE;
        }
    };
    match aether_projection::descriptors::route_configuration_subset(&full) {
        Ok(subset) => match std::fs::write(&out, subset) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("writing {out}: {err}");
                ExitCode::FAILURE
            }
        },
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
