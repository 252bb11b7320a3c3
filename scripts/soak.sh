#!/usr/bin/env bash
# Soak test of a two-gateway fleet on Redis.
#
# Builds the release binaries, generates a seller key, starts a counting
# sink (`adcp-loadgen sink`) and two `adcp-sig gateway` processes sharing
# Redis ($REDIS_URL, default redis://127.0.0.1:6379) under a namespace
# unique to this run, all on free loopback ports, then runs
# `adcp-loadgen run` against both gateways at a constant rate with 10%
# seller retries (fresh signature, sent to the other gateway) and 1%
# tampered bodies, sampling every 10 s with both gateways' RSS watched.
# The Markdown report has a table per interval, the totals and the
# verdicts: upstream count equals unique valid events, no duplicate
# delivery, tampered requests all rejected, RSS drift within ±10%.
#
# Usage: scripts/soak.sh [SECONDS] [RATE] [REPORT]
#   SECONDS  length of the run (default 600)
#   RATE     requests per second across both gateways (default 500)
#   REPORT   where the Markdown report goes (default
#            target/soak/soak-<UTC time>.md)
# Environment: REDIS_URL, CONNECTIONS (16), SAMPLE_SECS (10), KEYS (seller
#   keys, default RATE / 200 + 4),
#   CARGO_TARGET_DIR (default target/).
# Exit code: that of the load generator (0 when every verdict held).
# Every process started here is stopped at exit, and the run's Redis keys
# are deleted when redis-cli is available.
set -euo pipefail

duration=${1:-600}
rate=${2:-500}
root=$(cd "$(dirname "$0")/.." && pwd)
report=${3:-$root/target/soak/soak-$(date -u +%Y%m%dT%H%M%SZ).md}
redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
connections=${CONNECTIONS:-16}
sample=${SAMPLE_SECS:-10}
# One key per 200 requests/s, at least 4 (see keygen below).
keys=${KEYS:-$(( rate / 200 + 4 ))}
namespace="adcp_soak_$(date -u +%s)_$$"
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"

echo "building release binaries..." >&2
cargo build --release -q -p adcp-sig -p adcp-loadgen

work=$(mktemp -d)
pids=()
cleanup() {
    stop_started
    drop_redis_keys "$redis_url" "$namespace:*"
    rm -rf "$work"
}
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"
trap cleanup EXIT
seller_keys "$keys"

start sink "$bin/adcp-loadgen" sink --listen 127.0.0.1:0
sink_url=$URL
gateway() {
    start "$1" "$bin/adcp-sig" gateway --listen 127.0.0.1:0 --upstream "$sink_url/events" \
        --jwks "$work/seller-jwks.json" --jwks-agent https://seller.example/mcp \
        --store "$redis_url" --store-namespace "$namespace" --quiet
}
gateway gateway-a
url_a=$URL pid_a=$PID
gateway gateway-b
url_b=$URL pid_b=$PID

mkdir -p "$(dirname "$report")"
echo "soak: $duration s at $rate req/s over gateways $url_a (pid $pid_a) and $url_b (pid $pid_b)," \
    "Redis namespace $namespace; report $report" >&2
rc=0
"$bin/adcp-loadgen" run --url "$url_a/webhooks/adcp" --url "$url_b/webhooks/adcp" \
    --key "$work/seller-keys.json" --rate "$rate" --duration "$duration" --connections "$connections" \
    --duplicates 0.10 --tampered 0.01 --sample-secs "$sample" \
    --watch-pid "$pid_a" --watch-pid "$pid_b" --sink "$sink_url" \
    --report "$report" || rc=$?
# What the figures were measured on.
{
    echo
    echo "## Machine"
    echo
    echo "- $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) RAM;" \
        "load generator, both gateways, the sink and Redis on one machine, loopback"
    echo "- gateways: pid $pid_a ($url_a) and pid $pid_b ($url_b), Redis $redis_url, namespace $namespace"
    echo "- command: scripts/soak.sh $duration $rate (connections $connections, sample every $sample s)"
} >>"$report"
echo "report: $report" >&2
exit "$rc"
