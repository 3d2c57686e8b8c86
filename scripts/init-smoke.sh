#!/usr/bin/env bash
# A newcomer's path, after `pnpm build`, running exactly the steps `plugboard init` prints
# (docs/cli.md#the-scaffolds-plugboard-packages), not a copy of them:
#   1. `plugboard init app` in a temporary folder outside the repository: from the checkout, which
#      packs the packages into the project's vendor/ itself, or with `--from <folder>` when a
#      folder of tarballs is given;
#   2. every line of its `Next:` block, in order, in this shell (comments dropped): `cd app`,
#      `npm install` (no EBADENGINE warning), `npm test`, `npm run inspect` (the plugin reported,
#      valid), and `npm run serve` in the background with PORT=0 (any free port), then one real
#      turn streamed over HTTP with a UCAN from `plugboard token` (init-smoke/turn.mjs), and a
#      clean stop on SIGTERM;
#   3. then the scaffold's type-check against the published declarations, and the installed
#      host-node's `plugboard init --from vendor` writing the same project, package.json included.
#   bash scripts/init-smoke.sh [tarball folder]
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
export npm_config_audit=false npm_config_fund=false      # quieter npm; the commands stay as printed
case "$work" in "$root"/*) echo "[init-smoke] $work is inside the repository"; exit 1 ;; esac
logs="$work/logs"
mkdir "$logs"

from=()
if [[ -n "${1:-}" ]]; then from=(--from "$(cd "$1" && pwd)"); fi
echo "[init-smoke] plugboard init app${from[*]:+ ${from[*]}} in $work"
cd "$work"
node "$root/packages/host-node/dist/cli/main.js" init app "${from[@]}" >"$logs/init.txt"

# The `Next:` block: from its line to the first blank one, each step indented, comments dropped.
mapfile -t steps < <(awk '/^Next:$/ { on = 1; next } on && /^$/ { exit }
  on { sub(/^  /, ""); sub(/ +#.*$/, ""); print }' "$logs/init.txt")
printf '[init-smoke] printed steps:\n'; printf '  %s\n' "${steps[@]}"
for needed in "npm install" "npm test" "npm run serve"; do
  printf '%s\n' "${steps[@]}" | grep -qxF "$needed" || { cat "$logs/init.txt"; echo "[init-smoke] no '$needed' step"; exit 1; }
done
[[ "${steps[-1]}" == "npm run serve" ]] || { echo "[init-smoke] the last step is not npm run serve"; exit 1; }

serve() {
  # `exec`: the subshell becomes npm, so the SIGTERM below goes to npm as it would from a terminal.
  (export PORT=0; eval "exec $1") >"$logs/serve.log" 2>&1 &
  server=$!
  local url=""
  for _ in $(seq 1 600); do
    url="$(grep -oE 'listening on http://[^ ]+' "$logs/serve.log" | head -1 | sed 's/listening on //' || true)"
    [[ -n "$url" ]] && break
    kill -0 "$server" 2>/dev/null || { cat "$logs/serve.log"; echo "[init-smoke] serve exited"; exit 1; }
    sleep 0.1
  done
  [[ -n "$url" ]] || { cat "$logs/serve.log"; echo "[init-smoke] serve did not listen within 60 s"; exit 1; }
  grep -qF 'Try: npx plugboard chat "What is a 15% tip on a bill of 80?"' "$logs/serve.log" ||
    { cat "$logs/serve.log"; echo "[init-smoke] serve's hint"; exit 1; }
  node "$root/scripts/init-smoke/turn.mjs" "$url" "$(node_modules/.bin/plugboard token)"
  kill -TERM "$server"
  wait "$server" || true
  server=""
  grep -q "stopped." "$logs/serve.log" || { cat "$logs/serve.log"; echo "[init-smoke] serve did not stop cleanly"; exit 1; }
}

for step in "${steps[@]}"; do
  echo "[init-smoke] \$ $step"
  case "$step" in
    "npm install")
      started=$SECONDS
      if ! eval "$step" >"$logs/npm.log" 2>&1; then cat "$logs/npm.log"; echo "[init-smoke] npm install failed"; exit 1; fi
      grep -E "^added|EBADENGINE|ERR" "$logs/npm.log" || true
      if grep -q EBADENGINE "$logs/npm.log"; then echo "[init-smoke] EBADENGINE warning"; exit 1; fi
      echo "[init-smoke] installed in $((SECONDS - started)) s"
      ;;
    "npm run inspect")
      eval "$step" >"$logs/inspect.txt"
      if ! grep -qE "^  tip +on-demand +data +1 " "$logs/inspect.txt" ||
        ! grep -q "Manifest validation: no errors, 0 warnings" "$logs/inspect.txt"; then
        cat "$logs/inspect.txt"
        echo "[init-smoke] inspect does not report the plugin, valid"
        exit 1
      fi
      ;;
    "npm run serve") serve "$step" ;;
    *) eval "$step" ;;
  esac
done

echo "[init-smoke] npm run typecheck"
npm run typecheck --silent
echo "[init-smoke] the installed package's init --from vendor writes the same project"
node_modules/.bin/plugboard init ../again/app --from vendor >/dev/null
diff -r --exclude=node_modules --exclude=package-lock.json --exclude=.plugboard . ../again/app
echo "[init-smoke] ok"
