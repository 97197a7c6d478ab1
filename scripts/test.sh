#!/usr/bin/env bash
# The whole test suite on a fresh clone: install, build the app once, then every test on SQLite and PostgreSQL.
# Each run builds into its own folder, so runs in parallel never swap the server files under each other.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
if [ -z "${CROWDFLOW_DIST_DIR:-}" ]; then
  export CROWDFLOW_DIST_DIR=".next-test/run-$$"
  trap 'rm -rf "$CROWDFLOW_DIST_DIR"' EXIT
fi
build_log="$(mktemp)"
node node_modules/next/dist/bin/next build >"$build_log" 2>&1 || { cat "$build_log"; exit 1; }
# next build lists its dist folder's types in tsconfig.json; a per-run folder must not stay there.
node -e "
const fs = require('fs');
const text = fs.readFileSync('tsconfig.json', 'utf8');
const config = JSON.parse(text);
const include = config.include.filter((p) => !p.startsWith('.next-test/'));
if (include.length !== config.include.length) fs.writeFileSync('tsconfig.json', JSON.stringify({ ...config, include }, null, 2) + '\n');
"
node node_modules/vitest/vitest.mjs run "$@"
