# Shared by the bench, soak and interop scripts (sourced; needs
# the caller's $work directory and pids array).

# start NAME COMMAND...: runs COMMAND in the background, waits until it
# prints "listening on http://ADDR" (stdout or stderr), sets URL and PID.
# Waits at most $START_TIMEOUT seconds (default 10).
start() {
    local name=$1
    shift
    "$@" >"$work/$name.out" 2>"$work/$name.err" &
    PID=$!
    pids+=("$PID")
    URL=
    for _ in $(seq 1 $(( ${START_TIMEOUT:-10} * 20 ))); do
        URL=$(grep -ho 'listening on http://[0-9.:]*' "$work/$name.out" "$work/$name.err" 2>/dev/null | head -1 | sed 's/^listening on //') || true
        [ -n "$URL" ] && return 0
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "$name did not start:" >&2
    cat "$work/$name.err" >&2
    exit 2
}

# seller_keys N: N seller keys in $work/seller-keys.json (private) and
# $work/seller-jwks.json. A receiver keeps at most 100,000 replay entries
# per keyid for the 300 s a signature is valid, so one key carries about
# 330 requests/s; requests rotate over the keys.
seller_keys() {
    "$bin/adcp-loadgen" keygen --keys "$1" \
        --out-private "$work/seller-keys.json" --out-jwks "$work/seller-jwks.json"
}

# stop_started: stops every process `start` started (SIGTERM, then waits).
stop_started() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}

# drop_redis_keys URL PATTERN: deletes the keys matching PATTERN on the
# Redis server at URL (a run's namespace); quiet when Redis is unreachable.
drop_redis_keys() {
    command -v redis-cli >/dev/null || return 0
    redis-cli -u "$1" --scan --pattern "$2" 2>/dev/null |
        xargs -r -n 500 redis-cli -u "$1" del >/dev/null 2>&1 || true
}
