#!/usr/bin/env bash
# Installs what a fresh machine lacks: npm packages (which also generate both Prisma clients) and,
# for the browser tests, Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
if [ ! -d server/storage/generated/sqlite ] || [ prisma/models.prisma -nt server/storage/generated/sqlite ]; then node scripts/prisma-generate.mjs; fi
if [ -z "${CROWDFLOW_SKIP_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "warning: could not install chromium; browser tests will fail"
  else
    echo "warning: chromium is missing (apt-get install chromium); browser tests will fail"
  fi
fi
