#!/usr/bin/env bash
# One command on a fresh clone: install, build, migrate, start the studio with its embedded engine on the SQLite
# default, seed the demo tenant/crowd/workflow (started), trickle a few events a second into it, and keep serving on
# http://localhost:${PORT:-3000}.
set -euo pipefail
cd "$(dirname "$0")/.."
CROWDFLOW_SKIP_BROWSER=1 bash scripts/install.sh
if ! grep -qs '^CROWDFLOW_ADMIN_TOKEN=' .env; then
  echo "CROWDFLOW_ADMIN_TOKEN=$(node -e "console.log(require('crypto').randomBytes(24).toString('base64url'))")" >> .env
  echo "Created an admin token in $(pwd)/.env"
fi
set -a; . ./.env; set +a
PORT="${PORT:-3000}"
echo "Building the studio and the server…"
bash scripts/build.sh
npx tsx scripts/migrate.ts
# the request thread's semi-spaces as npm start sets them (docs/ARCHITECTURE.md "Garbage collection")
node --max-semi-space-size=32 "${CROWDFLOW_DIST_DIR:-.next}/crowdflow-server/main.mjs" -p "$PORT" &
server=$!
trickle=
trap 'kill $server $trickle 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 1 120); do
  curl -s -o /dev/null "http://localhost:$PORT/api/v1/openapi.json" && break
  sleep 0.5
done
npx tsx scripts/seed.ts "http://localhost:$PORT"
# a few events a second into the running demo journey, so its counts move (CROWDFLOW_TRICKLE=0: none)
if [ "${CROWDFLOW_TRICKLE:-1}" != 0 ]; then
  node --import tsx scripts/trickle.ts "http://localhost:$PORT" &
  trickle=$!
fi
echo
echo "Crowdflow is running on http://localhost:$PORT"
echo "Sign in with the admin token from $(pwd)/.env (CROWDFLOW_ADMIN_TOKEN=$CROWDFLOW_ADMIN_TOKEN)"
wait $server
