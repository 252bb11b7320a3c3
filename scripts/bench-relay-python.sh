#!/usr/bin/env bash
# Our PostgreSQL relay against the official Python SDK's PostgreSQL
# outbox (`PgNotificationOutbox` of the PyPI package `adcp`, default
# 9.2.0), same PostgreSQL, same sink, same machine, same run.
#
# Ours: scripts/bench-relay.sh with STORES=postgres on this script's sink
# (`adcp-sig relay`, one process, --concurrency 64 --per-destination 64,
# EVENTS events POSTed to /v1/events by 64 concurrent clients while it
# delivers), run before and after theirs; the figure is the mean of the
# two.
#
# Theirs: installs `adcp[pg]==$ADCP_PY_VERSION` into a temporary venv and
# runs a driver (written to the temporary directory) that creates the
# outbox table (`create_schema`, a table name of this run, dropped at the
# end), enqueues EVENTS `account.status_changed` notifications with
# `enqueue_prepared` (64 concurrent tasks, one transaction each, before
# the timed phase: enqueueing does not compete with the workers), then
# starts WORKERS processes (default: one per CPU), each running
# `PgNotificationOutbox.run_worker()` with a fixed `WebhookSender.from_jwk`
# Ed25519 sender, and times from their start signal until the sink has
# seen every event and the table holds them all `delivered`.
#
# The Python outbox refuses loopback and plain-HTTP destinations. The
# driver relaxes exactly those two checks at runtime (monkeypatches,
# printed with the results) and nothing else: claim, lease, expiry,
# envelope encryption and verification, signing (RFC 9421 Ed25519),
# sending (its per-attempt IP-pinned transport) and acknowledgement run
# as shipped.
#
# Usage: scripts/bench-relay-python.sh [EVENTS]     (default 2000)
# Environment: DATABASE_URL (default postgres://root@127.0.0.1:5432/test),
#   WORKERS (default nproc), ADCP_PY_VERSION (9.2.0), PYTHON (python3),
#   CARGO_TARGET_DIR.
# Every process started here is stopped at exit; the venv and the tables
# are removed.
set -euo pipefail

events=${1:-2000}
database_url=${DATABASE_URL:-postgres://root@127.0.0.1:5432/test}
workers=${WORKERS:-$(nproc)}
py_version=${ADCP_PY_VERSION:-9.2.0}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

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
pids=()
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"
cleanup() {
    stop_started
    rm -rf "$work"
}
trap cleanup EXIT

start sink "$tool" sink --listen 127.0.0.1:0
sink_url=$URL
dest="$sink_url/webhooks/adcp/op_bench"

echo "installing the Python SDK (adcp[pg]==$py_version) into a temporary venv..." >&2
"${PYTHON:-python3}" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "adcp[pg]==$py_version" >&2
export PYTHONDONTWRITEBYTECODE=1

cat >"$work/py_outbox.py" <<'PY'
"""Drives adcp's PgNotificationOutbox for scripts/bench-relay-python.sh.

run: create the table, enqueue N, start the workers, time the deliveries.
worker: one PgNotificationOutbox.run_worker() process (waits for "go").
"""
import asyncio
import base64
import ipaddress
import json
import os
import subprocess
import sys
import time
import urllib.request

RELAXED = []


def relax():
    """Admit loopback plain-HTTP destinations; nothing else changes."""
    import httpx
    import adcp.signing.jwks as jwks
    from adcp.notification_outbox_pg import PgNotificationOutbox

    shipped_ip_check = jwks.validate_resolved_ip

    def validate_resolved_ip(ip, **kwargs):
        if ip.is_loopback:
            return None
        return shipped_ip_check(ip, **kwargs)

    jwks.validate_resolved_ip = validate_resolved_ip
    RELAXED.append(
        "adcp.signing.jwks.validate_resolved_ip (SSRF range check of the pinned transport): "
        "loopback addresses admitted, every other address checked as shipped"
    )

    shipped_url_check = PgNotificationOutbox._validate_url

    def validate_url(url):
        parsed = httpx.URL(url)
        try:
            loopback = ipaddress.ip_address(parsed.host).is_loopback
        except ValueError:
            loopback = False
        if parsed.scheme == "http" and loopback:
            # The shipped check (length, host, no userinfo or fragment) on the https:// form.
            return shipped_url_check("https" + url[len("http"):])
        return shipped_url_check(url)

    PgNotificationOutbox._validate_url = staticmethod(validate_url)
    RELAXED.append(
        "PgNotificationOutbox._validate_url (HTTPS only): http:// admitted for loopback IP literals, "
        "the rest of the check run on the https:// form"
    )


def payload(i):
    # The same notification the Rust side sends (crates/adcp-outbox/benches/support).
    return {
        "notification_type": "account.status_changed",
        "notification_id": f"acc_{i}.status.1",
        "subscriber_id": "sub_bench",
        "fired_at": "2026-04-18T12:00:00Z",
        "account_id": f"acc_{i}",
        "status": "active",
        "previous_status": "pending_approval",
        "observed_at": "2026-04-18T11:59:00Z",
        "reason_code": "seller_approved",
    }


def new_jwk():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    def b64(raw):
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    key = ed25519.Ed25519PrivateKey.generate()
    d = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                          serialization.NoEncryption())
    x = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "crv": "Ed25519", "d": b64(d), "x": b64(x), "kid": "bench-python-2026-01",
            "alg": "EdDSA", "adcp_use": "webhook-signing"}


