#!/usr/bin/env bash
# Installs the real MCP servers of the real-catalog routing benchmark (`pnpm bench realcatalog`,
# docs/benchmarks.md#routing-quality) into a git-ignored folder: npm packages into one prefix, each PyPI package
# into a venv of its own (their pinned dependencies disagree). Versions are pinned; a package
# already installed at its version is not installed again, so the script is idempotent.
# Usage: scripts/mcp-servers.sh [directory]   (default .plugboard/mcp-servers)
# Prints the directory; the benchmark reads it from MCP_SERVERS_DIR or this default.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-$root/.plugboard/mcp-servers}"
mkdir -p "$dest/npm" "$dest/pypi"

NPM=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-sequential-thinking@2026.8.31"
  "@modelcontextprotocol/server-github@2025.4.8"
  "@modelcontextprotocol/server-postgres@0.6.2"
  "@wonderwhy-er/desktop-commander@0.2.52"
  "@playwright/mcp@0.0.83"
  "mcp-server-kubernetes@4.1.7"
  "@antv/mcp-server-chart@0.9.10"
  "@sylphx/pdf-reader-mcp@2.4.0"
  "@notionhq/notion-mcp-server@2.5.2"
)
PYPI=(
  "mcp-server-time==2026.10.19"
  "mcp-server-git==2026.10.19"
  "mcp-server-fetch==2026.10.24"
  "mcp-server-sqlite==2025.4.25"
  "mcp-server-calculator==0.2.1"
  "excel-mcp-server==2.2.2"
  "office-word-mcp-server==1.1.11"
  "arxiv-mcp-server==0.8.2"
)

# npm: one prefix; only the packages missing at their pinned version are installed.
missing=()
for spec in "${NPM[@]}"; do
  name="${spec%@*}"
  version="${spec##*@}"
  pkg="$dest/npm/node_modules/$name/package.json"
  if [[ ! -f "$pkg" ]] || ! grep -q "\"version\": *\"$version\"" "$pkg"; then missing+=("$spec"); fi
done
if ((${#missing[@]} > 0)); then
  # No browser download for @playwright/mcp (its tools are only listed here).
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 \
    npm install --silent --no-audit --no-fund --prefix "$dest/npm" "${missing[@]}" >&2
fi

# What a package's own pins leave open and a later release broke: mcp-server-sqlite 2025.4.25 uses
# the low-level Server's list_resources decorator, which the mcp SDK 2 removed.
declare -A EXTRA=(["mcp-server-sqlite"]="mcp<2")

# PyPI: a venv per package, marked done with the pinned requirement (and its extra pins).
for requirement in "${PYPI[@]}"; do
  name="${requirement%%==*}"
  venv="$dest/pypi/$name"
  extra="${EXTRA[$name]:-}"
  mark="$requirement${extra:+ $extra}"
  if [[ -f "$venv/.installed" ]] && [[ "$(cat "$venv/.installed")" == "$mark" ]]; then continue; fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirement" ${extra:+"$extra"} >&2
  echo "$mark" >"$venv/.installed"
done
echo "$dest"
