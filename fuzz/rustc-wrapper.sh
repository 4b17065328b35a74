#!/usr/bin/env bash
# rustc for the fuzz builds, without `-sanitizer-coverage-trace-compares`
# for the regex search engines (regex-automata and the memchr and
# aho-corasick prefilters it calls). Their inner loops compare DFA state
# numbers and bytes once per input byte: traced, those calls were half the
# run time of the targets that validate (validate_structured, projection,
# manifest_yaml), and what they compare guides the fuzzer to nothing of
# this project's. They keep their edge coverage; every other crate (the
# regex parser the RE2 guard uses, this project's) keeps comparison
# tracing too.
set -euo pipefail
rustc=$1
shift
crate=
prev=
for arg in "$@"; do
    if [ "$prev" = "--crate-name" ]; then
        crate=$arg
    fi
    prev=$arg
done
case "$crate" in
regex_automata | memchr | aho_corasick)
    args=()
    for arg in "$@"; do
        [ "$arg" = "-Cllvm-args=-sanitizer-coverage-trace-compares" ] || args+=("$arg")
    done
    exec "$rustc" "${args[@]}"
    ;;
*)
    exec "$rustc" "$@"
    ;;
esac
