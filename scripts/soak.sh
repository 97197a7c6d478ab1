#!/usr/bin/env bash
# The fault-injection suite (test/unit/fault-injection.test.ts) for longer, on SQLite and PostgreSQL, and the crash tests
# (test/unit/engine-crash.test.ts, test/api/ingest-crash.test.ts) with CRASH_KILLS and INGEST_CRASH_KILLS SIGKILLs (20
# each; `npm test` runs 3): rounds of seeds
# CROWDFLOW_SOAK_SEED (random unless given, printed to reproduce a failure), +1, +2… until CROWDFLOW_SOAK_OPERATIONS
# storage operations (20,000 by default) went through the faulty database per provider, each round CROWDFLOW_SOAK_EVENTS
# events (2,000 by default) with CROWDFLOW_SOAK_RATE (0.05) of the operations failing. Extra arguments go to vitest
# (e.g. --project sqlite).
set -euo pipefail
cd "$(dirname "$0")/.."
export CROWDFLOW_SOAK_SEED="${CROWDFLOW_SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}"
export CROWDFLOW_SOAK_OPERATIONS="${CROWDFLOW_SOAK_OPERATIONS:-20000}"
export CROWDFLOW_SOAK_EVENTS="${CROWDFLOW_SOAK_EVENTS:-2000}"
export CROWDFLOW_SOAK_RATE="${CROWDFLOW_SOAK_RATE:-0.05}"
echo "[soak] seed $CROWDFLOW_SOAK_SEED, $CROWDFLOW_SOAK_OPERATIONS operations, $CROWDFLOW_SOAK_EVENTS events a round, rate $CROWDFLOW_SOAK_RATE"
if [ -z "${CROWDFLOW_DIST_DIR:-}" ]; then
  export CROWDFLOW_DIST_DIR=".next-test/soak-$$"
  trap 'rm -rf "$CROWDFLOW_DIST_DIR"' EXIT
fi
bash scripts/build.sh
projects=(--project sqlite --project postgres)
for argument in "$@"; do [[ "$argument" == --project* ]] && projects=(); done
CRASH_KILLS="${CRASH_KILLS:-20}" INGEST_CRASH_KILLS="${INGEST_CRASH_KILLS:-20}" node node_modules/vitest/vitest.mjs run "${projects[@]}" \
  test/unit/fault-injection.test.ts test/unit/engine-crash.test.ts test/api/ingest-crash.test.ts "$@"
