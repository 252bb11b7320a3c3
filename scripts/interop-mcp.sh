#!/usr/bin/env bash
# MCP Streamable HTTP through the request-mode gateway, with the official
# MCP SDKs: clients and servers of the Python SDK (PyPI `mcp`) and the
# TypeScript SDK (npm `@modelcontextprotocol/sdk`). Not part of the default
# test suite: it installs both SDKs from their registries into a temp dir on
# every run.
#
# Servers (scripts/interop/mcp_server.{py,mjs}): Streamable HTTP at /mcp,
# stateful sessions; create_media_buy answers as an event stream (three
# progress notifications 1 s apart, then the result); announce sends a
# notification on the session's GET stream. Each server gets a gateway in
# front of it: `adcp-sig gateway --profile request --upstream-timeout 1`,
# capabilities requiring signatures for create_media_buy only (the MCP
# handshake, tools/list and notifications are protocol methods no list
# requires, as a seller would advertise), the buyer's key in --jwks.
#
# Clients (scripts/interop/mcp_client.{py,mjs}), each revision the SDK
# offers: the Python client with the initialize handshake (2025-11-25) and
# per request (2026-07-28, against the Python server: the TypeScript
# server does not offer it), the TypeScript client (2025-11-25). Every
# tools/call they send is signed by `adcp-sig sign` in an HTTP hook. Each
# client runs its session directly against the server, then through the
# gateway, and the two runs must agree:
#   - connect (initialize, or the 2026-07-28 per-request envelope): the
#     same revision and tools;
#   - the signed create_media_buy, answered as an event stream lasting
#     about 3 s (longer than the gateway's 1 s upstream timeout): the
#     same result and the three progress notifications;
#   - the same call unsigned: accepted by the server alone, refused by the
#     gateway (request_signature_required);
#   - 2025-11-25: the notification sent on the GET stream arrives, and the
#     gateway's access log shows the session's GET stream and its DELETE
#     (`unsigned_get`, `unsigned_delete`).
#
# Usage: scripts/interop-mcp.sh
# Environment: PY_MCP (pip requirement, default 'mcp>=2.3,<3'), JS_MCP (npm
#   spec, default '@modelcontextprotocol/sdk@^1.32'), INTEROP_SDK_DIR
#   (install the SDKs there and keep them; default a temp dir),
#   START_TIMEOUT (seconds a helper server may take to listen, 120),
#   CARGO_TARGET_DIR (default target/).
# Prints one PASS/FAIL line per case and "N passed, M failed". Exit 0 when
# nothing failed, 1 otherwise, 2 when a prerequisite is missing. Every
# process and the temp dir are removed at exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
here="$root/scripts/interop"
py_mcp=${PY_MCP:-'mcp>=2.3,<3'}
js_mcp=${JS_MCP:-'@modelcontextprotocol/sdk@^1.32'}
bin="${CARGO_TARGET_DIR:-$root/target}/debug"
for tool in python3 node npm cargo; do
    command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
    stop_started
    rm -rf "$work"
}
# shellcheck source=scripts/lib/processes.sh
. "$root/scripts/lib/processes.sh"
trap cleanup EXIT
START_TIMEOUT=${START_TIMEOUT:-120}

# shellcheck source=scripts/lib/sdks.sh
. "$root/scripts/lib/sdks.sh"
install_sdks "$py_mcp" "$js_mcp"
py_version=$("$py" -c 'import importlib.metadata as m; print(m.version("mcp"))')
js_version=$(node -p 'require(process.argv[1]).version' "$sdk_dir/node_modules/@modelcontextprotocol/sdk/package.json")
py_revisions=$("$py" -c 'from mcp.types.version import KNOWN_PROTOCOL_VERSIONS as v; print(" ".join(v))')
js_revisions=$(cd "$sdk_dir" && node -e 'console.log(require("@modelcontextprotocol/sdk/types.js").SUPPORTED_PROTOCOL_VERSIONS.join(" "))')
echo "Python SDK: mcp $py_version ($py_revisions); TypeScript SDK: @modelcontextprotocol/sdk $js_version ($js_revisions)"

echo "building adcp-sig..." >&2
(cd "$root" && cargo build -q -p adcp-sig)

# The buyer's key, and the seller's capabilities: signatures required for
# create_media_buy; nothing else (the MCP handshake, tools/list, ping and
# notifications are protocol methods in no required list).
"$bin/adcp-sig" keygen --alg ed25519 --kid mcp-interop-buyer \
    --out-private "$work/buyer.jwk" --out-jwks "$work/buyer-jwks.json" >/dev/null
cat >"$work/capabilities.json" <<'JSON'
{
  "adcp": {"major_versions": [3]},
  "request_signing": {
    "supported": true,
    "covers_content_digest": "required",
    "required_for": ["create_media_buy"]
  }
}
JSON

