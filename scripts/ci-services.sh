#!/usr/bin/env bash
# Sourced by .ci/run (under `set -euo pipefail`) before the test command: brings up the services
# the test suites need and exports where they are, and stops them again when the sourcing shell
# exits. Today: a local Synapse homeserver for the Matrix sync suite (packages/adapters/matrix/test),
# and PostgreSQL and Redis for the shared-engine adapters (packages/adapters/postgres/test,
# test/redis). Every suite skips with a reason when its variable is not set.
#
# Locally: `source scripts/ci-services.sh && pnpm test`, or start one service by hand:
#          `scripts/services/postgres.sh start && eval "$(scripts/services/postgres.sh env)"`.

_plugboard_scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_plugboard_synapse="$_plugboard_scripts/synapse/synapse.sh"
# One trap stops all three, whatever the outcome of the tests; set before the first start so a
# service that started is stopped even when a later one fails to.
trap '"$_plugboard_synapse" stop || true; "$_plugboard_scripts/services/postgres.sh" stop || true; "$_plugboard_scripts/services/redis.sh" stop || true' EXIT
"$_plugboard_synapse" start
eval "$("$_plugboard_synapse" env)"
echo "[ci] Synapse at $PLUGBOARD_TEST_SYNAPSE_URL (Matrix suite enabled)"
"$_plugboard_scripts/services/postgres.sh" start
eval "$("$_plugboard_scripts/services/postgres.sh" env)"
"$_plugboard_scripts/services/redis.sh" start
eval "$("$_plugboard_scripts/services/redis.sh" env)"
echo "[ci] PostgreSQL and Redis on 127.0.0.1 (Postgres and Redis suites enabled)"
