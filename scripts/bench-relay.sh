#!/usr/bin/env bash
# Relay throughput: signed Ed25519 deliveries per second through
# `adcp-sig relay` against the in-process `WebhookSender`, same sink, same
# machine, same run.
#
# Builds the release `adcp-sig` and the bench tool
# (crates/adcp-outbox/benches/relay_load.rs), then on loopback (free ports):
#   - starts the sink (`relay_load sink`: axum answering 200 after
#     reading the body; GET /stats counts requests);
#   - baseline: `relay_load baseline`, one process delivering EVENTS
#     events through `WebhookSender::deliver` with CONCURRENCY concurrent
#     calls (non-durable), reporting deliveries/s and its CPU per event;
#   - for each store in STORES: starts `adcp-sig relay --store … --allow-http
#     --concurrency CONCURRENCY --per-destination PER_DESTINATION` with a
#     fresh Ed25519 key and a fresh store (SQLite: a file in a temporary
#     directory; PostgreSQL: tables under a prefix of this run at
#     DATABASE_URL, dropped at exit), and `relay_load enqueue`: CLIENTS
#     concurrent keep-alive clients POST EVENTS events to /v1/events while
#     the relay delivers; the run ends when the sink has seen them all and
#     /metrics counts them `adcp_outbox_events{state="delivered"}`. Reports
#     deliveries/s (first POST to last recorded delivery) and the relay
#     process's CPU per event (/proc/PID/stat; PostgreSQL runs add the CPU
#     of every `postgres` process on the machine per event);
#   - the baseline again; the ratios use the mean of the two baseline runs.
# A store whose relay does not start (a build without the PostgreSQL
# outbox, no server) is reported as skipped.
#
# Usage: scripts/bench-relay.sh [EVENTS]            (default 10000)
# Environment: STORES ("sqlite postgres"), DATABASE_URL (default
#   postgres://root@127.0.0.1:5432/test), CLIENTS (64), CONCURRENCY (64),
#   PER_DESTINATION (64), BASELINE (1; 0 skips the baseline runs), SINK_URL
#   (use this running sink instead of starting one), OUT (a directory for
#   the JSON reports; default a temporary directory, removed at exit),
#   CARGO_TARGET_DIR (default target/).
# Every process started here is stopped at exit.
set -euo pipefail

