#!/usr/bin/env bash
# The long measurement behind the numbers in fuzz/README.md: each named
# target (default: all) for RUNS executions (10 million), niced, from its
# checked-in corpus plus the seeds written from the repository's manifests,
# growing a working corpus under fuzz/work/<target>/ (not checked in).
# Logs go to fuzz/logs/long-<target>.log; the last lines hold libFuzzer's
# `DONE cov: ... ft: ...` and its final stats. MAX_LEN (4096) and TIMEOUT
# (300 s: libFuzzer times wall-clock, and a niced run can be starved by
# builds) override the limits.
set -euo pipefail
cd "$(dirname "$0")"
runs="${RUNS:-10000000}"
cargo run --quiet --manifest-path ../Cargo.toml --package aether-fuzz-checks --bin write-seeds
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
mkdir -p logs
for target in "${targets[@]}"; do
    mkdir -p "work/$target" "corpus/$target" "seeds/$target" "artifacts/$target"
    start=$(date +%s)
    status=0
    nice -n 19 cargo +nightly fuzz run --sanitizer none "$target" "work/$target" "corpus/$target" "seeds/$target" \
        -- -runs="$runs" -max_len="${MAX_LEN:-4096}" -timeout="${TIMEOUT:-300}" -rss_limit_mb=2048 -print_final_stats=1 \
        >"logs/long-$target.log" 2>&1 || status=$?
    echo "$target: exit $status in $(($(date +%s) - start)) s"
    grep -E '^#[0-9]+ +DONE|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "logs/long-$target.log" || true
done
