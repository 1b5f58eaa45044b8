#!/usr/bin/env bash
# The Python package's speed goals of issue 29, in one run on this machine:
#   1. tacit.psi vs OpenMined PSI (m = 10, n = 10 000, whole run through Python)
#   2. tacit.psi through Python vs the same protocol driven from Rust (`tacit bench psi`)
#   3. tacit.paillier vs phe + gmpy2 (3072-bit keys, 200 values, same keys and values)
# Installs the package (release wheel), phe, gmpy2 and openmined-psi into the
# throw-away venv bench/python/.venv (git-ignored) on first use.
#   bench/python/run.sh [ROUNDS] [OUTDIR]   (default 5 rounds; OUTDIR/python.json and
#                                            OUTDIR/python.txt, default bench/out)
# The builds run under `flock $BUILD_LOCK` when BUILD_LOCK names a lock file (machines
# where builds take turns); NO_BUILD=1 measures the wheel already in the venv and the
# release `tacit` already built. The measurement runs under `chrt -f 50` (real-time FIFO)
# when this user may, so that other processes' builds do not take the cores it
# measures; the output says which scheduler it got and the load average.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
out=${2:-bench/out}
venv=bench/python/.venv
locked() { if [ -n "${BUILD_LOCK:-}" ]; then flock -o "$BUILD_LOCK" "$@"; else "$@"; fi; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet phe gmpy2 openmined-psi
fi
# Rebuild the wheel every run (cargo makes it incremental; CARGO_TARGET_DIR is reused).
if [ -z "${NO_BUILD:-}" ]; then
  locked "$venv/bin/pip" install --quiet --force-reinstall --no-deps ./python
  locked cargo build --release --quiet --locked -p tacit-cli
fi
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
tacit="$target_dir/release/tacit"
rt=()
if chrt -f 50 true 2>/dev/null; then rt=(chrt -f 50); fi
mkdir -p "$out"
"${rt[@]}" "$venv/bin/python" bench/python/bench.py --tacit "$tacit" --rounds "$rounds" --out "$out/python.json" \
  | tee "$out/python.txt"
