#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, one after another, on seeds
# written by gen_seeds; prints one summary line per target. Needs nightly and
# cargo-fuzz (`cargo install cargo-fuzz`).
#   fuzz/run-all.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}; shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list | grep -v "^gen_seeds$")
cargo +nightly run --release --quiet --bin gen_seeds
mkdir -p logs
for t in "${targets[@]}"; do
  log=logs/$t.log
  if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
  fi
  runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 || true)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "$t: $status, ${runs:-no summary}, ${cov:-?} edges, ${secs}s"
done
