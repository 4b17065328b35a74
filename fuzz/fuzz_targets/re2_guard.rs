//! See `aether_fuzz_checks::re2_guard` for what this target checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    aether_fuzz_checks::re2_guard(data);
});
