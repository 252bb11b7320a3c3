#!/usr/bin/env bash
# Governance token interop with the official AdCP Python SDK.
#
# Installs the SDK (PyPI package `adcp`, major $ADCP_PY_SPEC) into a
# temporary venv, builds `adcp-sig`, and checks in both directions that
# compact governance tokens (`typ` `adcp-gov+jws`) issued by one side
# verify on the other:
#   - Python `issue_governance_authorization` → `adcp-sig gov verify`, for
#     the phases intent, purchase (commitment + payload binding),
#     modification and delivery (with `media_buy_id`); tampered tokens
#     rejected;
#   - `adcp-sig gov sign` → Python `verify_governance_authorization`, the
#     same cases;
#   - the payload hash (`authorized_payload_hash`) of both for payloads
#     with unicode keys and values, nested objects, numbers, and top-level
#     `context` / `governance_context` (excluded);
#   - revocation: execution phases with a fresh list (bare, and signed by
#     Python as a flattened JWS), a list revoking the `jti`, and no list.
# Both verifiers run at one fixed `now` (this run's start). The test key
# and the request defaults come from the suite's governance vectors
# (governance/governance-authorization.json under $ADCP_VECTORS_DIR, else
# ../shared/vectors/adcp, else test-vectors/adcp); nothing is copied.
#
# Usage: scripts/interop-governance.sh
# Environment: ADCP_VECTORS_DIR, ADCP_PY_SPEC (pip requirement, default
#   'adcp>=9,<10'), PYTHON (default python3), CARGO_TARGET_DIR.
# Prints PASS/FAIL per case and "N passed, M failed"; exit 0 only when all
# passed (2 when the setup fails). The temp directory (venv included) is
# removed at exit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py_spec=${ADCP_PY_SPEC:-adcp>=9,<10}
bin="${CARGO_TARGET_DIR:-$root/target}/debug/adcp-sig"
helper="$root/scripts/interop/governance.py"

vectors=
for dir in "${ADCP_VECTORS_DIR:-}" "$root/../shared/vectors/adcp" "$root/test-vectors/adcp"; do
    if [ -n "$dir" ] && [ -f "$dir/governance/governance-authorization.json" ]; then
        vectors="$dir/governance/governance-authorization.json"
        break
    fi
done
if [ -z "$vectors" ]; then
    echo "governance vectors not found (set ADCP_VECTORS_DIR or run scripts/fetch-vectors.sh)" >&2
    exit 2
fi

work=$(mktemp -d)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

echo "installing the Python SDK ($py_spec) into a temporary venv..." >&2
"${PYTHON:-python3}" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$py_spec" >&2
# No __pycache__ next to the helper in the source tree.
export PYTHONDONTWRITEBYTECODE=1
py() { "$work/venv/bin/python" "$helper" "$@"; }
echo "Python SDK: adcp $(py version)"

echo "building adcp-sig..." >&2
cargo build -q -p adcp-sig >&2
echo "adcp-sig: $("$bin" --version 2>/dev/null || echo '?') (commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"

# The request the vectors verify against: issuer, seller, caller.
default() { "$work/venv/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["signed_jws"]["verification_defaults"][sys.argv[2]])' "$vectors" "$1"; }
iss=$(default expected_issuer)
aud=$(default expected_audience)
caller=$(default authenticated_caller)
origin=$(printf '%s' "$iss" | sed -E 's#^(https://[^/]+).*#\1#')
now=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

py public-jwks "$vectors" "$work/jwks.json"
py private-jwk "$vectors" "$work/key.json"

passed=0
failed=0
result() { # OK(0|1) DESCRIPTION [DETAIL]
    if [ "$1" = 0 ]; then
        echo "PASS $2"
        passed=$((passed + 1))
    else
        echo "FAIL $2${3:+ — $3}"
        failed=$((failed + 1))
    fi
}

# --- the cases: KIND → phase, task, payload, commitment, media buy ---------
# Each payload carries top-level `context` and `governance_context` (not
# hashed) next to the business fields.
write_case() { # KIND
    local kind=$1 phase task amount ceiling mb='' lifetime=3600
    case $kind in
        intent) phase=intent task=create_media_buy ceiling=5000 amount=4999.99 lifetime=900 ;;
        purchase) phase=purchase task=create_media_buy ceiling=25000.5 amount=25000.5 ;;
        modification) phase=modification task=update_media_buy ceiling=1200.75 amount=1000 mb=mb_interop_42 ;;
        delivery) phase=delivery task=update_media_buy ceiling=300 amount=0 mb=mb_interop_42 ;;
    esac
    printf '%s %s %s %s %s\n' "$phase" "$task" "$amount" "$ceiling" "${mb:--}" >"$work/$kind.case"
    "$work/venv/bin/python" - "$work" "$kind" "$phase" "$task" "$ceiling" "$mb" "$iss" "$aud" "$caller" "$now" "$lifetime" <<'PY'
