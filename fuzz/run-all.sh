#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600), one after another,
# from the seed corpora (fuzz/seed-corpus.sh builds them from the AdCP
# conformance vectors), and prints one summary line per target: executions,
# executions per second, corpus size and whether libFuzzer found anything.
# Findings (crash-*, leak-*, timeout-*, oom-*) stay in fuzz/artifacts/<target>/
# and must become regression tests.
#
# Usage: fuzz/run-all.sh [SECONDS] [TARGET...]
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-600}
shift || true
cd "$here"
command -v cargo-fuzz >/dev/null || { echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2; exit 2; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
[ -d corpus ] || ./seed-corpus.sh
mkdir -p logs
status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    log="logs/$t.log"
    if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        outcome="no finding"
    else
        outcome="FINDING (see $log and artifacts/$t/)"
        status=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    rate=$(grep -o 'exec/s: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo "?")
    files=$(find "corpus/$t" -type f | wc -l)
    printf '%-20s %ss  %s execs  %s exec/s  corpus %s files  %s\n' "$t" "$seconds" "$execs" "$rate" "$files" "$outcome"
done
exit $status
