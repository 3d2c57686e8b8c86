#!/usr/bin/env bash
# `pnpm pack` of every package (after `pnpm build`) into the folder given (created if missing):
# the tarballs a user would get from the registry, `workspace:*` replaced by the version.
# Used by scripts/consumer-smoke.sh, scripts/install-alone.mjs and scripts/init-smoke.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:?usage: scripts/pack.sh <folder>}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
for manifest in "$root"/packages/core/package.json "$root"/packages/adapters/*/package.json \
  "$root"/packages/host-node/package.json; do
  (cd "$(dirname "$manifest")" && pnpm pack --pack-destination "$dest" >/dev/null)
done
