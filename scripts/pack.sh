#!/usr/bin/env bash
# `pnpm pack` of every package (after `pnpm build`) into the folder given (created if missing):
# the tarballs a user would get from the registry, `workspace:*` replaced by the version.
# Used by `plugboard init` run from a checkout (docs/cli.md#the-scaffolds-plugboard-packages),
# scripts/consumer-smoke.sh and scripts/install-alone.mjs.
# Refuses, writing nothing, a tree whose packages are not built: a tarball of `src/` alone
# installs but does not import (every entry point is under dist/).
set -euo pipefail
shopt -s nullglob
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:?usage: scripts/pack.sh <folder>}"
manifests=("$root"/packages/core/package.json "$root"/packages/adapters/*/package.json
  "$root"/packages/host-node/package.json)
# Every other package of packages/ (@plugboard/testing), when the tree has it.
for extra in "$root"/packages/*/package.json; do
  case "$extra" in */packages/core/package.json | */packages/host-node/package.json) ;; *) manifests+=("$extra") ;; esac
done
# Every file a manifest's `exports` (but the source condition) and `bin` name must exist.
ROOT="$root" node - "${manifests[@]}" <<'JS'
const { existsSync, readFileSync } = require("node:fs")
const { dirname, join, relative } = require("node:path")
const missing = []
const targets = (entry) =>
  typeof entry === "string" ? [entry]
    : entry === null || typeof entry !== "object" ? []
    : Object.entries(entry).flatMap(([k, v]) => (k === "@plugboard/source" ? [] : targets(v)))
for (const file of process.argv.slice(2)) {
  const manifest = JSON.parse(readFileSync(file, "utf8"))
  for (const target of [...targets(manifest.exports), ...targets(manifest.bin)]) {
    const path = join(dirname(file), target)
    if (!existsSync(path)) missing.push(relative(process.env.ROOT, path))
  }
}
if (missing.length > 0) {
  const shown = missing.slice(0, 3).join(", ") + (missing.length > 3 ? ` and ${missing.length - 3} more` : "")
  console.error(`[pack] the packages of ${process.env.ROOT} are not built (${shown} missing): run \`pnpm build\` there first.`)
  process.exit(1)
}
JS
command -v pnpm >/dev/null || { echo "[pack] pnpm is not on PATH: scripts/pack.sh runs \`pnpm pack\`." >&2; exit 1; }
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
for manifest in "${manifests[@]}"; do
  # pnpm writes its errors on stdout: shown only when it fails.
  if ! out="$(cd "$(dirname "$manifest")" && pnpm pack --pack-destination "$dest" 2>&1)"; then
    echo "$out" >&2
    echo "[pack] pnpm pack failed in ${manifest%/package.json}" >&2
    exit 1
  fi
done
