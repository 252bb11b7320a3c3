#!/usr/bin/env bash
# Gateway throughput against three baselines measured in the same run.
#
# Builds the release binaries, then starts on loopback (free ports):
#   - `adcp-loadgen bare`: the same axum/hyper stack answering 200 after
#     reading the body, verifying nothing (the baseline);
#   - `adcp-loadgen sink`: the upstream, counting events; a fresh one
#     for each target that forwards, so that no target pays for the key
#     set an earlier one grew in a shared sink;
#   - `adcp-loadgen bare --forward`: the bare server posting each body to
#     the sink before answering, as the gateway does (the second baseline:
#     the gateway's work minus the checklist and the stores);
#   - `adcp-loadgen floor`: the verifying floor, the forwarding baseline
#     plus the checklist's mandatory work with the gateway's own routines
#     (the two signature headers, the signature base, one Ed25519
#     verification against the same seller keys, the body's
#     Content-Digest) and no store (the third baseline, the one the
#     gateway's targets are set against);
#   - `adcp-sig gateway --store memory:` and `adcp-sig gateway --store
#     sqlite:…` in front of the sink, with a fresh seller key (with
#     BATCH_VERIFY=1, each also with `--batch-verify`, as
#     `gateway-STORE-batch`);
#   - the same gateways in request mode (`--profile request --capabilities
#     …`, `create_media_buy` in `required_for`) in front of the sink,
#     driven by `adcp-loadgen run --profile request` (signed MCP
#     `tools/call create_media_buy` requests to `/mcp`; the sink counts
#     them by an unsigned `X-Adcp-Idempotency-Key` the gateway passes
#     through);
# and runs `adcp-loadgen run --max --presign` against each for the same
# duration and connections (unique events only unless DUPLICATES /
# TAMPERED say otherwise). Prints req/s, p50/p99 and each server's ratio
# to the bare server, the forwarding baseline and the verifying floor
# (columns /bare, /fwd, /floor), checks that each gateway forwarded every
# event exactly once, and ends with the targets' ratios: the webhook-mode
# gateway on each store against the floor, and SQLite against memory.
#
# Usage: scripts/bench-gateway.sh [SECONDS]      (default 20)
# Environment: CONNECTIONS (32), BODY_BYTES (200), DUPLICATES (0),
#   TAMPERED (0), STORES ("memory sqlite"; any --store URL works too),
#   KEYS (64 seller keys, requests rotate over them), REQUEST_MODE (1; 0
#   skips the request-mode runs), BATCH_VERIFY (0; 1 also runs each
#   webhook-mode gateway with --batch-verify), OUT (a directory for the JSON
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
batch_verify=${BATCH_VERIFY:-0}
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
# shellcheck source=scripts/lib/bench.sh
. "$root/scripts/lib/bench.sh"
trap cleanup EXIT
seller_keys "$keys"

start bare "$bin/adcp-loadgen" bare --listen 127.0.0.1:0
bare_url=$URL
# fresh_sink NAME: a new `adcp-loadgen sink` for one target; sets
# sink_url and sink_pid.
fresh_sink() {
    start "sink-$1" "$bin/adcp-loadgen" sink --listen 127.0.0.1:0
    sink_url=$URL
    sink_pid=$PID
}
# stop PID...: stops processes `start` started, before the exit does.
stop() {
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# Presign enough requests for the whole duration (a pool that runs out
# ends the run early; the report's duration says so).
load_run bare "$bare_url/webhooks/adcp" $((duration * 50000))
fresh_sink bare-forward
start bare-forward "$bin/adcp-loadgen" bare --listen 127.0.0.1:0 --forward "$sink_url/events"
load_run bare-forward "$URL/webhooks/adcp" $((duration * 25000))
stop "$PID" "$sink_pid"
fresh_sink floor
start floor "$bin/adcp-loadgen" floor --listen 127.0.0.1:0 --jwks "$work/seller-jwks.json" \
    --forward "$sink_url/events"
load_run floor "$URL/webhooks/adcp" $((duration * 25000))
stop "$PID" "$sink_pid"
names=(bare bare-forward floor)
variants=("")
[ "$batch_verify" = 1 ] && variants+=(-batch)
for store in $stores; do
    for variant in "${variants[@]}"; do
        case $store in
        memory) store_url=memory: ;;
        sqlite) store_url="sqlite:$work/dedup-$RANDOM.sqlite" ;;
        *) store_url=$store ;;
        esac
        name="gateway-${store%%:*}$variant"
        extra=()
        [ "$variant" = -batch ] && extra=(--batch-verify)
        fresh_sink "$name"
        start "$name" "$bin/adcp-sig" gateway --listen 127.0.0.1:0 --upstream "$sink_url/events" \
            --jwks "$work/seller-jwks.json" --jwks-agent https://seller.example/mcp \
            --store "$store_url" --store-namespace "bench_$$" --quiet "${extra[@]}"
        gateway_pid=$PID
        load_run "$name" "$URL/webhooks/adcp" $((duration * 22000)) --sink "$sink_url"
        stop "$gateway_pid" "$sink_pid"
        names+=("$name")
    done
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
        fresh_sink "$name"
        start "$name" "$bin/adcp-sig" gateway --profile request --listen 127.0.0.1:0 \
            --upstream "$sink_url" --capabilities "$work/capabilities.json" \
            --jwks "$work/seller-jwks.json" --jwks-agent https://buyer.example/ \
            --store "$store_url" --store-namespace "bench_$$" --quiet
        gateway_pid=$PID
        load_run "$name" "$URL/mcp" $((duration * 22000)) --sink "$sink_url" --profile request
        stop "$gateway_pid" "$sink_pid"
        names+=("$name")
    done
fi

bare_rps=$(rps bare)
forward_rps=$(rps bare-forward)
floor_rps=$(rps floor)
echo
printf '%-16s %10s %9s %9s %9s %9s %8s %8s %8s  %s\n' target "req/s" "p50 ms" "p99 ms" "max ms" "secs" \
    "/bare" "/fwd" "/floor" verdicts
for name in "${names[@]}"; do
    r=$(rps "$name")
    # The baselines are judged without the sink's count: every valid
    # event acknowledged (for the floor: verified), no transport error.
    printf '%-16s %s %8s %8s %8s  %s\n' "$name" "$(run_row "$name")" "$(ratio "$r" "$bare_rps")" \
        "$(ratio "$r" "$forward_rps")" "$(ratio "$r" "$floor_rps")" "$(verdicts "$name")"
done
# The targets' ratios (docs/performance.md): each webhook-mode gateway
# against the verifying floor, and SQLite against memory.
echo
for variant in "${variants[@]}"; do
    for store in $stores; do
        name="gateway-${store%%:*}$variant"
        [ -f "$out/$name.json" ] || continue
        target=
        [ "$name" = "gateway-memory$variant" ] && target=' (target: >= 0.8)'
        echo "$name / floor: $(ratio "$(rps "$name")" "$floor_rps")$target"
    done
    if [ -f "$out/gateway-memory$variant.json" ] && [ -f "$out/gateway-sqlite$variant.json" ]; then
        echo "gateway-sqlite$variant / gateway-memory$variant:" \
            "$(ratio "$(rps "gateway-sqlite$variant")" "$(rps "gateway-memory$variant")") (target: >= 0.8)"
    fi
done
echo
echo "($(nproc) CPUs; load generator, servers and sink on one machine, loopback; $connections connections, ${body_bytes}-byte bodies)"
