#!/usr/bin/env bash
# Compares tacit's malicious-secure PSI with OpenMined PSI (semi-honest) on the same
# sizes, in one run. Installs `openmined-psi` from PyPI into bench/.venv on first use.
# Not part of the test suite.
#   bench/openmined_psi.sh [M] [N] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
m=${1:-10}; n=${2:-10000}; runs=${3:-5}
if [ ! -x bench/.venv/bin/python ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/pip install --quiet openmined-psi
fi
mkdir -p bench/out
cargo build --release --quiet -p tacit-cli
tacit=${CARGO_TARGET_DIR:-target}/release/tacit
# Round-robin: tacit, OpenMined RAW, OpenMined GCS, repeated; medians per tool.
for i in $(seq 1 "$runs"); do
  "$tacit" bench psi --ids "$m" --contacts "$n" --precompute-runs 1 --runs 11 --json > "bench/out/tacit.$i.json"
  bench/.venv/bin/python bench/openmined_psi.py --ids "$m" --contacts "$n" --runs 1 --structure raw > "bench/out/om_raw.$i.json"
  bench/.venv/bin/python bench/openmined_psi.py --ids "$m" --contacts "$n" --runs 1 --structure gcs > "bench/out/om_gcs.$i.json"
done
python3 - "$runs" <<'PY'
import json, statistics, sys
runs = int(sys.argv[1])
load = lambda name: [json.load(open(f"bench/out/{name}.{i}.json")) for i in range(1, runs + 1)]
med = lambda rows, k: statistics.median(r[k] for r in rows)
t, raw, gcs = load("tacit"), load("om_raw"), load("om_gcs")
tacit_ms = med(t, "whole_run_ms")
rows = [("tacit malicious-secure (precompute + online)", tacit_ms, med(t, "response_bytes")),
        ("OpenMined PSI semi-honest, RAW (setup + query)", med(raw, "total_ms"), med(raw, "setup_bytes") + med(raw, "response_bytes")),
        ("OpenMined PSI semi-honest, GCS (setup + query)", med(gcs, "total_ms"), med(gcs, "setup_bytes") + med(gcs, "response_bytes"))]
print(f"PSI with M = {t[0]['m']}, N = {t[0]['n']}, {t[0]['group']}; medians of {runs} round-robin runs")
for name, ms, b in rows:
    print(f"  {name:<48} {ms:9.1f} ms  {int(b):>8} B sent by the server")
best = min(rows[1][1], rows[2][1])
print(f"  tacit / fastest OpenMined                        {tacit_ms / best:9.3f}x")
json.dump({"tacit_whole_run_ms": tacit_ms, "openmined_raw_total_ms": rows[1][1],
           "openmined_gcs_total_ms": rows[2][1], "tacit_vs_openmined": tacit_ms / best},
          open("bench/out/compare.json", "w"), indent=2)
PY
