#!/usr/bin/env bash
# Fetches the AdCP conformance suite into test-vectors/adcp (git-ignored),
# for machines without the workplace's shared copy and without
# ADCP_VECTORS_DIR. Every file listed in the committed manifest is fetched
# from the AdCP CDN and checked against its SHA-256. The suite is never
# committed to this repository.
# Usage: scripts/fetch-vectors.sh [RELEASE]   (default 3.2.4)
set -euo pipefail
release=${1:-3.2.4}
root=$(cd "$(dirname "$0")/.." && pwd)
manifest="$root/test-vectors/manifest-$release.json"
[ -f "$manifest" ] || { echo "no manifest for release $release at $manifest" >&2; exit 2; }
base="https://adcontextprotocol.org/compliance/$release/test-vectors"
dest="$root/test-vectors/adcp"
python3 - "$manifest" <<'PY' | while read -r file sha remote; do
import json, sys
for path, sha in json.load(open(sys.argv[1]))["files"].items():
    # The CDN bundle serves the governance file at its top level; the
    # suite keeps it under governance/ (see the suite's SOURCE).
    remote = path.removeprefix("governance/")
    print(path, sha, remote)
PY
  mkdir -p "$dest/$(dirname "$file")"
  curl --fail --silent --show-error --location --proto '=https' "$base/$remote" -o "$dest/$file"
  got=$(sha256sum "$dest/$file" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "$file: SHA-256 $got does not match the manifest ($sha)" >&2
    exit 1
  fi
done
echo "fetched the $release suite into $dest"
