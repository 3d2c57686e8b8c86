#!/usr/bin/env bash
# Sourced by .ci/run (under `set -euo pipefail`) before the test command: brings up the services
# the test suites need and exports where they are. Today: a local Synapse homeserver for the
# Matrix sync suite (packages/adapters/test/matrix), stopped again when the sourcing shell exits.
#
# Locally: `source scripts/ci-services.sh && pnpm test`, or
#          `scripts/synapse/synapse.sh start && eval "$(scripts/synapse/synapse.sh env)" && pnpm test`.

_plugboard_synapse="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/synapse/synapse.sh"
"$_plugboard_synapse" start
eval "$("$_plugboard_synapse" env)"
# Stop the homeserver when the CI shell exits, whatever the outcome of the tests.
trap '"$_plugboard_synapse" stop || true' EXIT
echo "[ci] Synapse at $PLUGBOARD_TEST_SYNAPSE_URL (Matrix suite enabled)"
