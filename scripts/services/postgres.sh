#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for plugboard's Postgres adapter tests (docs/deployment.md), on 127.0.0.1 only.
#
#   scripts/services/postgres.sh start   # initdb once into .services/postgres, then start it
#   scripts/services/postgres.sh stop | status
#   scripts/services/postgres.sh env     # the `export` line the Postgres tests read
#   scripts/services/postgres.sh reset   # stop and delete the cluster
#
# Settings (env): PLUGBOARD_POSTGRES_PORT (15432), PLUGBOARD_POSTGRES_DIR (.services/postgres, or
# a folder of /tmp when the `postgres` user cannot reach the clone).
# The folder is git-ignored. PostgreSQL refuses to run as root (TOOLCHAIN.md), so when run as
# root the cluster belongs to the `postgres` user of Debian's package. The superuser's password
# is generated once and kept next to the cluster, so restarts keep the same URL.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Under root the cluster belongs to `postgres`, which must be able to reach its folder: a clone
# in a private directory (`mktemp -d` makes them 0700) is out of its reach, so the cluster then
# lives in a folder of /tmp named after the clone's path.
default_base() {
  if [[ "$(id -u)" == 0 ]] && ! runuser -u postgres -- test -x "$ROOT" 2>/dev/null; then
    echo "/tmp/plugboard-postgres-$(printf '%s' "$ROOT" | sha1sum | cut -c1-12)"
  else
    echo "$ROOT/.services/postgres"
  fi
}
BASE="${PLUGBOARD_POSTGRES_DIR:-$(default_base)}"
DATA="$BASE/data"
PORT="${PLUGBOARD_POSTGRES_PORT:-15432}"
BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"

log() { echo "[postgres] $*" >&2; }

[[ -n "$BIN" ]] || { log "PostgreSQL is not installed (apt-get install postgresql)"; exit 1; }

# Runs a server binary as the cluster's owner: `postgres` under root, else the current user.
as_owner() {
  if [[ "$(id -u)" == 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

password() { cat "$BASE/password"; }

cmd_init() {
  [[ -s "$DATA/PG_VERSION" ]] && return 0
  mkdir -p "$BASE"
  [[ "$(id -u)" == 0 ]] && chmod 755 "$BASE"
  if [[ ! -s "$BASE/password" ]]; then
    (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$BASE/password")
  fi
  mkdir -p "$DATA"
  local pwfile="$BASE/pwfile"
  (umask 077 && password >"$pwfile")
  if [[ "$(id -u)" == 0 ]]; then chown postgres "$DATA" "$pwfile"; fi
  as_owner "$BIN/initdb" -D "$DATA" -U postgres --pwfile="$pwfile" --auth=scram-sha-256 \
    -E UTF8 --no-locale >/dev/null
  rm -f "$pwfile"
  # TCP on loopback only, no Unix socket (its default directory belongs to the system cluster);
  # room for test files that run in parallel, each with a pool.
  cat >>"$DATA/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = ''
max_connections = 300
fsync = off
CONF
  log "initialised $DATA"
}

cmd_start() {
  cmd_init
  if as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    log "already running on 127.0.0.1:$PORT"
    return 0
  fi
  as_owner "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 start >/dev/null ||
    { log "did not start; last log lines:"; tail -n 20 "$DATA/server.log" >&2; return 1; }
  log "up on 127.0.0.1:$PORT"
}

cmd_stop() {
  if [[ -s "$DATA/PG_VERSION" ]] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    log "stopped"
  else
    log "not running"
  fi
}

cmd_env() {
  [[ -s "$BASE/password" ]] || { log "not configured yet: run start"; return 1; }
  echo "export PLUGBOARD_TEST_POSTGRES_URL=postgres://postgres:$(password)@127.0.0.1:$PORT/postgres"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) as_owner "$BIN/pg_ctl" -D "$DATA" status ;;
  env) cmd_env ;;
  reset) cmd_stop && rm -rf "$BASE" && log "removed $BASE" ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
