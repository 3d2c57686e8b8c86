#!/usr/bin/env bash
# A throwaway Synapse homeserver for plugboard's Matrix tests and benchmarks.
#
#   scripts/synapse/synapse.sh install   # venv under .venv/synapse (reused when already there)
#   scripts/synapse/synapse.sh start     # install if needed, render config, start on 127.0.0.1
#   scripts/synapse/synapse.sh stop      # stop it (pid file .synapse/homeserver.pid)
#   scripts/synapse/synapse.sh restart | status
#   scripts/synapse/synapse.sh env       # print the `export` lines the Matrix tests read
#   scripts/synapse/synapse.sh reset     # stop and delete the data dir (accounts, rooms, media)
#
# Settings (env): PLUGBOARD_SYNAPSE_PORT (18008), PLUGBOARD_SYNAPSE_DIR (.synapse),
# PLUGBOARD_SYNAPSE_VENV (.venv/synapse), PLUGBOARD_SYNAPSE_VERSION (pinned below).
# Both folders are git-ignored. Secrets are generated once and kept in the data dir.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/scripts/synapse"
VENV="${PLUGBOARD_SYNAPSE_VENV:-$ROOT/.venv/synapse}"
DATA_DIR="${PLUGBOARD_SYNAPSE_DIR:-$ROOT/.synapse}"
PORT="${PLUGBOARD_SYNAPSE_PORT:-18008}"
VERSION="${PLUGBOARD_SYNAPSE_VERSION:-1.163.2}"
SERVER_NAME="localhost"
PY="$VENV/bin/python"
PID_FILE="$DATA_DIR/homeserver.pid"
URL="http://127.0.0.1:$PORT"

log() { echo "[synapse] $*" >&2; }

installed_version() {
  [[ -x "$PY" ]] && "$PY" -c 'import importlib.metadata as m; print(m.version("matrix-synapse"))' 2>/dev/null || true
}

cmd_install() {
  if [[ "$(installed_version)" == "$VERSION" ]]; then
    log "matrix-synapse $VERSION already in $VENV"
    return 0
  fi
  local started=$SECONDS
  log "installing matrix-synapse $VERSION into $VENV"
  if [[ ! -x "$PY" ]]; then
    python3 -m venv "$VENV"
  fi
  "$PY" -m pip install --quiet --disable-pip-version-check "matrix-synapse==$VERSION"
  log "installed in $((SECONDS - started)) s"
}

# One random secret per file, created once so that restarts keep accounts and tokens valid.
secret() {
  local file="$DATA_DIR/$1"
  if [[ ! -s "$file" ]]; then
    "$PY" -c 'import secrets; print(secrets.token_hex(32))' >"$file"
    chmod 600 "$file"
  fi
  cat "$file"
}

render_config() {
  mkdir -p "$DATA_DIR/media_store"
  REGISTRATION_SHARED_SECRET="$(secret registration_shared_secret)" \
  MACAROON_SECRET_KEY="$(secret macaroon_secret_key)" \
  FORM_SECRET="$(secret form_secret)" \
  SERVER_NAME="$SERVER_NAME" PORT="$PORT" DATA_DIR="$DATA_DIR" \
    "$PY" - "$HERE/homeserver.yaml.tmpl" "$DATA_DIR/homeserver.yaml" <<'EOF'
import os, string, sys
src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    text = string.Template(f.read()).substitute(os.environ)
with open(dst + ".tmp", "w") as f:
    f.write(text)
os.replace(dst + ".tmp", dst)
EOF
  cat >"$DATA_DIR/log.config" <<EOF
version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(request)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: $DATA_DIR/homeserver.log
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
EOF
  if [[ ! -s "$DATA_DIR/signing.key" ]]; then
    "$PY" -m synapse.app.homeserver -c "$DATA_DIR/homeserver.yaml" --generate-keys >/dev/null
  fi
}

running_pid() {
  if [[ -s "$PID_FILE" ]]; then
    local pid
    pid="$(cat "$PID_FILE")"
    if kill -0 "$pid" 2>/dev/null; then
      echo "$pid"
      return 0
    fi
  fi
  return 1
}

healthy() {
  "$PY" - "$URL/health" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

cmd_start() {
  cmd_install
  if running_pid >/dev/null && healthy; then
    log "already running at $URL (pid $(running_pid))"
    return 0
  fi
  if healthy; then
    # Another homeserver (another checkout's, say) holds the port: its secrets are not ours, and
    # every test would fail registering with "HMAC incorrect".
    log "another server already answers at $URL (not the Synapse of $DATA_DIR); stop it or set PLUGBOARD_SYNAPSE_PORT"
    return 1
  fi
  local started=$SECONDS
  render_config
  rm -f "$PID_FILE"
  "$PY" -m synapse.app.homeserver -c "$DATA_DIR/homeserver.yaml" --daemonize >/dev/null
  for _ in $(seq 1 240); do
    if running_pid >/dev/null && healthy; then
      log "up at $URL (pid $(cat "$PID_FILE")) in $((SECONDS - started)) s"
      return 0
    fi
    sleep 0.25
  done
  log "did not come up within 60 s; last log lines:"
  tail -n 30 "$DATA_DIR/homeserver.log" >&2 || true
  return 1
}

cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running"
    rm -f "$PID_FILE"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      log "stopped (pid $pid)"
      return 0
    fi
    sleep 0.2
  done
  log "pid $pid ignored SIGTERM for 20 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
}

cmd_status() {
  if running_pid >/dev/null && healthy; then
    echo "running at $URL (pid $(running_pid))"
  else
    echo "not running"
    return 1
  fi
}

cmd_env() {
  [[ -s "$DATA_DIR/registration_shared_secret" ]] || { log "not configured yet: run start"; return 1; }
  echo "export PLUGBOARD_TEST_SYNAPSE_URL=$URL"
  echo "export PLUGBOARD_TEST_SYNAPSE_SECRET=$(cat "$DATA_DIR/registration_shared_secret")"
  echo "export PLUGBOARD_TEST_SYNAPSE_SERVER_NAME=$SERVER_NAME"
  echo "export PLUGBOARD_TEST_SYNAPSE_CONTROL=$HERE/synapse.sh"
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop && cmd_start ;;
  status) cmd_status ;;
  env) cmd_env ;;
  reset) cmd_stop && rm -rf "$DATA_DIR" && log "removed $DATA_DIR" ;;
  *)
    sed -n '2,13p' "$0" >&2
    exit 2
    ;;
esac
