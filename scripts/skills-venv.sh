#!/usr/bin/env bash
# Builds the runtime skill scripts run with in the tests (docs/skills-that-run.md): a Python venv
# from scripts/skills-requirements.txt, with Debian's python3 (python3-venv), and a copy of the
# running Node in its bin/, so that both interpreters sit in one folder the sandbox mounts
# read-only. When the host is root the sandbox runs as uid 65534 (nobody), and bwrap, started as
# that user, must reach every path it mounts: a clone in a private directory (`mktemp -d` makes
# them 0700) is out of its reach, so the runtime then lives in a folder of /tmp named after the
# clone's path. Idempotent: a venv built from the same requirements file is kept.
#
# Usage: scripts/skills-venv.sh [--env] [directory]
#   prints the venv's python, or with --env the `export` lines of SKILLS_RUN_PYTHON and
#   SKILLS_RUN_NODE (what the skills tests read).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
print_env=false
if [[ "${1:-}" == "--env" ]]; then print_env=true; shift; fi
default_dest() {
  if [[ "$(id -u)" == 0 ]] && ! runuser -u nobody -- test -x "$root" 2>/dev/null; then
    echo "/tmp/plugboard-skills-venv-$(printf '%s' "$root" | sha1sum | cut -c1-12)"
  else
    echo "$root/.plugboard/skills-venv"
  fi
}
dest="${1:-$(default_dest)}"
req="$root/scripts/skills-requirements.txt"
stamp="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ ! -x "$dest/bin/python" || "$(cat "$dest/.requirements-sha256" 2>/dev/null)" != "$stamp" ]]; then
  rm -rf "$dest"
  /usr/bin/python3 -m venv "$dest" >&2
  "$dest/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir -r "$req" >&2
  echo "$stamp" >"$dest/.requirements-sha256"
fi
# The Node that runs this script (Node 24 after scripts/node24.sh), copied when it differs.
node_bin="$(command -v node)"
if ! cmp -s "$node_bin" "$dest/bin/node" 2>/dev/null; then
  install -m 0755 "$node_bin" "$dest/bin/node"
fi
chmod -R a+rX "$dest"
if $print_env; then
  echo "export SKILLS_RUN_PYTHON=$dest/bin/python"
  echo "export SKILLS_RUN_NODE=$dest/bin/node"
else
  echo "$dest/bin/python"
fi
