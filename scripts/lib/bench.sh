# Shared by the gateway and receiver benchmarks (sourced after
# processes.sh; needs the caller's $bin, $work and $out directories and
# $duration, $connections, $body_bytes, and optionally $duplicates and
# $tampered, default 0).

# load_run NAME URL REQUESTS [ARGS...]: one timed max-throughput run of
# `adcp-loadgen run` with REQUESTS presigned to URL (the full target),
# signed with $work/seller-keys.json, extra ARGS passed on (--sink URL,
# --profile request); the JSON report goes to $out/NAME.json and its
# verdicts to stderr. Exits 2 if the load generator itself failed.
load_run() {
    local name=$1 url=$2 requests=$3
    shift 3
    echo "== $name: $duration s, $connections connections" >&2
    local rc=0
    "$bin/adcp-loadgen" run --url "$url" --key "$work/seller-keys.json" \
        --max --presign --duration "$duration" --connections "$connections" \
        --body-bytes "$body_bytes" --duplicates "${duplicates:-0}" --tampered "${tampered:-0}" \
        --requests "$requests" --json "$@" >"$out/$name.json" || rc=$?
    if [ "$rc" -gt 1 ]; then
        echo "$name: the load generator failed" >&2
        exit 2
    fi
    jq -r '.verdicts[] | "   [\(if .pass then "PASS" else "FAIL" end)] \(.name): \(.detail)"' "$out/$name.json" >&2
}

# rps NAME: the requests/s of run NAME.
rps() { jq '.requests_per_sec' "$out/$1.json"; }

# ratio A B: A / B, rounded down to two decimals.
ratio() { jq -n --argjson a "$1" --argjson b "$2" '$a / $b * 100 | floor / 100'; }

# verdicts NAME: "pass" when every verdict of run NAME passed, else "FAIL".
verdicts() { jq -r 'if all(.verdicts[]; .pass) then "pass" else "FAIL" end' "$out/$1.json"; }

# run_row NAME: req/s, p50, p99, max and seconds of run NAME, printf-ready
# (`%10.0f %9.2f %9.2f %9.1f %9.1f`).
run_row() {
    local f="$out/$1.json"
    printf '%10.0f %9.2f %9.2f %9.1f %9.1f' "$(rps "$1")" "$(jq '.latency.p50_ms' "$f")" \
        "$(jq '.latency.p99_ms' "$f")" "$(jq '.latency.max_ms' "$f")" "$(jq '.duration_secs' "$f")"
}