import json, sys
work, kind, phase, task, ceiling, mb, iss, aud, caller, now, lifetime = sys.argv[1:]
payload = {
    "idempotency_key": f"interop-{kind}-0001",
    "account": {"account_id": "acc_interop", "brand": {"domain": "buyer.example.com"}},
    "po_number": "PO-ÄÖÜ-€-🎯",
    "packages": [{"product_id": "prod_1", "budget": float(ceiling), "pacing": "even"}],
    "context": {"trace_id": "not-hashed"},
    "governance_context": "not-hashed",
}
if mb:
    payload["media_buy_id"] = mb
for sides in ("py", "rs"):
    claims = {
        "iss": iss, "sub": f"gov_action_{kind}", "plan_hash": "plan_interop_v1", "aud": aud,
        "iat": int(now), "exp": int(now) + int(lifetime), "jti": f"interop-{kind}-{sides}",
        "phase": phase, "caller": caller, "check_id": f"chk_{kind}",
        "authorized_commitment": {"amount": json.loads(ceiling), "currency": "USD"},
        "authorized_task": task,
    }
    if mb:
        claims["media_buy_id"] = mb
    json.dump(claims, open(f"{work}/{kind}-{sides}.claims.json", "w"), ensure_ascii=False)
json.dump(payload, open(f"{work}/{kind}.payload.json", "w"), ensure_ascii=False)
other = dict(payload, idempotency_key=f"interop-{kind}-other")
json.dump(other, open(f"{work}/{kind}.other-payload.json", "w"), ensure_ascii=False)
PY
}

# Revocation lists (the JWS payload form; `issuer` is the origin of iss).
revocation_list() { # FILE REVOKED_JTIS_JSON
    printf '{"version":1,"issuer":"%s","updated":"%s","next_update":"%s","revoked_jtis":%s,"revoked_kids":[]}\n' \
        "$origin" "$(iso $((now - 60)))" "$(iso $((now + 600)))" "$2" >"$1"
}
revocation_list "$work/fresh-list.json" '[]'
revocation_list "$work/revoked-list.json" '["interop-purchase-py","interop-purchase-rs"]'
py sign-revocation-list "$vectors" "$work/fresh-list.json" >"$work/fresh-list.signed.json"

# rs_verify KIND TOKEN_FILE [LIST|-] [PAYLOAD]: adcp-sig gov verify → JSON in $out.
rs_verify() {
    local kind=$1 token=$2 list=${3:--} payload=${4:-$work/$1.payload.json} phase task amount ceiling mb
    read -r phase task amount ceiling mb <"$work/$kind.case"
    local args=(gov verify "$token" --payload "$payload" --task "$task" --audience "$aud"
        --caller "$caller" --phase "$phase" --amount "$amount" --currency USD
        --jwks "$work/jwks.json" --issuer "$iss" --now "$now" --json)
    [ "$mb" != - ] && args+=(--media-buy-id "$mb")
    [ "$phase" != intent ] && args+=(--prior-sub "gov_action_$kind")
    [ "$list" != - ] && args+=(--revocation-list "$list")
    out=$("$bin" "${args[@]}" 2>"$work/stderr") && rc=0 || rc=$?
    [ -n "$out" ] || out=$(cat "$work/stderr")
}
# py_verify KIND TOKEN_FILE [LIST|-] [PAYLOAD]: verify_governance_authorization → JSON in $out.
py_verify() {
    local kind=$1 token=$2 list=${3:--} payload=${4:-$work/$1.payload.json} phase task amount ceiling mb
    read -r phase task amount ceiling mb <"$work/$kind.case"
    local args=(verify "$vectors" "$token" "$payload" --task "$task" --audience "$aud"
        --caller "$caller" --issuer "$iss" --phase "$phase" --amount "$amount" --currency USD --now "$now")
    [ "$mb" != - ] && args+=(--media-buy-id "$mb")
    # The SDK requires the prior opaque `sub` for execution phases.
    [ "$phase" != intent ] && args+=(--subject "gov_action_$kind")
    [ "$list" != - ] && args+=(--revocation-list "$list")
    out=$(py "${args[@]}" 2>"$work/stderr") && rc=0 || rc=$?
    [ -n "$out" ] || out=$(tail -1 "$work/stderr")
}
code() { printf '%s' "$out" | sed -nE 's/.*"error_code": ?"([a-z_]+)".*/\1/p'; }
expect_ok() { # DESCRIPTION
    if [ "$rc" = 0 ]; then result 0 "$1"; else result 1 "$1" "exit $rc: $out"; fi
}
expect_code() { # CODE DESCRIPTION
    if [ "$rc" = 1 ] && [ "$(code)" = "$1" ]; then result 0 "$2 ($1)"; else result 1 "$2" "expected $1, exit $rc: $out"; fi
}
list_for() { [ "$1" = intent ] && echo - || echo "$work/fresh-list.json"; }