async def open_outbox(dsn, table, max_size):
    from psycopg_pool import AsyncConnectionPool
    from adcp.notification_outbox_pg import PgNotificationOutbox
    from adcp.webhook_sender import WebhookSender

    pool = AsyncConnectionPool(dsn, min_size=1, max_size=max_size, open=False)
    await pool.open()
    outbox = PgNotificationOutbox(
        pool=pool,
        encryption_key=bytes.fromhex(os.environ["BENCH_OUTBOX_KEY"]),
        delivery_retry_horizon_seconds=86_400,
        sender=WebhookSender.from_jwk(json.loads(os.environ["BENCH_JWK"])),
        table=table,
    )
    return pool, outbox


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu():
    total = 0.0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if "(postgres)" in stat:
                fields = stat.rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def sink_requests(sink):
    with urllib.request.urlopen(f"{sink}/stats") as r:
        return json.load(r)["requests"]


async def worker(dsn, table):
    relax()
    _, outbox = await open_outbox(dsn, table, 2)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await outbox.run_worker()


async def run(dsn, table, sink, dest, events, workers, clients):
    import adcp
    from adcp.webhook_sender import WebhookSender

    relax()
    os.environ["BENCH_OUTBOX_KEY"] = os.urandom(32).hex()
    os.environ["BENCH_JWK"] = json.dumps(new_jwk())
    pool, outbox = await open_outbox(dsn, table, 16)
    await outbox.create_schema()
    try:
        next_i = iter(range(events))

        async def client():
            for i in next_i:
                prepared = WebhookSender.prepare_raw(url=dest, payload=payload(i))
                async with pool.connection() as conn:
                    async with conn.transaction():
                        await outbox.enqueue_prepared(
                            conn, prepared, notification_type="account.status_changed",
                            caller_scope_id="bench", account_id=f"acc_{i}")

        t = time.monotonic()
        await asyncio.gather(*(client() for _ in range(clients)))
        enqueue_secs = time.monotonic() - t

        procs = [subprocess.Popen([sys.executable, __file__, "worker", dsn, table],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                 for _ in range(workers)]
        try:
            for p in procs:
                if p.stdout.readline().strip() != "ready":
                    raise SystemExit("a worker did not start")
            sink0 = sink_requests(sink)
            cpu0 = sum(proc_cpu(p.pid) for p in procs)
            pg0 = postgres_cpu()
            started = time.monotonic()
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
            deadline = started + 3600
            while sink_requests(sink) < sink0 + events:
                if time.monotonic() > deadline:
                    raise SystemExit("the sink did not see every event within an hour")
                await asyncio.sleep(0.02)
            while True:
                async with pool.connection() as conn:
                    cur = await conn.execute(
                        f"SELECT count(*) FROM {table} WHERE state = 'delivered'")
                    delivered = (await cur.fetchone())[0]
                if delivered >= events or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.02)
            secs = time.monotonic() - started
            cpu = sum(proc_cpu(p.pid) for p in procs) - cpu0
            pg = postgres_cpu() - pg0
            seen = sink_requests(sink) - sink0
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()
        async with pool.connection() as conn:
            cur = await conn.execute(f"SELECT state, count(*) FROM {table} GROUP BY state")
            states = dict(await cur.fetchall())
    finally:
        async with pool.connection() as conn:
            await conn.execute(f"DROP TABLE IF EXISTS {table}")
        await pool.close()
    print(json.dumps({
        "adcp_version": adcp.__version__ if hasattr(adcp, "__version__") else "?",
        "events": events, "workers": workers, "secs": secs, "per_sec": events / secs,
        "enqueue_secs": enqueue_secs, "cpu_us_per_event": cpu * 1e6 / events,
        "postgres_cpu_us_per_event": pg * 1e6 / events, "sink_requests": seen,
        "delivered": delivered, "states": states, "relaxed": RELAXED,
    }))


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        asyncio.run(worker(sys.argv[2], sys.argv[3]))
    else:
        dsn, table, sink, dest, events, workers = sys.argv[2:8]
        asyncio.run(run(dsn, table, sink, dest, int(events), int(workers), 64))
