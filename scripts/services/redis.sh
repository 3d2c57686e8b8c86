#!/usr/bin/env bash
# A throwaway Redis server for plugboard's Redis adapter tests (docs/deployment.md), on 127.0.0.1 only.
#
#   scripts/services/redis.sh start   # start it, data and pid in .services/redis
#   scripts/services/redis.sh stop | status
#   scripts/services/redis.sh env     # the `export` line the Redis tests read
#   scripts/services/redis.sh reset   # stop and delete the folder
#
# Settings (env): PLUGBOARD_REDIS_PORT (16379), PLUGBOARD_REDIS_DIR (.services/redis).
# The folder is git-ignored. Nothing is persisted (tests want a throwaway server); a password,
# generated once and kept in the folder, keeps other local clients out.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${PLUGBOARD_REDIS_DIR:-$ROOT/.services/redis}"
PORT="${PLUGBOARD_REDIS_PORT:-16379}"
PID_FILE="$DIR/redis.pid"

log() { echo "[redis] $*" >&2; }

command -v redis-server >/dev/null || { log "Redis is not installed (apt-get install redis-server)"; exit 1; }

password() { cat "$DIR/password"; }

running_pid() {
  [[ -s "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null && cat "$PID_FILE"
}

cmd_start() {
  mkdir -p "$DIR"
  if [[ ! -s "$DIR/password" ]]; then
    (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$DIR/password")
  fi
  if running_pid >/dev/null; then
    log "already running on 127.0.0.1:$PORT"
    return 0
  fi
  # The password goes through a config file read on stdin, never on the command line (ps).
  printf 'bind 127.0.0.1\nport %s\nprotected-mode yes\ndaemonize yes\npidfile %s\ndir %s\nlogfile %s\nsave ""\nappendonly no\nrequirepass %s\n' \
    "$PORT" "$PID_FILE" "$DIR" "$DIR/redis.log" "$(password)" | redis-server - >/dev/null
  for _ in $(seq 1 100); do
    if REDISCLI_AUTH="$(password)" redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; then
      log "up on 127.0.0.1:$PORT"
      return 0
    fi
    sleep 0.1
  done
  log "did not come up; last log lines:"
  tail -n 20 "$DIR/redis.log" >&2 || true
  return 1
}

cmd_stop() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID_FILE"; log "stopped"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
}

cmd_env() {
  [[ -s "$DIR/password" ]] || { log "not configured yet: run start"; return 1; }
  echo "export PLUGBOARD_TEST_REDIS_URL=redis://:$(password)@127.0.0.1:$PORT"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) running_pid >/dev/null && echo "running on 127.0.0.1:$PORT" || { echo "not running"; exit 1; } ;;
  env) cmd_env ;;
  reset) cmd_stop && rm -rf "$DIR" && log "removed $DIR" ;;
  *)
    sed -n '2,11p' "$0" >&2
    exit 2
    ;;
esac
