#!/usr/bin/env bash
# `bash scripts/ci-repeat.sh [N]` (default 10): runs CI N times in a row, each in a fresh clone of this checkout's
# HEAD with CI=true and no standard input, as CI does, and prints each run's result and duration as it ends, then a
# summary. A flaky test shows as a red run among green ones of the same commit. Logs stay in the printed folder.
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
commit="$(git rev-parse HEAD)"
logs="$(mktemp -d -t crowdflow-ci-repeat-XXXXXX)"
echo "CI ${runs} times on ${commit:0:12}; logs in ${logs}"
passed=0
for i in $(seq 1 "$runs"); do
  clone="$(mktemp -d -t crowdflow-ci-clone-XXXXXX)"
  git clone -q . "$clone" && git -C "$clone" checkout -q "$commit"
  started=$(date +%s)
  (cd "$clone" && CI=true bash .ci/run < /dev/null > "$logs/run-$i.log" 2>&1)
  status=$?
  seconds=$(($(date +%s) - started))
  summary="$(sed 's/\x1b\[[0-9;]*m//g' "$logs/run-$i.log" | grep -E "^ +(Test Files|Tests) " | tr -s ' ' | tr '\n' ';')"
  if [ "$status" -eq 0 ]; then passed=$((passed + 1)); verdict=green; else verdict="RED (exit $status)"; fi
  printf 'run %2d/%d  %s  %4d s  %s  %s\n' "$i" "$runs" "$(date -u +%H:%M)" "$seconds" "$verdict" "$summary"
  rm -rf "$clone"
done
echo "${passed} of ${runs} runs green on ${commit:0:12}"
[ "$passed" -eq "$runs" ]