# --- 1. Python issues, adcp-sig verifies; 2. adcp-sig signs, Python verifies
for kind in intent purchase modification delivery; do
    write_case "$kind"
    list=$(list_for "$kind")
    if py issue "$vectors" "$work/$kind-py.claims.json" "$work/$kind.payload.json" >"$work/$kind-py.token" 2>"$work/stderr"; then
        rs_verify "$kind" "$work/$kind-py.token" "$list"
        expect_ok "python-issued $kind token verifies in adcp-sig"
        for where in claims signature; do
            py tamper "$work/$kind-py.token" "$where" >"$work/$kind-py.$where.token"
            rs_verify "$kind" "$work/$kind-py.$where.token" "$list"
            expect_code governance_token_invalid "python-issued $kind token, one $where byte changed, rejected by adcp-sig"
        done
    else
        result 1 "python issues a $kind token" "$(tail -1 "$work/stderr")"
    fi
    if "$bin" gov sign --key "$work/key.json" --claims "$work/$kind-rs.claims.json" \
        --payload "$work/$kind.payload.json" >"$work/$kind-rs.token" 2>"$work/stderr"; then
        py_verify "$kind" "$work/$kind-rs.token" "$list"
        expect_ok "adcp-sig-signed $kind token verifies in the Python SDK"
        for where in claims signature; do
            py tamper "$work/$kind-rs.token" "$where" >"$work/$kind-rs.$where.token"
            py_verify "$kind" "$work/$kind-rs.$where.token" "$list"
            expect_code governance_token_invalid "adcp-sig-signed $kind token, one $where byte changed, rejected by the Python SDK"
        done
    else
        result 1 "adcp-sig gov sign issues a $kind token" "$(tail -1 "$work/stderr")"
    fi
done

# Same binding failure, same code: the token presented with another
# payload (another idempotency_key) is not applicable on both sides.
rs_verify intent "$work/intent-py.token" - "$work/intent.other-payload.json"
expect_code governance_token_not_applicable "python-issued intent token with another payload, rejected by adcp-sig"
py_verify intent "$work/intent-rs.token" - "$work/intent.other-payload.json"
expect_code governance_token_not_applicable "adcp-sig-signed intent token with another payload, rejected by the Python SDK"

# --- 3. Revocation (execution phase: purchase) --------------------------------
rs_verify purchase "$work/purchase-py.token" "$work/fresh-list.signed.json"
expect_ok "python-issued purchase token, revocation list signed by Python (flattened JWS), verifies in adcp-sig"
rs_verify purchase "$work/purchase-py.token" "$work/revoked-list.json"
expect_code governance_token_revoked "python-issued purchase token whose jti is revoked, rejected by adcp-sig"
py_verify purchase "$work/purchase-rs.token" "$work/revoked-list.json"
expect_code governance_token_revoked "adcp-sig-signed purchase token whose jti is revoked, rejected by the Python SDK"
# No list at all: both fail closed, with different codes (a known
# difference, see docs/interop-governance.md).
rs_verify purchase "$work/purchase-py.token" -
expect_code governance_revocation_stale "python-issued purchase token without a revocation list, refused by adcp-sig"
py_verify purchase "$work/purchase-rs.token" -
expect_code governance_token_revoked "adcp-sig-signed purchase token without a revocation status, refused by the Python SDK"

