#!/bin/bash
# Where does `bench pir auth` (new binary) spend its time / hang? Two snapshots of
# its threads (state, wchan, syscall) and a cuda-gdb backtrace of every thread.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
B=/tmp/bin; mkdir -p $B
xz -dc -T0 .dev/tacit.xz > $B/tacit && chmod +x $B/tacit
R=${ROWS:-10000000}
$B/tacit bench pir auth --rows $R --backend lwe-gpu --gpus 0 --batch ${BATCH:-1,2048} > $OUT/diag-auth.out 2> $OUT/diag-auth.err &
pid=$!
snap() {
  echo "=== t=$1 s"; ps -L -o tid,stat,pcpu,wchan:32,comm -p $pid
  for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/syscall 2>/dev/null | cut -c1-60)"; done
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  tr '\r' '\n' < $OUT/diag-auth.err | tail -4
}
for t in 20 40 ${T1:-70}; do sleep $((t - ${last:-0})); last=$t; kill -0 $pid 2>/dev/null || break; snap $t; done >> $OUT/diag-threads.txt 2>&1
if kill -0 $pid 2>/dev/null; then
  G=$(command -v cuda-gdb || ls /usr/local/cuda*/bin/cuda-gdb | head -1)
  timeout 60 $G -p $pid -batch -ex "info proc mappings" -ex "thread apply all bt 25" > $OUT/diag-gdb.txt 2>&1
  snap end >> $OUT/diag-threads.txt 2>&1
  kill $pid
fi
wait $pid; echo "bench rc $?"
cat $OUT/diag-threads.txt | cut -c1-150 | tail -80
tr '\r' '\n' < $OUT/diag-auth.err | tail -8; tail -c 1500 $OUT/diag-auth.out
grep -c "^Thread\|^#" $OUT/diag-gdb.txt
