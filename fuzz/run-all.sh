#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, on seeds written by
# gen_seeds; prints one summary line per target. Needs nightly and cargo-fuzz
# (`cargo install cargo-fuzz`).
#   fuzz/run-all.sh [SECONDS] [TARGET...]
#   FUZZ_LANES=2 fuzz/run-all.sh 600     # two targets at a time
# Builds all targets once (`cargo +nightly fuzz build`, honouring CARGO_TARGET_DIR),
# then runs the built binaries directly, FUZZ_LANES at a time (default 1), each
# under `nice` so that other work on the machine keeps priority.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}; shift || true
targets=("$@")
lanes=${FUZZ_LANES:-1}
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list | grep -v "^gen_seeds$")
cargo +nightly fuzz build >/dev/null
bin="${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-gnu/release"
# The bundled SQLite is linked twice under ASan (rusqlite in two crates' graphs).
export ASAN_OPTIONS=detect_odr_violation=0
"$bin/gen_seeds" >/dev/null
mkdir -p logs artifacts
run_one() {
  local t=$1 log=logs/$1.log status runs cov
  mkdir -p "corpus/$t" "artifacts/$t"
  if nice -n 19 "$bin/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" \
      -max_total_time="$secs" -rss_limit_mb=2048 >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
  fi
  runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 || true)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "$t: $status, ${runs:-no summary}, ${cov:-?} edges, ${secs}s"
}
export -f run_one
export secs bin
printf '%s\n' "${targets[@]}" | xargs -P "$lanes" -I{} bash -c 'run_one "$1"' _ {}
