#!/usr/bin/env bash
# The whole test suite on a fresh clone: install, lint, build the app once, then every test on SQLite and PostgreSQL.
# Each run builds into its own folder, so runs in parallel never swap the server files under each other.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
node_modules/.bin/biome check --error-on-warnings . # lint rules and formatting of biome.jsonc (npm run lint; npm run format fixes the formatting)
if [ -z "${CROWDFLOW_DIST_DIR:-}" ]; then
  export CROWDFLOW_DIST_DIR=".next-test/run-$$"
  trap 'rm -rf "$CROWDFLOW_DIST_DIR"' EXIT
fi
bash scripts/build.sh
node node_modules/vitest/vitest.mjs run "$@"
