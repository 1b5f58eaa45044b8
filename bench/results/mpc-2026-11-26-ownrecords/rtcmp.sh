# usage: rtcmp.sh TAG ROUNDS BIN...  — each bench run at SCHED_FIFO priority 50, so the
# 2 cores' other work (builds at normal priority) waits while it runs
tag=$1; n=$2; shift 2
for i in $(seq 1 $n); do
  for b in "$@"; do
    name=$(basename $b)
    u0=$(cut -d' ' -f1 /proc/loadavg)
    chrt -f 50 $b bench mpc engine --runs 9 --json > $tag-$name-$i.json 2>/dev/null
    python3 -c "
import json; j=json.load(open('$tag-$name-$i.json'))
print('%-16s %d load %s aes %.3f/%.3f=%.3f sha %.2f/%.2f=%.3f' % ('$name', $i, '$u0', j['aes128_online_ms'], j['aes128_online_plain_ms'], j['aes128_online_tls_vs_plain'], j['sha256_x1024_online_ms'], j['sha256_x1024_online_plain_ms'], j['sha256_x1024_online_tls_vs_plain']))"
  done
done
