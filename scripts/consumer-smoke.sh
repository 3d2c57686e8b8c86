#!/usr/bin/env bash
# The packages as a user gets them: `pnpm pack` of core, each adapter family, host-node and testing
# (after `pnpm build`), installed into an empty project outside the workspace, then
#   - turn.mjs: a turn through core + the LangGraph adapter + the scripted model, and the server
#     from @plugboard/host-node answering /health;
#   - types.ts: type-checked against the published declarations (strict, NodeNext);
#   - the `plugboard` bin inspecting a JavaScript plugin module (no TypeScript loader installed),
#     with a skills folder, and the MCP adapter's config parser imported from its subpath.
# Catches what the workspace hides: files missing from a package, `exports` that point nowhere,
# declarations that do not resolve, dependencies only the workspace provided.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bash "$root/scripts/pack.sh" "$work"
cp "$root"/scripts/consumer/{plugins.mjs,turn.mjs,types.ts,tsconfig.json} "$work/"

version() { node -p "require('$root/package.json').devDependencies['$1']"; }
tarball() { ls "$work"/plugboard-"$1"-*.tgz; }
# Every @plugboard package resolves to its tarball, wherever it is asked for (none is on the registry).
overrides() {
  local first=1
  for t in "$work"/plugboard-*.tgz; do
    local name; name="$(basename "$t" | sed -E 's/^plugboard-(.*)-[0-9]+\.[0-9]+\.[0-9]+\.tgz$/\1/')"
    [[ $first == 1 ]] || printf ',\n'
    first=0
    printf '      "@plugboard/%s": "file:%s"' "$name" "$t"
  done
}
cat > "$work/package.json" <<JSON
{
  "name": "plugboard-consumer",
  "private": true,
  "type": "module",
  "dependencies": {
    "@plugboard/core": "file:$(tarball core)",
    "@plugboard/langgraph": "file:$(tarball langgraph)",
    "@plugboard/mcp": "file:$(tarball mcp)",
    "@plugboard/models": "file:$(tarball models)",
    "@plugboard/sqlite": "file:$(tarball sqlite)",
    "@plugboard/testing": "file:$(tarball testing)",
    "@plugboard/tokenizers": "file:$(tarball tokenizers)",
    "@plugboard/host-node": "file:$(tarball host-node)",
    "@types/node": "$(version @types/node)",
    "effect": "$(version effect)",
    "fast-check": "$(version fast-check)",
    "typescript": "$(version typescript)",
    "vitest": "$(version vitest)"
  },
  "pnpm": {
    "overrides": {
$(overrides)
    },
    "onlyBuiltDependencies": ["better-sqlite3"]
  }
}
JSON

cd "$work"
echo "[consumer] install the packed packages"
pnpm install --ignore-workspace --prefer-offline --reporter=silent
echo "[consumer] a turn and the server"
node turn.mjs
echo "[consumer] type-check against the declarations"
# skipLibCheck is off so that our own .d.ts files are checked; errors inside third-party
# declarations (theirs to fix, and skipped by any consumer with skipLibCheck) are counted only.
if node_modules/.bin/tsc -p tsconfig.json >tsc.log; then :; fi
ours=$(grep "error TS" tsc.log | grep -vE "^node_modules/" || true)$(grep "error TS" tsc.log | grep "/@plugboard/" || true)
if [[ -n "$ours" ]]; then
  echo "$ours"
  echo "[consumer] the published declarations do not type-check"
  exit 1
fi
echo "[consumer] declarations ok ($(grep -c "error TS" tsc.log || true) errors inside third-party declarations ignored)"
echo "[consumer] plugboard inspect through the bin"
node_modules/.bin/plugboard inspect ./plugins.mjs --budget 100000 >/dev/null
echo "[consumer] a skill and an MCP config through the published adapters"
mkdir -p skills/hello
printf -- '---\nname: hello\ndescription: Says hello in the house style. Use when greeting a new user.\n---\n\nGreet warmly.\n' >skills/hello/SKILL.md
node_modules/.bin/plugboard inspect ./plugins.mjs --skills ./skills --tokenizer heuristic | grep -q "hello (skill)"
node --input-type=module -e '
  import { McpConfig } from "@plugboard/mcp"
  const parsed = McpConfig.parse({ mcpServers: { memory: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] } } })
  if (parsed.errors.length > 0 || parsed.servers[0]?.name !== "memory") throw new Error(JSON.stringify(parsed))
'
echo "[consumer] ok"
