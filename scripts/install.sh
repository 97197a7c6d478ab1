#!/usr/bin/env bash
# Installs what a fresh machine lacks: npm packages (which also generate both Prisma clients) and,
# for the browser tests, Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
# By content, not mtime: a fresh clone or worktree has a newer lock file by checkout time alone, and a needless `npm ci`
# there replaced hard-linked node_modules shared with another checkout.
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -d node_modules ] || [ "$(cat node_modules/.crowdflow-lock-sha256 2>/dev/null)" != "$lock_hash" ]; then
  npm ci --no-audit --no-fund
  echo "$lock_hash" >node_modules/.crowdflow-lock-sha256
fi
if [ ! -d server/storage/generated/sqlite ] || [ prisma/models.prisma -nt server/storage/generated/sqlite ]; then node scripts/prisma-generate.mjs; fi
if [ -z "${CROWDFLOW_SKIP_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || echo "warning: could not install chromium; browser tests will fail"
  else
    echo "warning: chromium is missing (apt-get install chromium); browser tests will fail"
  fi
fi
