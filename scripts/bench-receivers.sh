#!/usr/bin/env bash
# The SQLite gateway against webhook receivers built on the official SDKs,
# side by side on the same machine, keys, sink and load.
#
# Installs on demand (as the interop scripts do) the JS SDK (npm
# `@adcp/sdk`, with npm `pg` for the cluster's shared replay store) and the
# Python SDK (PyPI `adcp`), builds the release binaries, and starts on
# loopback (free ports), each in front of one `adcp-loadgen sink`:
#   - `adcp-sig gateway --store sqlite:…` (webhook mode), the reference;
#   - js: scripts/lib/receivers/webhook_receiver.mjs, one node:http process
#     on the SDK's createWebhookVerifier with its default in-memory replay
#     store;
#   - js-cluster: the same as a node:cluster of JS_WORKERS (2) workers on
#     one port, sharing the SDK's PostgresReplayStore on DATABASE_URL (the
#     SDK requires a shared store for several processes);
#   - py: scripts/lib/receivers/webhook_receiver.py, the Python SDK's
#     WebhookReceiver (verification, replay store, idempotency claim) on
#     uvicorn, one process.
# Each receiver verifies, then posts the body to the sink with the verified
# identity and the idempotency key as headers, as the gateway does.
#
# Before any load, each one (the gateway included) must prove it verifies:
# a webhook signed with `adcp-sig sign` is accepted (2xx), the same request
# sent again is refused (a replay; twice, so that on the cluster it reaches
# both workers), a signed webhook with one body byte changed is refused,
# and an unsigned one is refused (401 each). Any other answer ends the
# script with status 1 before a figure is printed.
#
# Then `adcp-loadgen run --max --presign` drives each with the same load
# (unique events only, CONNECTIONS connections, SECONDS seconds, rotated
# over KEYS seller keys), the gateway before and after the receivers; the
# table gives req/s, p50/p99, the accounting verdicts and the ratio of the
# SQLite gateway (the mean of its two runs) to each receiver.
#
# Runtime adaptation, printed when it applies: JS SDK 6.11's webhook
# verifier requires `adcp_use: "webhook-signing"` on the seller's keys,
# the purpose the spec has since deprecated for `request-signing` (which
# the gateway and the Python SDK accept, and which `adcp-loadgen keygen`
# publishes); the JS receivers get the same keys relabelled.
#
# Usage: scripts/bench-receivers.sh [SECONDS]      (default 15)
# Environment: CONNECTIONS (32), BODY_BYTES (200), KEYS (64), JS_WORKERS
#   (2), RECEIVERS ("js js-cluster py"), PY_SDK (pip requirement, default
#   'adcp>=9,<10'), JS_SDK (npm spec, default '@adcp/sdk@6.11'),
#   DATABASE_URL (the cluster's replay store; default
#   postgres://root@127.0.0.1:5432/test; without a reachable server the
#   cluster is skipped), INTEROP_SDK_DIR (install the SDKs there and keep
#   them; default a temporary directory), START_TIMEOUT (seconds a receiver
#   may take to listen, 120), OUT (a directory for the JSON reports),
#   CARGO_TARGET_DIR (default target/).
# Exit 0 when every proof and every run's accounting passed, 1 otherwise,
# 2 when a prerequisite is missing. Every process started here is stopped
# at exit.
set -euo pipefail

duration=${1:-15}
connections=${CONNECTIONS:-32}
body_bytes=${BODY_BYTES:-200}
keys=${KEYS:-64}
js_workers=${JS_WORKERS:-2}
receivers=${RECEIVERS:-js js-cluster py}
py_sdk=${PY_SDK:-'adcp>=9,<10'}
js_sdk=${JS_SDK:-'@adcp/sdk@6.11'}
database_url=${DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
here="$root/scripts/lib/receivers"

for tool in python3 node npm cargo jq curl; do
    command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 2; }
done

echo "building release binaries..." >&2
cargo build --release -q -p adcp-sig -p adcp-loadgen

