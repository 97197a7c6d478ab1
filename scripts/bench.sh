#!/usr/bin/env bash
# `npm run bench [-- --quick] [--only=crowd,rows,http,engine] [--providers=sqlite,postgres] [--steps=counts,…] [--profile]`:
# installs what is missing, builds the app when the sources are newer than the last build (the HTTP scenarios run
# a real server, server/main.ts), then runs bench/run.ts. Scratch databases live under bench/tmp and in throwaway
# PostgreSQL schemas; data/crowdflow.db is never touched. Benchmarks report; this script never fails on a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/tmp
CROWDFLOW_SKIP_BROWSER=1 bash scripts/install.sh
# Our own build folder, so a test run building .next at the same time never swaps the server under us
# (CROWDFLOW_BENCH_DIST_DIR names another, for benchmarks run beside each other).
export CROWDFLOW_DIST_DIR="${CROWDFLOW_BENCH_DIST_DIR:-bench/tmp/next}"
built="$CROWDFLOW_DIST_DIR/crowdflow-server/main.mjs"
if [ ! -f "$built" ] || [ -n "$(find app server studio next.config.ts package-lock.json scripts/build-server.mjs -newer "$built" -type f -print -quit 2>/dev/null)" ]; then
  echo "building the app (npm run build)…"
  bash scripts/build.sh
fi
exec node --expose-gc --max-old-space-size=8192 --import tsx bench/run.ts "$@"
