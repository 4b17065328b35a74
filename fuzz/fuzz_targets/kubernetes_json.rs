//! See `aether_fuzz_checks::kubernetes_json` for what this target checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    aether_fuzz_checks::kubernetes_json(data);
});
