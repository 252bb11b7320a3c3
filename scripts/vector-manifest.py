#!/usr/bin/env python3
"""Writes test-vectors/manifest-<release>.json: the SHA-256 of every AdCP
conformance file the tests read, and the vector count per directory, so a
missing or altered vector fails the run instead of silently shrinking it.
Usage: scripts/vector-manifest.py SUITE_DIR RELEASE"""
import hashlib, json, pathlib, sys

suite, release = pathlib.Path(sys.argv[1]), sys.argv[2]
dirs = ["webhook-signing/positive", "webhook-signing/negative", "request-signing/positive",
        "request-signing/negative", "request-signing/profile-3.2/positive",
        "request-signing/profile-3.2/negative", "request-signing/a2a/positive", "request-signing/a2a/negative"]
extra = ["webhook-signing/keys.json", "request-signing/keys.json", "request-signing/canonicalization.json",
         "request-signing/body-integrity-policy.json", "request-signing/protocol-method-names.json",
         "webhooks/webhook-hmac-sha256.json", "governance/governance-authorization.json"]
files, counts = {}, {}
for d in dirs:
    found = sorted((suite / d).glob("*.json"))
    counts[d] = len(found)
    for p in found:
        files[str(p.relative_to(suite))] = hashlib.sha256(p.read_bytes()).hexdigest()
for e in extra:
    files[e] = hashlib.sha256((suite / e).read_bytes()).hexdigest()
manifest = {
    "$comment": "SHA-256 of every AdCP conformance file the test suite reads (AdCP compliance release "
    + release + "). Hashes only: the vectors themselves are never copied into this repository. "
    "Regenerate with scripts/vector-manifest.py when moving to a new release.",
    "release": release,
    "vector_counts": counts,
    "vector_total": sum(counts.values()),
    "files": files,
}
out = pathlib.Path(__file__).resolve().parent.parent / "test-vectors" / f"manifest-{release}.json"
out.write_text(json.dumps(manifest, indent=2) + "\n")
print(f"{out}: {sum(counts.values())} vectors, {len(files)} files")
