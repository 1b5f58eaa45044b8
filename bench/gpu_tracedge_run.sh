#!/bin/bash
# Issues 16/17: TracEdge on the GPUs — equality tests, bench pir auth on 1 and all GPUs, and a real server with real clients over TLS on loopback.
set -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=index,name --format=csv,noheader; nproc
L1=$(find /usr/local -name 'libnvrtc.so*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$L1"):$LD_LIBRARY_PATH
timeout 120 .dev/gpu-test --test-threads 1 2>&1 | grep 'test result'
R=${ROWS:-10000000}
for G in 0 all; do
  echo "== bench pir auth --backend lwe-gpu --gpus $G"
  timeout 200 .dev/tacit bench pir auth --rows $R --backend lwe-gpu --gpus $G --batch 1,64,512,1024,2048,4096 --samples 5 --json > $OUT/auth-$G.json 2>$OUT/auth-$G.err; echo "rc $?"; tail -2 $OUT/auth-$G.err
  python3 -c "
import json,os,sys; b=json.load(open(os.environ['OUT']+'/auth-$G.json'))
print({k: b.get(k) for k in ('backend','gpus','rows','threads','table_create_s','auth_per_s','auth_latency_ms')})
print(json.dumps(b.get('load')), json.dumps(b.get('table5'))[:600], json.dumps(b.get('latency'))[:600])"
done
echo "== a real server on the GPUs and real clients over TLS"
S=/tmp/op.sqlite3; rm -f $S
out=$(.dev/tacit pir server init --store $S --rows $R 2>&1); echo "$out" | head -5
pin=$(echo "$out" | awk '$1=="pin"{print $2}'); key=$(echo "$out" | awk '$1=="server-key"{print $2}')
.dev/tacit pir server serve --store $S --listen 127.0.0.1:7690 --open-enrollment --backend lwe-gpu --gpus all > $OUT/serve.out 2> $OUT/serve.err &
SPID=$!
for i in $(seq 1 240); do (echo > /dev/tcp/127.0.0.1/7690) 2>/dev/null && break; sleep 0.5; done
grep -v 'table rows' $OUT/serve.err | tail -3
for i in 1 2 3 4; do .dev/tacit pir client enroll --connect 127.0.0.1:7690 --pin $pin --server-key $key --out /tmp/c$i.json 2>&1 | tail -1; done
sleep 2
for i in 1 2 3 4; do /usr/bin/time -f "auth $i wall %e s" .dev/tacit pir client auth --id /tmp/c$i.json --json 2>&1 | tail -2; done
P=""; for i in 1 2 3 4; do .dev/tacit pir client auth --id /tmp/c$i.json --json > $OUT/par$i.json 2>&1 & P="$P $!"; done; wait $P
cat $OUT/par*.json | cut -c1-300
kill $SPID; grep -v 'table rows' $OUT/serve.err | tail -5
