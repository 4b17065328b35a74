#!/usr/bin/env bash
# Fuzzing in CI (`.ci/run` calls this from the repository root or anywhere).
#
# Always: replays the corpus and every regression through the invariants on
# stable (the `replay` test of aether-fuzz-checks; `cargo test --workspace`
# runs it too). Then, when a nightly toolchain works and cargo-fuzz (pinned)
# is installed or installable, fuzzes each target for FUZZ_SECONDS (30 s)
# from the corpus; a crash fails the run and leaves its input under
# fuzz/artifacts/<target>/. Otherwise it says it only replayed the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.1
seconds="${FUZZ_SECONDS:-30}"

echo "fuzz: replaying fuzz/corpus and fuzz/regressions through the invariants (stable)"
cargo test --package aether-fuzz-checks --test replay

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain: only replayed the corpus and regressions, no fuzzing"
    exit 0
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    if ! cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"; then
        echo "fuzz: cargo-fuzz $CARGO_FUZZ_VERSION not installable: only replayed the corpus and regressions, no fuzzing"
        exit 0
    fi
fi

targets=$(cd fuzz && cargo +nightly fuzz list)
# No sanitizer: the code under test is safe Rust (unsafe_code = forbid), so
# AddressSanitizer would watch only dependencies, at two to three times the
# cost per run. Overflow checks are on (fuzz/Cargo.toml).
(cd fuzz && cargo +nightly fuzz build --sanitizer none)
# New inputs go to a scratch folder, not into the checked-in corpus.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $targets; do
    echo "fuzz: $target for ${seconds} s"
    mkdir -p "$scratch/$target" "fuzz/regressions/$target"
    log="$scratch/$target.log"
    if (cd fuzz && cargo +nightly fuzz run --sanitizer none "$target" \
        "$scratch/$target" "corpus/$target" "regressions/$target" \
        -- -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) \
        >"$log" 2>&1; then
        grep -E '^#[0-9]+ +DONE|^stat::number_of_executed_units' "$log" || true
    else
        tail -n 60 "$log"
        echo "fuzz: $target failed (a crash's input is under fuzz/artifacts/$target/)"
        exit 1
    fi
done
echo "fuzz: fuzzed each target (${targets//$'\n'/, }) for ${seconds} s with no crash"
