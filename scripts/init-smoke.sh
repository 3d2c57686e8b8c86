#!/usr/bin/env bash
# A newcomer's path, with the packages as a user gets them (after `pnpm build`):
#   1. `plugboard init` in a temporary folder outside the repository;
#   2. `npm install` there, every @plugboard package pointed at its packed tarball (none is on
#      the registry) through the dependencies and npm `overrides`;
#   3. the scaffold's test (`npm test`), its type-check against the published declarations, and
#      `plugboard inspect` through the installed bin;
#   4. `plugboard serve` on a free port on embedded defaults (scripted model), and one real turn
#      streamed over HTTP with a UCAN from `plugboard token` (init-smoke/turn.mjs).
# The installed host-node's own template is checked to be the one the repository's bin wrote.
#   bash scripts/init-smoke.sh [tarball folder]     (packs the packages when no folder is given)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
server=""
cleanup() {
  if [[ -n "$server" ]] && kill -0 "$server" 2>/dev/null; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export npm_config_nodedir="${npm_config_nodedir:-/usr}"  # a native build, if any, uses local headers

tarballs="${1:-}"
if [[ -z "$tarballs" ]]; then
  tarballs="$work/tarballs"
  bash "$root/scripts/pack.sh" "$tarballs"
fi
tarballs="$(cd "$tarballs" && pwd)"
case "$work" in "$root"/*) echo "[init-smoke] $work is inside the repository"; exit 1 ;; esac

echo "[init-smoke] plugboard init in $work/app"
cd "$work"
node "$root/packages/host-node/dist/cli/main.js" init app >/dev/null
cd app
# Every @plugboard package, wherever it is asked for, resolves to its tarball.
TARBALLS="$tarballs" node --input-type=module -e '
  import { readdirSync, readFileSync, writeFileSync } from "node:fs"
  const dir = process.env.TARBALLS
  const tarballs = Object.fromEntries(readdirSync(dir).filter((f) => f.endsWith(".tgz"))
    .map((f) => [`@plugboard/${/^plugboard-(.*)-\d+\.\d+\.\d+\.tgz$/.exec(f)[1]}`, `file:${dir}/${f}`]))
  const manifest = JSON.parse(readFileSync("package.json", "utf8"))
  for (const field of ["dependencies", "devDependencies"])
    for (const name of Object.keys(manifest[field])) if (name in tarballs) manifest[field][name] = tarballs[name]
  manifest.overrides = tarballs
  writeFileSync("package.json", JSON.stringify(manifest, null, 2))
'
echo "[init-smoke] npm install"
started=$SECONDS
npm install --no-audit --no-fund --loglevel=warn 2>&1 | tee npm.log | grep -E "^added|EBADENGINE|ERR" || true
if grep -q EBADENGINE npm.log; then echo "[init-smoke] EBADENGINE warning"; exit 1; fi
echo "[init-smoke] installed in $((SECONDS - started)) s"

echo "[init-smoke] the template in the installed package is the one the repository's bin wrote"
node_modules/.bin/plugboard init ../again/app >/dev/null
diff -r --exclude=node_modules --exclude=package.json --exclude=package-lock.json --exclude=npm.log . ../again/app

echo "[init-smoke] npm test"
npm test --silent
echo "[init-smoke] npm run typecheck"
npm run typecheck --silent
echo "[init-smoke] npm run inspect"
npm run inspect --silent >inspect.txt
if ! grep -qE "^  tip +on-demand +data +1 " inspect.txt || ! grep -q "Manifest validation: no errors, 0 warnings" inspect.txt; then
  cat inspect.txt
  echo "[init-smoke] inspect does not report the plugin, valid"
  exit 1
fi

echo "[init-smoke] plugboard serve, one turn"
node_modules/.bin/plugboard serve src/index.ts --port 0 >serve.log 2>&1 &
server=$!
url=""
for _ in $(seq 1 600); do
  url="$(grep -oE 'listening on http://[^ ]+' serve.log | head -1 | sed 's/listening on //' || true)"
  [[ -n "$url" ]] && break
  kill -0 "$server" 2>/dev/null || { cat serve.log; echo "[init-smoke] serve exited"; exit 1; }
  sleep 0.1
done
[[ -n "$url" ]] || { cat serve.log; echo "[init-smoke] serve did not listen within 60 s"; exit 1; }
grep -qF 'Try: npx plugboard chat "What is a 15% tip on a bill of 80?"' serve.log || { cat serve.log; echo "[init-smoke] serve's hint"; exit 1; }
token="$(node_modules/.bin/plugboard token)"
node "$root/scripts/init-smoke/turn.mjs" "$url" "$token"
kill -TERM "$server"
wait "$server" || true
server=""
grep -q "stopped." serve.log || { cat serve.log; echo "[init-smoke] serve did not stop cleanly"; exit 1; }
echo "[init-smoke] ok"