work=$(mktemp -d)
out=${OUT:-$work}
mkdir -p "$out"
pids=()
cleanup() {
    stop_started
    rm -rf "$work"
}
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"
# shellcheck source=scripts/lib/bench.sh
. "$root/scripts/lib/bench.sh"
# shellcheck source=scripts/lib/sdks.sh
. "$root/scripts/lib/sdks.sh"
trap cleanup EXIT
# Importing the Python SDK takes seconds (over 10 on a busy 2-core machine).
START_TIMEOUT=${START_TIMEOUT:-120}

install_sdks "$py_sdk" "$js_sdk"
case " $receivers " in
*" js-cluster "*) (cd "$sdk_dir" && npm install --silent --no-audit --no-fund pg >&2) ;;
esac
py_version=$("$py" -c 'import importlib.metadata as m; print(m.version("adcp"))')
js_version=$(node -p 'require(process.argv[1]).version' "$sdk_dir/node_modules/@adcp/sdk/package.json")

seller_keys "$keys"
jq '.keys[0]' "$work/seller-keys.json" >"$work/seller-key-0.json"
jq '.keys[].adcp_use = "webhook-signing"' "$work/seller-jwks.json" >"$work/seller-jwks-js.json"

start sink "$bin/adcp-loadgen" sink --listen 127.0.0.1:0
sink_url=$URL

# gateway NAME: an SQLite gateway (fresh store) in front of the sink; sets
# URL and PID.
gateway() {
    start "$1" "$bin/adcp-sig" gateway --listen 127.0.0.1:0 --upstream "$sink_url/events" \
        --jwks "$work/seller-jwks.json" --jwks-agent https://seller.example/mcp \
        --store "sqlite:$work/$1.sqlite" --quiet
}

# post SIGNED_JSON [tamper]: sends the request `adcp-sig sign` printed
# (`{"url", "headers", "body"}`; a body byte changed with `tamper`), prints
# the status and the WWW-Authenticate error code, if any.
post() {
    local signed=$1 body
    body=$(jq -r '.body' <<<"$signed")
    [ "${2:-}" = tamper ] && body=${body/\"completed\"/\"Completed\"}
    local args=()
    while IFS= read -r header; do
        args+=(-H "$header")
    done < <(jq -r '.headers | to_entries[] | "\(.key): \(.value)"' <<<"$signed")
    curl -s -o /dev/null -D "$work/answer.headers" -w '%{http_code}' -X POST "${args[@]}" \
        --data-binary "$body" "$(jq -r '.url' <<<"$signed")" || echo 000
    printf ' %s\n' "$(grep -io 'error="[a-z_]*"' "$work/answer.headers" | head -1 | cut -d'"' -f2)"
}

# sign URL N: a signed webhook for URL with its own idempotency key.
sign() {
    # Compact, no trailing newline: the body is sent as `post` reads it.
    printf '%s' "$(jq -cn --arg key "proof-$2-$RANDOM$RANDOM-$(date +%s%N)" '{
        idempotency_key: $key, task_id: "task_proof", task_type: "create_media_buy",
        operation_id: "op_proof", status: "completed", timestamp: "2026-11-30T12:00:00Z",
        result: {media_buy_id: "mb_proof"}}')" >"$work/proof-body.json"
    "$bin/adcp-sig" sign --profile webhook --url "$1" --body-file "$work/proof-body.json" \
        --key "$work/seller-key-0.json"
}

# prove NAME URL: the four checks above; exit 1 on any unexpected answer.
failed=0
prove() {
    local name=$1 url=$2 signed answer
    check() {
        local what=$1 expect=$2 got=$3
        if [[ $got == $expect* ]]; then
            echo "   [PASS] $name: $what -> $got" >&2
        else
            echo "   [FAIL] $name: $what -> $got (expected $expect)" >&2
            failed=1
        fi
    }
    signed=$(sign "$url" 1)
    check "signed webhook" 2 "$(post "$signed")"
    check "the same request again (replay)" 401 "$(post "$signed")"
    check "the same request a third time (replay)" 401 "$(post "$signed")"
    check "body changed after signing" 401 "$(post "$(sign "$url" 2)" tamper)"
    check "unsigned" 401 "$(post "$(jq -n --arg url "$url" --rawfile body "$work/proof-body.json" \
        '{url: $url, body: $body, headers: {"content-type": "application/json"}}')")"
    if [ "$failed" != 0 ]; then
        echo "$name does not refuse what it must: no figures" >&2
        exit 1
    fi
}

