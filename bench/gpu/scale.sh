#!/bin/bash
# Issue 31: the scaling run on a multi-GPU host, one lease. Writes everything under $OUT
# as it goes (a timeout still returns what was done).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
B=/tmp/bin; mkdir -p $B
xz -dc -T0 .dev/tacit.xz > $B/tacit && chmod +x $B/tacit
{ nvidia-smi --query-gpu=index,name,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv; nvidia-smi topo -m; nproc; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt | head -8
R=10000000
echo "== backends --gpu-scaling"; date
timeout 130 $B/tacit bench pir backends --backend lwe-gpu --gpu-scaling --gpus all --rows $R --bytes 41 --json > $OUT/backends-scaling.json 2> $OUT/backends-scaling.err; echo "rc $?"; tail -3 $OUT/backends-scaling.err
for g in 0,1 0; do
  echo "== auth --gpus $g"; date
  timeout 80 $B/tacit bench pir auth --rows $R --backend lwe-gpu --gpus $g --batch 2048 --json > $OUT/auth-$g.json 2> >(grep -v 'table rows' > $OUT/auth-$g.err); echo "rc $?"; tail -2 $OUT/auth-$g.err
done
date
