#!/usr/bin/env bash
# Runs every fuzz target briefly: `fuzz/run-brief.sh [SECONDS]` (default 20 s per target).
#
# Installs cargo-fuzz if it is missing. cargo-fuzz needs nightly compiler flags
# (-Zsanitizer=address); with only a stable toolchain, set RUSTC_BOOTSTRAP=1 (done here
# automatically when no nightly toolchain is installed). Exits non-zero on the first crash;
# the crashing input is left under fuzz/artifacts/<target>/.
set -euo pipefail

seconds="${1:-20}"
cd "$(dirname "$0")"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    echo "no nightly toolchain: using the stable one with RUSTC_BOOTSTRAP=1"
    export RUSTC_BOOTSTRAP=1
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in $(cargo "${toolchain[@]}" fuzz list); do
    echo "== fuzzing ${target} for ${seconds} s"
    mkdir -p "corpus/${target}"
    # A target's dictionary, if it has one (dict/<target>.dict: pieces its inputs are made of).
    dict=()
    if [[ -f "dict/${target}.dict" ]]; then
        dict=(-dict="dict/${target}.dict")
    fi
    if ! cargo "${toolchain[@]}" fuzz run "${target}" -- -max_total_time="${seconds}" "${dict[@]}" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz target ${target} failed; the input is under fuzz/artifacts/${target}/" >&2
        exit 1
    fi
    # libFuzzer's closing lines: total executions, speed, coverage.
    grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs)' "$log" || tail -n 3 "$log"
done
