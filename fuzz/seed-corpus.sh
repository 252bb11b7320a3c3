#!/usr/bin/env bash
# Builds the fuzz seed corpora from the AdCP conformance vectors (which are
# never copied into the repository) plus a few hand-picked shapes.
# Usage: fuzz/seed-corpus.sh   (from anywhere; writes fuzz/corpus/<target>/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vectors=${ADCP_VECTORS_DIR:-$here/../../shared/vectors/adcp}
mkdir -p "$here/corpus/canon" "$here/corpus/urn" "$here/corpus/signature_headers" "$here/corpus/content_digest" "$here/corpus/verifier" "$here/corpus/governance_jws"
if [ -f "$vectors/request-signing/canonicalization.json" ]; then
  python3 - "$vectors/request-signing/canonicalization.json" "$here/corpus/canon" <<'PY'
import hashlib, json, sys
doc = json.load(open(sys.argv[1]))
for case in doc["cases"]:
    data = case["input_url"].encode()
    open(f"{sys.argv[2]}/{hashlib.sha1(data).hexdigest()}", "wb").write(data)
PY
  python3 - "$vectors" "$here/corpus" <<'PY'
import hashlib, json, pathlib, sys
suite, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for path in list(suite.glob("webhook-signing/**/*.json")) + list(suite.glob("request-signing/**/*.json")):
    try:
        headers = json.loads(path.read_text())["request"]["headers"]
    except (KeyError, TypeError, ValueError):
        continue
    for name, target in (("Signature-Input", "signature_headers"), ("Signature", "signature_headers"), ("Content-Digest", "content_digest")):
        value = headers.get(name)
        if isinstance(value, list):
            value = ", ".join(value)
        if isinstance(value, str):
            data = value.encode()
            if target == "content_digest":
                data = b"\x00" + data  # the target's first byte selects the decoder
            (out / target / hashlib.sha1(data).hexdigest()).write_bytes(data)
    # The whole request for the verifier target: URL, header lines, body.
    req = json.loads(path.read_text())["request"]
    lines = [req.get("url", "")]
    for name, value in req.get("headers", {}).items():
        for v in (value if isinstance(value, list) else [value]):
            lines.append(f"{name}: {v}")
    data = ("\n".join(lines) + "\n\n" + (req.get("body") or "")).encode()
    (out / "verifier" / hashlib.sha1(data).hexdigest()).write_bytes(data)
# The published governance tokens (positive and negative) for governance_jws.
gov = suite / "governance" / "governance-authorization.json"
if gov.is_file():
    for case in json.loads(gov.read_text())["signed_jws"]["cases"]:
        data = case["compact_jws"].encode()
        (out / "governance_jws" / hashlib.sha1(data).hexdigest()).write_bytes(data)
PY
else
  echo "conformance vectors not found at $vectors; seeding from built-in shapes only" >&2
fi
i=0
for s in 'https://Seller.Example.COM.:443/a/./b/../c?x=%7e#f' 'https://[2001:DB8::1]:8443/p?' \
         'https://user:pw@bücher.example/%2E%2E/x' 'http://127.1/' 'https://[fe80::1%25eth0]/'; do
  printf '%s' "$s" > "$here/corpus/canon/builtin-$i"; i=$((i + 1))
done
i=0
for s in 'urn:example:a123,z456' 'URN:EXAMPLE:a123%2cz456?+r?=q#f' 'urn:example:%D0%B0123,z456/foo'; do
  printf '%s' "$s" > "$here/corpus/urn/builtin-$i"; i=$((i + 1))
done
for t in canon urn signature_headers content_digest governance_jws; do echo "seeded $t: $(ls "$here/corpus/$t" | wc -l)"; done
