#!/usr/bin/env bash
# `npm run build`: Next's build of the studio and the API routes into ${CROWDFLOW_DIST_DIR:-.next}, then the compiled
# server entry beside it (scripts/build-server.mjs), which `npm start`, the demo, the tests and the benchmarks run.
# Quiet unless it fails (then Next's whole log).
set -euo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
node node_modules/next/dist/bin/next build >"$log" 2>&1 || { cat "$log"; exit 1; }
node scripts/tsconfig-clean.mjs
node scripts/build-server.mjs
