#!/usr/bin/env bash
# Gateway throughput against the bare axum baseline.
#
# Builds the release binaries, then starts on loopback (free ports):
#   - `adcp-loadgen bare`: the same axum/hyper stack answering 200 after
#     reading the body, verifying nothing (the baseline);
#   - `adcp-loadgen sink`: the gateways' upstream, counting events;
#   - `adcp-loadgen bare --forward`: the bare server posting each body to
#     the sink before answering, as the gateway does (the second baseline:
#     the gateway's work minus the checklist and the stores);
#   - `adcp-sig gateway --store memory:` and `adcp-sig gateway --store
#     sqlite:…` in front of the sink, with a fresh seller key;
#   - the same gateways in request mode (`--profile request --capabilities
#     …`, `create_media_buy` in `required_for`) in front of the sink,
#     driven by `adcp-loadgen run --profile request` (signed MCP
#     `tools/call create_media_buy` requests to `/mcp`; the sink counts
#     them by an unsigned `X-Adcp-Idempotency-Key` the gateway passes
#     through);
# and runs `adcp-loadgen run --max --presign` against each for the same
# duration and connections (unique events only unless DUPLICATES /
# TAMPERED say otherwise). Prints req/s, p99 and the ratios to both
# baselines, and checks that each gateway forwarded every event exactly once.
#
# Usage: scripts/bench-gateway.sh [SECONDS]      (default 20)
# Environment: CONNECTIONS (32), BODY_BYTES (200), DUPLICATES (0),
#   TAMPERED (0), STORES ("memory sqlite"; any --store URL works too),
#   KEYS (64 seller keys, requests rotate over them), REQUEST_MODE (1; 0
#   skips the request-mode runs), OUT (a directory for the JSON
#   reports; default a temporary directory, removed at exit),
#   CARGO_TARGET_DIR (default target/).
# Every process started here is stopped at exit.
set -euo pipefail

duration=${1:-20}
connections=${CONNECTIONS:-32}
body_bytes=${BODY_BYTES:-200}
duplicates=${DUPLICATES:-0}
tampered=${TAMPERED:-0}
stores=${STORES:-memory sqlite}
keys=${KEYS:-64}
request_mode=${REQUEST_MODE:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"

echo "building release binaries..." >&2
cargo build --release -q -p adcp-sig -p adcp-loadgen

work=$(mktemp -d)
out=${OUT:-$work}
mkdir -p "$out"
pids=()
cleanup() {
    stop_started
    # A Redis store keeps this run's keys under the namespace bench_$$.
    for store in $stores; do
        case $store in
        redis*) drop_redis_keys "$store" "bench_$$:*" ;;
        esac
    done
    rm -rf "$work"
}
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"
trap cleanup EXIT
seller_keys "$keys"

start bare "$bin/adcp-loadgen" bare --listen 127.0.0.1:0
bare_url=$URL
start sink "$bin/adcp-loadgen" sink --listen 127.0.0.1:0
sink_url=$URL
start bare-forward "$bin/adcp-loadgen" bare --listen 127.0.0.1:0 --forward "$sink_url/events"
forward_url=$URL

# run NAME URL REQUESTS [--sink URL] [--profile request]: one timed
# max-throughput run with REQUESTS presigned to URL (the full target), JSON
# to $out/NAME.json.
run() {
    local name=$1 url=$2 requests=$3
    shift 3
    echo "== $name: $duration s, $connections connections" >&2
    local rc=0
    "$bin/adcp-loadgen" run --url "$url" --key "$work/seller-keys.json" \
        --max --presign --duration "$duration" --connections "$connections" \
        --body-bytes "$body_bytes" --duplicates "$duplicates" --tampered "$tampered" \
        --requests "$requests" --json "$@" >"$out/$name.json" || rc=$?
    if [ "$rc" -gt 1 ]; then
        echo "$name: the load generator failed" >&2
        exit 2
    fi
    jq -r '.verdicts[] | "   [\(if .pass then "PASS" else "FAIL" end)] \(.name): \(.detail)"' "$out/$name.json" >&2
}

# Presign enough requests for the whole duration (a pool that runs out
# ends the run early; the report's duration says so).
run bare "$bare_url/webhooks/adcp" $((duration * 50000))
run bare-forward "$forward_url/webhooks/adcp" $((duration * 25000))
names=(bare bare-forward)
for store in $stores; do
    case $store in
    memory) store_url=memory: ;;
    sqlite) store_url="sqlite:$work/dedup-$RANDOM.sqlite" ;;
    *) store_url=$store ;;
    esac
    name="gateway-${store%%:*}"
    start "$name" "$bin/adcp-sig" gateway --listen 127.0.0.1:0 --upstream "$sink_url/events" \
        --jwks "$work/seller-jwks.json" --jwks-agent https://seller.example/mcp \
        --store "$store_url" --store-namespace "bench_$$" --quiet
    gateway_pid=$PID
    run "$name" "$URL/webhooks/adcp" $((duration * 15000)) --sink "$sink_url"
    kill "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
    names+=("$name")
done

# Request mode: the seller's capability requires signing create_media_buy;
# the buyer keys are the same key set, as --jwks.
if [ "$request_mode" = 1 ]; then
    printf '%s\n' '{"supported": true, "covers_content_digest": "required", "required_for": ["create_media_buy"]}' \
        >"$work/capabilities.json"
    for store in $stores; do
        case $store in
        memory) store_url=memory: ;;
        sqlite) store_url="sqlite:$work/replay-$RANDOM.sqlite" ;;
        *) store_url=$store ;;
        esac
        name="request-${store%%:*}"
        start "$name" "$bin/adcp-sig" gateway --profile request --listen 127.0.0.1:0 \
            --upstream "$sink_url" --capabilities "$work/capabilities.json" \
            --jwks "$work/seller-jwks.json" --jwks-agent https://buyer.example/ \
            --store "$store_url" --store-namespace "bench_$$" --quiet
        gateway_pid=$PID
        run "$name" "$URL/mcp" $((duration * 15000)) --sink "$sink_url" --profile request
        kill "$gateway_pid" 2>/dev/null || true
        wait "$gateway_pid" 2>/dev/null || true
        names+=("$name")
    done
fi

bare_rps=$(jq '.requests_per_sec' "$out/bare.json")
forward_rps=$(jq '.requests_per_sec' "$out/bare-forward.json")
echo
printf '%-16s %10s %9s %9s %9s %9s %8s %8s  %s\n' target "req/s" "p50 ms" "p99 ms" "max ms" "secs" "/bare" "/fwd" verdicts
for name in "${names[@]}"; do
    f="$out/$name.json"
    rps=$(jq '.requests_per_sec' "$f")
    ratio=$(jq -n --argjson a "$rps" --argjson b "$bare_rps" '$a / $b * 100 | floor / 100')
    ratio_forward=$(jq -n --argjson a "$rps" --argjson b "$forward_rps" '$a / $b * 100 | floor / 100')
    verdicts=$(jq -r 'if all(.verdicts[]; .pass) then "pass" else "FAIL" end' "$f")
    printf '%-16s %10.0f %9.2f %9.2f %9.1f %9.1f %8s %8s  %s\n' "$name" "$rps" \
        "$(jq '.latency.p50_ms' "$f")" "$(jq '.latency.p99_ms' "$f")" "$(jq '.latency.max_ms' "$f")" \
        "$(jq '.duration_secs' "$f")" "$ratio" "$ratio_forward" "$verdicts"
done
echo
echo "($(nproc) CPUs; load generator, servers and sink on one machine, loopback; $connections connections, ${body_bytes}-byte bodies)"
