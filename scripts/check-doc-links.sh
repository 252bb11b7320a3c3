#!/usr/bin/env bash
# Checks that every relative Markdown link `[text](path)` or
# `[text](path#anchor)` in the repository's Markdown files (the root,
# docs/, crates/*/, scripts/, fuzz/) points at a file or directory that
# exists. Links to http(s):// and mailto: and pure `#anchor` links are not
# checked (no network); anchors are not checked. Links inside fenced code
# blocks and inline code spans are ignored.
#
# Prints each broken link as `file:line: target` and exits 1 if there is
# one. Usage: scripts/check-doc-links.sh (from anywhere in the tree).
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - "$@" <<'PY'
import glob
import os
import re
import sys

files = sorted(
    set(glob.glob("*.md"))
    | set(glob.glob("docs/**/*.md", recursive=True))
    | set(glob.glob("crates/*/README.md"))
    | set(glob.glob("crates/*/*.md"))
    | set(glob.glob("scripts/**/*.md", recursive=True))
    | set(glob.glob("fuzz/*.md"))
    | set(glob.glob("fuzz/fuzz_targets/**/*.md", recursive=True))
)

# [text](target) or [text](<target>), with an optional "title".
link = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target (reference definitions).
definition = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
code_span = re.compile(r"(`+)(?:(?!\1).)+?\1")
fence = re.compile(r"^\s{0,3}(```+|~~~+)")

broken = 0
for path in files:
    base = os.path.dirname(path)
    in_fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = fence.match(line)
            if m:
                marker = m.group(1)
                if in_fence is None:
                    in_fence = marker[0] * 3
                elif marker.startswith(in_fence):
                    in_fence = None
                continue
            if in_fence is not None:
                continue
            text = code_span.sub("", line)
            targets = [m.group(1) for m in link.finditer(text)]
            m = definition.match(text)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # http(s)://, mailto: and other schemes; same-page anchors
                target_path = target.split("#", 1)[0].split("?", 1)[0]
                if not target_path:
                    continue
                if target_path.startswith("/"):
                    resolved = target_path.lstrip("/")
                else:
                    resolved = os.path.normpath(os.path.join(base, target_path))
                if not os.path.exists(resolved):
                    print(f"{path}:{number}: {target}")
                    broken += 1

sys.exit(1 if broken else 0)
PY
