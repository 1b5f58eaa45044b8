#!/bin/bash
# Issue 17: scaling over the GPUs of one host (NVLink multicast stays off).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nvidia-smi topo -m 2>&1 | head -5; nproc
L1=$(find /usr/local /opt /usr/lib -name 'libnvrtc.so*' 2>/dev/null | head -1)
L2=$(find /usr/local /opt /usr/lib -name 'libcublasLt.so*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$L1"):$(dirname "$L2"):$LD_LIBRARY_PATH
echo "== equality tests on every GPU"
timeout 200 .dev/gpu-test --test-threads 1 2>&1 | tail -4
echo "== scaling"
timeout 300 .dev/tacit bench pir backends --backend lwe-gpu --gpu-scaling --gpus all --rows 10000000 --bytes 41 --gpu-batch 4096 > $OUT/scaling.json 2>$OUT/scaling.err; echo "rc $?"; tail -3 $OUT/scaling.err
python3 -c "
import json,os; b=json.load(open(os.environ['OUT']+'/scaling.json'))
for s in b['scaling']:
  for x in s['each_gpu']+s['together']: print(json.dumps(x))"
echo "== bench --gpus all"
timeout 200 .dev/tacit bench pir backends --backend lwe-gpu --gpus all --rows 10000000 --bytes 41 --json > $OUT/bench-all.json 2>$OUT/bench-all.err; echo "rc $?"
python3 -c "
import json,os; b=json.load(open(os.environ['OUT']+'/bench-all.json'))
for s in b['shapes']: print({k: v for k, v in s.items() if k!='batches'})"