requests=$((duration * 15000))
gateway gateway-sqlite
gateway_pid=$PID
echo "== proofs" >&2
prove gateway-sqlite "$URL/webhooks/adcp"
load_run gateway-sqlite "$URL/webhooks/adcp" "$requests" --sink "$sink_url"
kill "$gateway_pid" 2>/dev/null || true
wait "$gateway_pid" 2>/dev/null || true

names=()
for receiver in $receivers; do
    case $receiver in
    js)
        start js bash -c 'cd "$1" && exec node "$2" "$3" "$4"' _ "$sdk_dir" "$here/webhook_receiver.mjs" \
            "$work/seller-jwks-js.json" "$sink_url/events"
        ;;
    js-cluster)
        if ! (cd "$sdk_dir" && DATABASE_URL=$database_url node -e \
            "new (require('pg').Client)({connectionString: process.env.DATABASE_URL}).connect().then(() => process.exit(0), () => process.exit(1))"); then
            echo "js-cluster: no PostgreSQL at DATABASE_URL for its shared replay store: skipped" >&2
            continue
        fi
        start js-cluster env DATABASE_URL="$database_url" bash -c 'cd "$1" && exec node "$2" "$3" "$4" "$5"' _ \
            "$sdk_dir" "$here/webhook_receiver.mjs" "$work/seller-jwks-js.json" "$sink_url/events" "$js_workers"
        ;;
    py)
        start py "$py" "$here/webhook_receiver.py" "$work/seller-jwks.json" "$sink_url/events"
        ;;
    *)
        echo "unknown receiver $receiver (js, js-cluster, py)" >&2
        exit 2
        ;;
    esac
    receiver_pid=$PID
    receiver_url=$URL
    case $receiver in js*) echo "$receiver: the seller keys relabelled adcp_use \"webhook-signing\" (JS SDK $js_version)" >&2 ;; esac
    echo "== proofs" >&2
    prove "$receiver" "$receiver_url/webhooks/adcp"
    # The SDK receivers run far below the gateway: a smaller pool suffices.
    load_run "$receiver" "$receiver_url/webhooks/adcp" $((duration * 5000)) --sink "$sink_url"
    kill "$receiver_pid" 2>/dev/null || true
    wait "$receiver_pid" 2>/dev/null || true
    names+=("$receiver")
done

gateway gateway-sqlite-after
gateway_pid=$PID
load_run gateway-sqlite-after "$URL/webhooks/adcp" "$requests" --sink "$sink_url"
kill "$gateway_pid" 2>/dev/null || true
wait "$gateway_pid" 2>/dev/null || true

gateway_rps=$(jq -n --argjson a "$(rps gateway-sqlite)" --argjson b "$(rps gateway-sqlite-after)" '($a + $b) / 2')
echo
printf '%-22s %10s %9s %9s %9s %9s %14s  %s\n' target "req/s" "p50 ms" "p99 ms" "max ms" "secs" "gateway/this" verdicts
for name in gateway-sqlite gateway-sqlite-after "${names[@]}"; do
    printf '%-22s %s %14s  %s\n' "$name" "$(run_row "$name")" "$(ratio "$gateway_rps" "$(rps "$name")")" \
        "$(verdicts "$name")"
    [ "$(verdicts "$name")" = pass ] || failed=1
done
echo
printf 'SQLite gateway (mean of its two runs, %.0f req/s) /' "$gateway_rps"
for name in "${names[@]}"; do
    case $name in
    js) target=' (target >= 3)' ;;
    js-cluster) target=' (target >= 2)' ;;
    *) target= ;;
    esac
    printf ' %s %sx%s;' "$name" "$(ratio "$gateway_rps" "$(rps "$name")")" "$target"
done
echo
echo "(@adcp/sdk $js_version, adcp $py_version; $(nproc) CPUs; load generator, servers, sink and PostgreSQL on one machine, loopback; $connections connections, ${body_bytes}-byte bodies)"
exit "$failed"