PY

ours() { # NAME
    OUT="$work/$1" SINK_URL=$sink_url STORES=postgres BASELINE=0 DATABASE_URL=$database_url \
        "$root/scripts/bench-relay.sh" "$events" >/dev/null
    if [ ! -f "$work/$1/relay-postgres.json" ]; then
        echo "our PostgreSQL relay did not run (see above)" >&2
        exit 2
    fi
}

echo "== ours (1): adcp-sig relay on PostgreSQL, $events events" >&2
ours ours-1
echo "== theirs: adcp $py_version PgNotificationOutbox.run_worker, $workers worker processes, $events events" >&2
"$work/venv/bin/python" "$work/py_outbox.py" run "$database_url" "bench_py_outbox_$$" "$sink_url" "$dest" \
    "$events" "$workers" >"$work/theirs.json"
echo "== ours (2)" >&2
ours ours-2

o1="$work/ours-1/relay-postgres.json"
o2="$work/ours-2/relay-postgres.json"
t="$work/theirs.json"
ours_rate=$(jq -s '(.[0].per_sec + .[1].per_sec) / 2' "$o1" "$o2")
ours_cpu=$(jq -s '(.[0].relay_cpu_us_per_event + .[1].relay_cpu_us_per_event) / 2' "$o1" "$o2")
ours_pg=$(jq -s '(.[0].postgres_cpu_us_per_event + .[1].postgres_cpu_us_per_event) / 2' "$o1" "$o2")
echo
echo "Python SDK: adcp $(jq -r '.adcp_version' "$t"); checks relaxed at runtime (nothing else changed):"
jq -r '.relaxed[] | "  - " + .' "$t"
echo "Python outbox states after the run: $(jq -c '.states' "$t")"
echo
printf '%-58s %13s %16s %14s\n' "" "deliveries/s" "CPU us/event" "+PG us/event"
printf '%-58s %13.0f %16.1f %14.1f\n' "ours: adcp-sig relay, 1 process, --concurrency 64 (run 1)" \
    "$(jq '.per_sec' "$o1")" "$(jq '.relay_cpu_us_per_event' "$o1")" "$(jq '.postgres_cpu_us_per_event' "$o1")"
printf '%-58s %13.0f %16.1f %14.1f\n' "ours (run 2)" \
    "$(jq '.per_sec' "$o2")" "$(jq '.relay_cpu_us_per_event' "$o2")" "$(jq '.postgres_cpu_us_per_event' "$o2")"
printf '%-58s %13.0f %16.1f %14.1f\n' "theirs: PgNotificationOutbox.run_worker x $workers processes" \
    "$(jq '.per_sec' "$t")" "$(jq '.cpu_us_per_event' "$t")" "$(jq '.postgres_cpu_us_per_event' "$t")"
echo
echo "ours / theirs: rate x$(jq -n --argjson a "$ours_rate" --argjson b "$(jq '.per_sec' "$t")" '$a / $b * 10 | round / 10') (target >= 30), \
CPU per event x$(jq -n --argjson a "$ours_cpu" --argjson b "$(jq '.cpu_us_per_event' "$t")" '$a / $b * 1000 | round / 1000'), \
PostgreSQL server CPU per event x$(jq -n --argjson a "$ours_pg" --argjson b "$(jq '.postgres_cpu_us_per_event' "$t")" '$a / $b * 1000 | round / 1000')"
echo "($(nproc) CPUs; $events events each; sink, relay or workers, load clients and PostgreSQL on one machine, loopback; ours = mean of the two runs)"