passed=0
failed=0
pass() { echo "PASS $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
# field JSON NAME: a top-level member of a JSON line, as JSON ("null" when absent).
field() {
    "$py" -c 'import json,sys
try: v = json.loads(sys.argv[1]).get(sys.argv[2])
except (ValueError, AttributeError): v = None
print(json.dumps(v, sort_keys=True))' "$1" "$2"
}

# Servers, each behind a gateway of its own.
start server-python "$py" "$here/mcp_server.py"
server_python=$URL
# shellcheck disable=SC2016
start server-js bash -c 'cd "$1" && exec node "$2"' _ "$sdk_dir" "$here/mcp_server.mjs"
server_js=$URL
for server in python js; do
    upstream_var="server_$server"
    start "gateway-$server" "$bin/adcp-sig" gateway --profile request --listen 127.0.0.1:0 \
        --upstream "${!upstream_var}" --capabilities "$work/capabilities.json" \
        --jwks "$work/buyer-jwks.json" --jwks-agent https://buyer.example/ \
        --store "sqlite:$work/replay-$server.sqlite" --upstream-timeout 1
    printf -v "gateway_$server" '%s' "$URL"
done

# run_client CLIENT MODE URL: the client's session against URL; one JSON line.
run_client() {
    local sign=(--sign "$bin/adcp-sig" "$work/buyer.jwk")
    case $1 in
        python) "$py" "$here/mcp_client.py" "$3" "$2" "${sign[@]}" 2>>"$work/client.err" ;;
        js) (cd "$sdk_dir" && node "$here/mcp_client.mjs" "$3" "${sign[@]}" 2>>"$work/client.err") ;;
    esac
}

# check CLIENT MODE SERVER: the client's session directly against SERVER,
# then through its gateway, and the cases above.
check() {
    local client=$1 mode=$2 server=$3
    local server_var="server_$server" gateway_var="gateway_$server"
    local label=$mode
    [ "$mode" = legacy ] && label="initialize handshake"
    local what="$client client ($label) -> gateway -> $server server"
    local log="$work/gateway-$server.err"
    local from
    from=$(wc -l <"$log")
    direct=$(run_client "$client" "$mode" "${!server_var}/mcp") || direct='{}'
    through=$(run_client "$client" "$mode" "${!gateway_var}/mcp") || through='{}'
    local seen
    seen=$(tail -n +"$((from + 1))" "$log")
    local error version
    error=$(field "$through" error)
    version=$(field "$through" protocol_version)
    if [ "$error" != null ] || [ "$(field "$direct" error)" != null ]; then
        fail "$what: session failed (direct: $(field "$direct" error); through the gateway: $error)"
        return
    fi
    if [ "$version" = "$(field "$direct" protocol_version)" ] && [ "$(field "$through" tools)" = "$(field "$direct" tools)" ]; then
        pass "$what: connected at $version, tools/list as without the gateway"
    else
        fail "$what: connect: $through, without the gateway: $direct"
    fi
    local result progress elapsed
    result=$(field "$through" result)
    progress=$(field "$through" progress)
    elapsed=$(field "$through" elapsed)
    if [ "$result" = "$(field "$direct" result)" ] && [ "$progress" = 3 ] && [ "$(field "$direct" progress)" = 3 ] &&
        "$py" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 2.5 else 1)' "$elapsed" &&
        grep -q 'request 200 verified .*operation="create_media_buy"' <<<"$seen"; then
        pass "$what: signed tools/call answered as an event stream over ${elapsed}s (--upstream-timeout 1): $progress progress notifications, result $result, verified"
    else
        fail "$what: signed tools/call: result $result, $progress progress notifications in ${elapsed}s; without the gateway: $direct"
    fi
    local unsigned
    unsigned=$(field "$through" unsigned_call)
    if [[ $unsigned == '"refused: '* ]] && [ "$(field "$direct" unsigned_call)" = '"accepted"' ] &&
        grep -q 'request 401 request_signature_required' <<<"$seen"; then
        pass "$what: unsigned tools/call of create_media_buy refused (401 request_signature_required; the server alone accepts it)"
    else
        fail "$what: unsigned tools/call of create_media_buy: $unsigned; without the gateway: $(field "$direct" unsigned_call)"
    fi
    if [ "$mode" = legacy ]; then
        if [ "$(field "$through" list_changed)" = true ] && [ "$(field "$direct" list_changed)" = true ] &&
            grep -q 'request 200 unsigned_get ' <<<"$seen"; then
            pass "$what: GET stream opened (unverified, marked unsigned) and its notification delivered"
        else
            fail "$what: GET stream: notification $(field "$through" list_changed); access log: $(grep -c unsigned_get <<<"$seen" || true) unsigned_get"
        fi
        if grep -q 'request 200 unsigned_delete ' <<<"$seen"; then
            pass "$what: DELETE ended the session (unverified, marked unsigned)"
        else
            fail "$what: no DELETE of the session reached the server through the gateway"
        fi
    fi
}

for server in python js; do
    check python legacy "$server"
    check js legacy "$server"
done
if grep -qw 2026-07-28 <<<"$py_revisions"; then
    check python 2026-07-28 python
else
    echo "(the Python SDK $py_version does not offer 2026-07-28; not checked)"
fi
if [ "$failed" -gt 0 ] && [ -s "$work/client.err" ]; then
    echo "client stderr:" >&2
    tail -n 40 "$work/client.err" >&2
fi

echo "$passed passed, $failed failed (mcp $py_version, @modelcontextprotocol/sdk $js_version)"
[ "$failed" -eq 0 ]
