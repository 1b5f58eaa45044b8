#!/bin/bash
# Issue 30: one device call that measures today's main (tacit-base) and this branch
# (tacit) in the same lease on the same card, then prints a short table.
#   .dev/tacit-base.xz, .dev/tacit.xz, .dev/gpu-test.xz: stripped x86-64 builds (xz)
#   $OUT: full JSON and logs
# Environment: ROWS (10000000), STEPS (tests,backends,auth: which parts to run).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
R=${ROWS:-10000000}
STEPS=${STEPS:-tests,backends,auth}
B=/tmp/bin; mkdir -p $B
for f in .dev/*.xz; do n=$(basename $f .xz); xz -dc -T0 $f > $B/$n && chmod +x $B/$n; done
ls -la $B
{ nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv; nproc; lscpu | grep -E 'Model name|^CPU\(s\)'; } | tee $OUT/machine.txt
if [[ $STEPS == *tests* ]] && [ -x $B/gpu-test ]; then
  echo "== GPU tests"
  timeout 240 $B/gpu-test --test-threads 1 --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"
  grep -E '^test |test result|panicked' $OUT/tests.log | tail -15
fi
for bin in ${BINS:-tacit tacit-base}; do
  [ -x $B/$bin ] || continue
  if [[ $STEPS == *backends* ]]; then
    echo "== $bin bench pir backends"
    echo "== $bin backends" >> $OUT/stderr.log
    timeout 200 $B/$bin bench pir backends --backend lwe-gpu --gpus 0 --rows $R --bytes 41 --json > $OUT/$bin-backends.json 2>> $OUT/stderr.log
    echo "rc $?"; tail -2 $OUT/stderr.log
  fi
  if [[ $STEPS == *auth* ]]; then
    echo "== $bin bench pir auth"
    echo "== $bin auth" >> $OUT/stderr.log
    timeout 300 $B/$bin bench pir auth --rows $R --backend lwe-gpu --gpus 0 --batch 1,2048 --json > $OUT/$bin-auth.json 2> >(grep -v 'table rows' >> $OUT/stderr.log)
    echo "rc $?"; tail -2 $OUT/stderr.log
  fi
done
python3 .dev/summary.py $OUT
