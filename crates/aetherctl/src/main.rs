//! The `aetherctl` binary: everything is in the library ([`aetherctl::run`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = aetherctl::run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
