#!/bin/bash
# One device call: environment, GPU equality tests, the lwe-gpu bench, the PyTorch floor cross-check.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
nproc
L1=$(find /usr/local /opt /usr/lib -name 'libnvrtc.so*' 2>/dev/null | head -1)
L2=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so*' 2>/dev/null | head -1)
echo "nvrtc: $L1"; echo "cublasLt: $L2"
export LD_LIBRARY_PATH=$(dirname "$L1"):$(dirname "$L2"):$LD_LIBRARY_PATH
echo "== equality tests"
timeout 240 .dev/gpu-test --nocapture --test-threads 1 2>&1 | tee $OUT/tests.log | tail -15
echo "== bench ${ROWS:=10000000} ${BYTES:=41,16} gpus ${GPUS:=all}"
timeout 300 .dev/tacit bench pir backends --backend lwe-gpu --rows $ROWS --bytes $BYTES --gpus $GPUS --json > $OUT/bench.json 2> $OUT/bench.err
echo "bench rc $?"; tail -5 $OUT/bench.err
python3 - <<'PY'
import json, os, subprocess
try:
    b = json.load(open(os.environ["OUT"] + "/bench.json"))
except Exception as e:
    print("no bench json", e); raise SystemExit
for s in b["shapes"]:
    keep = {k: v for k, v in s.items() if k not in ("batches", "parts")}
    print(json.dumps(keep))
    for x in s["batches"]:
        print("   ", json.dumps(x))
    cols = (s["matrix_cols"] + 15) // 16 * 16
    r = subprocess.run(["python3", ".dev/gpu_floor.py", "--rows", str(s["matrix_rows"]), "--cols", str(cols), "--batch", str(s["gpu_gemm_floor_batch"])], capture_output=True, text=True, timeout=120)
    print("torch:", r.stdout.strip(), r.stderr.strip()[-300:])
PY
echo "== pir query --backend lwe-gpu"
.dev/tacit pir table gen --rows 1000000 --bytes 41 --out /tmp/t.tbl 2>/dev/null && .dev/tacit pir query --table /tmp/t.tbl --bytes 41 --row 777 --backend lwe-gpu --json && python3 -c "print(open('/tmp/t.tbl','rb').read()[777*41:778*41].hex())"
echo "== two parts on GPU 0 (the multi-GPU path)"
timeout 200 .dev/tacit bench pir backends --backend lwe-gpu --rows 10000000 --bytes 41 --gpus 0,0 --gpu-batch 1,256,2048 --json > $OUT/bench-parts.json 2>$OUT/bench-parts.err; echo "rc $?"; tail -2 $OUT/bench-parts.err
python3 -c "
import json,os; b=json.load(open(os.environ['OUT']+'/bench-parts.json'))
for s in b['shapes']: print({k: s[k] for k in ('gpu_latency_ms','gpu_queries_per_s','gpu_device_queries_per_s','gpu_table_build_s','parts')})"
echo "== the CPU lwe backend on this machine's cores, same shape"
timeout 200 .dev/tacit bench pir backends --rows 10000000 --bytes 41 --peers none --no-ntru --batch 16,64 --runs 3 --json > $OUT/cpu.json 2>$OUT/cpu.err; echo "rc $?"
python3 -c "
import json,os; b=json.load(open(os.environ['OUT']+'/cpu.json'))
print('threads', b['threads'], 'avx512_vnni', b['avx512_vnni'])
for s in b['shapes']: print({k: s[k] for k in ('scan_floor_ms','server_ms_per_query','batch_queries_per_s')}, s['lwe']['setup_s'])"
