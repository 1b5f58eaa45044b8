#!/bin/bash
# Issue 31, second pass: one lease on a multi-GPU host measures this branch (tacit)
# and main before it (tacit-base) one after the other on the same machine.
#   .dev/tacit.xz, .dev/tacit-base.xz, .dev/gpu-test.xz: stripped x86-64 builds (xz)
#   STEPS: tests, scaling, auth (which parts; default all). GPUS: the auth GPU lists.
# Writes everything under $OUT as it goes (a timeout still returns what was done).
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:$LD_LIBRARY_PATH
R=${ROWS:-10000000}
STEPS=${STEPS:-tests,scaling,auth}
B=/tmp/bin; mkdir -p $B
for f in .dev/*.xz; do n=$(basename $f .xz); [ -x $B/$n ] || { xz -dc -T0 $f > $B/$n && chmod +x $B/$n; }; done
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv; nvidia-smi topo -m; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA'; } > $OUT/machine.txt 2>&1
head -4 $OUT/machine.txt
if [[ $STEPS == *tests* ]] && [ -x $B/gpu-test ]; then
  echo "== GPU tests"; date
  timeout 200 $B/gpu-test --test-threads 1 > $OUT/tests.log 2>&1; echo "tests rc $?"
  grep -E 'test result|panicked|FAILED' $OUT/tests.log | tail -6
fi
for bin in ${BINS:-tacit tacit-base}; do
  [ -x $B/$bin ] || continue
  if [[ $STEPS == *scaling* ]]; then
    echo "== $bin scaling"; date
    timeout 170 $B/$bin bench pir backends --backend lwe-gpu --gpu-scaling --gpus all --rows $R --bytes 41 --json > $OUT/$bin-scaling.json 2> $OUT/$bin-scaling.err; echo "rc $?"
    python3 -c "
import json,sys
d=json.load(open('$OUT/$bin-scaling.json'))['scaling'][0]
print('host copy %.1f GB/s, host bound %.0f q/s, threads %s'%(d.get('host_copy_gb_per_s',0),d.get('host_bound_queries_per_s',0),d.get('host_threads')))
for v in d['each_gpu']+d['together']:
  print(v['gpus'], 'e2e %.0f'%v['queries_per_s'], 'wire %.0f'%v.get('wire_queries_per_s',0), 'dev %.0f'%v['device_queries_per_s'], {k:round(x,3) for k,x in v.items() if k.endswith('vs_one_gpu')})
" 2>&1 | tail -12
  fi
  if [[ $STEPS == *auth* ]]; then
    for g in ${GPUS:-0 0,1}; do
      echo "== $bin auth --gpus $g"; date
      timeout 100 $B/$bin bench pir auth --rows $R --backend lwe-gpu --gpus $g --batch 2048 --json > $OUT/$bin-auth-${g//,/_}.json 2> >(grep -v 'table rows' > $OUT/$bin-auth-${g//,/_}.err); echo "rc $?"
      python3 -c "
import json
d=json.load(open('$OUT/$bin-auth-${g//,/_}.json'))
def walk(x,p=''):
  if isinstance(x,dict):
    for k,v in x.items(): walk(v,p+'.'+k)
  elif isinstance(x,list):
    for i,v in enumerate(x): walk(v,p+'[%d]'%i)
  elif any(s in p for s in ['auth_per_s','host_bound','per_session']): print(p, round(x,2) if isinstance(x,float) else x)
walk(d)" 2>&1 | head -12
    done
  fi
done
date
