//! See `aether_fuzz_checks::re2_parity` for what this target checks (it
//! needs the pinned RE2: `cargo xtask pyenv`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    aether_fuzz_checks::re2_parity(data);
});
