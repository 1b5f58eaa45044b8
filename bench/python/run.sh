#!/usr/bin/env bash
# The Python package's speed goals of issue 29, in one run on this machine:
#   1. tacit.psi vs OpenMined PSI (m = 10, n = 10 000, whole run through Python)
#   2. tacit.psi through Python vs the same protocol driven from Rust (`tacit bench psi`)
#   3. tacit.paillier vs phe + gmpy2 (3072-bit keys, 200 values, same keys and values)
# Installs the package (release wheel), phe, gmpy2 and openmined-psi into the
# throw-away venv bench/python/.venv (git-ignored) on first use.
#   bench/python/run.sh [ROUNDS]      (JSON of the run in bench/out/python.json)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
venv=bench/python/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet phe gmpy2 openmined-psi
fi
# Rebuild the wheel every run (cargo makes it incremental; CARGO_TARGET_DIR is reused).
"$venv/bin/pip" install --quiet --force-reinstall --no-deps ./python
cargo build --release --quiet --locked -p tacit-cli
tacit="${CARGO_TARGET_DIR:-target}/release/tacit"
mkdir -p bench/out
"$venv/bin/python" bench/python/bench.py --tacit "$tacit" --rounds "$rounds" --out bench/out/python.json