# --- 4. Payload hashes ----------------------------------------------------------
# Our hash is the `authorized_payload_hash` `adcp-sig gov sign --payload`
# writes; Python's is compute_governed_payload_hash().
"$work/venv/bin/python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
cases = {
    "metadata-excluded": {"idempotency_key": "k1", "amount": 1, "context": {"trace_id": "x"},
                          "governance_context": "eyJ.x.y"},
    "nested-context-kept": {"a": {"context": {"keep": True}, "governance_context": "keep"}, "b": [1, {"c": None}]},
    "unicode": {"name": "Café ☕ 🎯", "é": 1, "😀": 2, "Ａ": 3, "z": "\u2028\u0000\"\\/", "ß": "straße"},
    "numbers": {"n": [0, -0.0, 1.0, -1, 0.1, 1e21, 1e-7, 123456789012345, 9007199254740991, 1.5e300,
                      5e-324, 25000.5, 1e308]},
    "deep-nesting": {"l1": {"l2": {"l3": {"l4": {"list": [[], {}, [[{"k": "v"}]]], "t": True, "f": False}}}}},
    "empty": {},
}
for name, payload in cases.items():
    json.dump(payload, open(f"{work}/hash-{name}.json", "w"), ensure_ascii=False)
open(f"{work}/hash-cases", "w").write("\n".join(f"{name}.json" for name in cases) + "\n")
PY
printf '{"iss":"%s","sub":"s","plan_hash":"p","aud":"%s","iat":%s,"exp":%s,"jti":"hash","phase":"intent","caller":"%s","check_id":"c","authorized_task":"create_media_buy"}\n' \
    "$iss" "$aud" "$now" "$((now + 900))" "$caller" >"$work/hash.claims.json"
mapfile -t hash_cases <"$work/hash-cases"
py hash "${hash_cases[@]/#/$work/hash-}" >"$work/python-hashes"
mapfile -t python_hashes <"$work/python-hashes"
for i in "${!hash_cases[@]}"; do
    name=${hash_cases[$i]%.json} expected=${python_hashes[$i]:-}
    if "$bin" gov sign --key "$work/key.json" --claims "$work/hash.claims.json" \
        --payload "$work/hash-$name.json" >"$work/hash.token" 2>"$work/stderr"; then
        got=$(py claim "$work/hash.token" authorized_payload_hash | tr -d '"')
    else
        got="gov sign failed: $(tail -1 "$work/stderr")"
    fi
    [ "$got" = "$expected" ] && ok=0 || ok=1
    result "$ok" "payload hash '$name' identical ($expected)" "python $expected, adcp-sig $got"
done

# Numbers at the edges, where the two refuse different inputs (known
# differences, see docs/interop-governance.md): the check is that each
# side behaves as recorded.
printf '{"n":9007199254740993}\n' >"$work/edge-bigint.json"
printf '{"n":1.7976931348623157e308}\n' >"$work/edge-f64max.json"
mapfile -t edge <<<"$(py hash "$work/edge-bigint.json" "$work/edge-f64max.json")"
rs_hash() { "$bin" gov sign --key "$work/key.json" --claims "$work/hash.claims.json" --payload "$1" >/dev/null 2>&1 && echo hashed || echo "refused (exit $?)"; }
got=$(rs_hash "$work/edge-bigint.json")
[ "${edge[0]}" = error:IntegerDomainError ] && [ "$got" = hashed ] && ok=0 || ok=1
result "$ok" "integer beyond 2^53 (9007199254740993): Python refuses to hash it, adcp-sig hashes it (known difference)" "python ${edge[0]}, adcp-sig $got"
got=$(rs_hash "$work/edge-f64max.json")
[[ ${edge[1]} != error:* ]] && [ "$got" = "refused (exit 2)" ] && ok=0 || ok=1
result "$ok" "f64::MAX (1.7976931348623157e308): Python hashes it, adcp-sig refuses the payload (known difference)" "python ${edge[1]}, adcp-sig $got"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
