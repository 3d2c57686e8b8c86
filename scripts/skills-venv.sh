#!/usr/bin/env bash
# Builds the Python venv skill scripts run with (SKILLS_RUN_PYTHON, docs/skills-that-run.md) from
# scripts/skills-requirements.txt, with Debian's python3 (python3-venv). Idempotent: a venv built
# from the same requirements file is kept. It must be readable by uid 65534 (the sandbox's user
# when the host is root), so it lives outside /root.
# Usage: scripts/skills-venv.sh [directory]   (default .plugboard/skills-venv). Prints its python.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.plugboard/skills-venv}"
req="$root/scripts/skills-requirements.txt"
stamp="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ ! -x "$dest/bin/python" || "$(cat "$dest/.requirements-sha256" 2>/dev/null)" != "$stamp" ]]; then
  rm -rf "$dest"
  /usr/bin/python3 -m venv "$dest" >&2
  "$dest/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir -r "$req" >&2
  echo "$stamp" >"$dest/.requirements-sha256"
fi
chmod -R a+rX "$dest"
echo "$dest/bin/python"
