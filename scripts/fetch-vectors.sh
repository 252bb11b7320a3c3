#!/usr/bin/env bash
# Fetches the AdCP conformance vectors the tests use into test-vectors/adcp
# (git-ignored), for machines without the workplace's shared copy and
# without ADCP_VECTORS_DIR. The suite is never committed to this repository.
# Usage: scripts/fetch-vectors.sh [VERSION]   (default 3.2.4)
set -euo pipefail
version=${1:-3.2.4}
base="https://adcontextprotocol.org/compliance/$version/test-vectors"
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/test-vectors/adcp"
files=(
  request-signing/canonicalization.json
  request-signing/keys.json
)
for f in "${files[@]}"; do
  mkdir -p "$dest/$(dirname "$f")"
  curl --fail --silent --show-error --location --proto '=https' "$base/$f" -o "$dest/$f"
  echo "fetched $f"
done
