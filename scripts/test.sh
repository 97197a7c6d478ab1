#!/usr/bin/env bash
# The whole test suite on a fresh clone: install, build the app once, then every test on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
node node_modules/next/dist/bin/next build >/tmp/crowdflow-build.log 2>&1 || { cat /tmp/crowdflow-build.log; exit 1; }
exec node node_modules/vitest/vitest.mjs run "$@"