events=${1:-10000}
stores=${STORES:-sqlite postgres}
database_url=${DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
clients=${CLIENTS:-64}
concurrency=${CONCURRENCY:-64}
per_destination=${PER_DESTINATION:-64}
with_baseline=${BASELINE:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"

echo "building release binaries..." >&2
cargo build --release -q -p adcp-sig
tool=$(cargo bench -q -p adcp-outbox --bench relay_load --no-run --message-format=json 2>/dev/null |
    jq -r 'select(.reason == "compiler-artifact" and .target.name == "relay_load" and .executable != null) | .executable' |
    tail -1)
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
    echo "could not build the relay_load bench tool" >&2
    exit 2
fi

work=$(mktemp -d)
out=${OUT:-$work}
mkdir -p "$out"
pids=()
prefix="bench_relay_$$_"
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"

drop_pg_tables() {
    command -v psql >/dev/null || return 0
    psql -q -X "$database_url" -v ON_ERROR_STOP=0 >/dev/null 2>&1 <<SQL || true
DO \$\$ DECLARE r record; BEGIN
  FOR r IN SELECT quote_ident(tablename) AS t FROM pg_tables
           WHERE schemaname = current_schema() AND starts_with(tablename, '$prefix') LOOP
    EXECUTE 'DROP TABLE IF EXISTS ' || r.t || ' CASCADE';
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure::text AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = current_schema() AND starts_with(p.proname, '$prefix') LOOP
    EXECUTE 'DROP FUNCTION IF EXISTS ' || r.f || ' CASCADE';
  END LOOP;
END \$\$;
SQL
}
cleanup() {
    stop_started
    case " $stores " in
    *" postgres "* | *postgres://* | *postgresql://*) drop_pg_tables ;;
    esac
    rm -rf "$work"
}
trap cleanup EXIT

# try_start NAME COMMAND...: like `start`, but a command that exits before
# its listening line is reported (its stderr) and leaves URL empty.
try_start() {
    local name=$1
    shift
    "$@" >"$work/$name.out" 2>"$work/$name.err" &
    PID=$!
    pids+=("$PID")
    URL=
    for _ in $(seq 1 400); do
        URL=$(grep -ho 'listening on http://[0-9.:]*' "$work/$name.out" 2>/dev/null | head -1 | sed 's/^listening on //') || true
        [ -n "$URL" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "$name did not start: $(tr '\n' ' ' <"$work/$name.err")" >&2
    kill "$PID" 2>/dev/null || true
    return 1
}

"$bin/adcp-sig" keygen --alg ed25519 --kid bench-relay-2026-01 \
    --out-private "$work/seller-key.jwk" --out-jwks "$work/seller-jwks.json" >/dev/null

if [ -n "${SINK_URL:-}" ]; then
    sink_url=$SINK_URL
else
    start sink "$tool" sink --listen 127.0.0.1:0
    sink_url=$URL
fi
dest="$sink_url/webhooks/adcp/op_bench"

baseline() { # NAME
    echo "== $1: in-process WebhookSender, $events events, $concurrency concurrent deliver calls" >&2
    "$tool" baseline --dest "$dest" --events "$events" --concurrency "$concurrency" >"$out/$1.json"
}

names=()
if [ "$with_baseline" = 1 ]; then
    baseline baseline-1
    names+=(baseline-1)
fi
for store in $stores; do
    pg_cpu=()
    case $store in
    sqlite) store_url="sqlite:$work/relay-$RANDOM.sqlite" ;;
    postgres) store_url=$database_url pg_cpu=(--postgres-cpu) ;;
    postgres://* | postgresql://*) store_url=$store pg_cpu=(--postgres-cpu) ;;
    *) store_url=$store ;;
    esac
    name="relay-${store%%:*}"
    echo "== $name: $events events from $clients clients, --concurrency $concurrency --per-destination $per_destination" >&2
    if ! try_start "$name" "$bin/adcp-sig" relay --store "$store_url" --table-prefix "$prefix" \
        --key "$work/seller-key.jwk" --listen 127.0.0.1:0 --allow-http \
        --concurrency "$concurrency" --per-destination "$per_destination"; then
        echo "$name: skipped" >&2
        continue
    fi
    relay_pid=$PID
    "$tool" enqueue --relay "$URL" --dest "$dest" --events "$events" --clients "$clients" \
        --sink "$sink_url" --pid "$relay_pid" "${pg_cpu[@]}" >"$out/$name.json"
    kill "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
    names+=("$name")
done
if [ "$with_baseline" = 1 ]; then
    baseline baseline-2
    names+=(baseline-2)
fi

base_rate=
base_cpu=
if [ "$with_baseline" = 1 ]; then
    base_rate=$(jq -s '(.[0].per_sec + .[1].per_sec) / 2' "$out/baseline-1.json" "$out/baseline-2.json")
    base_cpu=$(jq -s '(.[0].cpu_us_per_event + .[1].cpu_us_per_event) / 2' "$out/baseline-1.json" "$out/baseline-2.json")
fi
ratio() { # VALUE BASE
    if [ -n "$2" ]; then jq -n --argjson a "$1" --argjson b "$2" '$a / $b * 1000 | round / 1000'; else echo -; fi
}
echo
printf '%-16s %8s %8s %13s %13s %10s %10s %12s\n' target events secs "deliveries/s" "CPU us/event" "x rate" "x CPU" "+PG us/event"
for name in "${names[@]}"; do
    f="$out/$name.json"
    rate=$(jq '.per_sec' "$f")
    cpu=$(jq '.cpu_us_per_event // .relay_cpu_us_per_event' "$f")
    pg=$(jq -r '.postgres_cpu_us_per_event // "-" | if type == "number" then (. * 10 | round / 10) else . end' "$f")
    printf '%-16s %8s %8.2f %13.0f %13.1f %10s %10s %12s\n' "$name" "$(jq '.events' "$f")" "$(jq '.secs' "$f")" \
        "$rate" "$cpu" "$(ratio "$rate" "$base_rate")" "$(ratio "$cpu" "$base_cpu")" "$pg"
done
echo
echo "(x = relay / mean of the two baseline runs; targets: SQLite rate >= 0.5, CPU <= 2.0; +PG = every postgres process on the machine)"
echo "($(nproc) CPUs; sink, relay, load clients and baseline on one machine, loopback; CPU of the relay process only, the load clients and the sink excluded)"
