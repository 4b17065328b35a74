#!/usr/bin/env bash
# Rebuilds corpus/<target>/ (default: every target) from the working corpus
# of measure.sh (work/<target>/), the seeds and the current corpus: what
# `cargo fuzz cmin` does (a libFuzzer merge), on edge coverage without hit
# counts and with a greedy set cover; then, to keep the checked-in corpus to
# a few dozen files, the KEEP (40) largest of the minimized set (the larger
# inputs cover the most). Prints the coverage of the full minimized set and
# of what is kept. Set NO_BUILD=1 to use the targets as last built.
set -euo pipefail
cd "$(dirname "$0")"
keep="${KEEP:-40}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
[ -n "${NO_BUILD:-}" ] || nice -n 19 cargo +nightly fuzz build --sanitizer none "${targets[@]}"
bin=target/x86_64-unknown-linux-gnu/release
mkdir -p logs
for target in "${targets[@]}"; do
    all=$(mktemp -d)
    min=$(mktemp -d)
    for dir in "work/$target" "seeds/$target" "corpus/$target"; do
        [ -d "$dir" ] && find "$dir" -maxdepth 1 -type f -exec cp -t "$all" {} +
    done
    nice -n 19 "$bin/$target" -merge=1 -use_counters=0 -set_cover_merge=1 -max_len=1048576 "$min" "$all" \
        >"logs/cmin-$target.log" 2>&1
    rm -rf "corpus/$target"
    mkdir -p "corpus/$target"
    find "$min" -maxdepth 1 -type f -printf '%s %p\n' | sort -rn | head -n "$keep" | cut -d' ' -f2- |
        xargs -r cp -t "corpus/$target"
    full=$(nice -n 19 "$bin/$target" -runs=0 -max_len=1048576 "$min" 2>&1 | grep INITED || true)
    kept=$(nice -n 19 "$bin/$target" -runs=0 -max_len=1048576 "corpus/$target" 2>&1 | grep INITED || true)
    echo "$target: $(find "$min" -type f | wc -l) files after cmin, ${full#*INITED }"
    echo "$target: $(find "corpus/$target" -type f | wc -l) kept, ${kept#*INITED }"
    rm -rf "$all" "$min"
done
