#!/usr/bin/env bash
# Builds SEEC (encryptogroup/SEEC, the Rust GMW framework with Bristol input) from
# checkouts kept OUTSIDE this repository, runs its `bristol` example between two
# processes over loopback on aes_128 (one instance) and sha256 (1 024 SIMD
# instances), and writes the JSON that `tacit bench mpc engine --seec FILE` reads.
#
#   bench/seec.sh SEEC REMOC NUM_PRIME [OUT.json]
#
# SEEC, REMOC, NUM_PRIME: work trees or bare git directories of encryptogroup/SEEC,
# robinhundt/remoc (rev c052a35b is taken when REMOC is a git directory) and
# robinhundt/num-prime. Nothing is written into them: the sources are copied to
# $WORK (default /tmp/tacit-seec) and patched there, as the issue describes:
#   * the git dependencies remoc and num-prime become path patches;
#   * the swanky dev-dependencies of zappot (ocelot, scuttlebutt) are removed;
#   * `cargo update -p traitobject -p time` for today's compiler;
#   * `#[cfg(debug_assertions)]` on the two `output_set: Default::default()` lines of
#     crates/seec/src/executor.rs, so that a release build compiles.
# Then `cargo build --release -p seec --example bristol --features bench-api`,
# `bristol compile [--simd N] -o OUT CIRCUIT`, `bristol execute --stats FILE OUT`.
#
# Environment: WORK (build folder), REPEAT (runs per circuit, default 3; the median
# is reported), JOBS (cargo -j, default 2), CARGO_LOCK (a lock file to hold while
# cargo runs; /tmp/tacit-cargo.lock if it exists). The build runs in slices of at
# most 9 minutes (cargo resumes), so a shared lock is never held longer.
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
seec_src=$(realpath "$1"); remoc_src=$(realpath "$2"); prime_src=$(realpath "$3")
out=${4:-seec.json}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/tacit-seec}
repeat=${REPEAT:-3}
jobs=${JOBS:-2}
lock=${CARGO_LOCK:-/tmp/tacit-cargo.lock}
REMOC_REV=c052a35b2e8fe78daeb06f4686b1d3f29dab7005

case "$work" in "$repo"|"$repo"/*) echo "seec.sh: WORK must be outside the repository" >&2; exit 2;; esac

# export_tree GITDIR REV DEST: the files of REV; blobs missing from a partial clone
# (large test circuits) are skipped and counted.
export_tree() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, subprocess, sys
git, rev, dest = sys.argv[1:4]
ls = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "-z", rev], check=True, capture_output=True).stdout
entries = []
for e in ls.split(b"\0"):
    if not e:
        continue
    meta, path = e.split(b"\t", 1)
    mode, kind, sha = meta.split()
    if kind == b"blob":
        entries.append((mode, sha, path.decode()))
cat = subprocess.Popen(["git", "--git-dir", git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
missing = 0
for mode, sha, path in entries:
    cat.stdin.write(sha + b"\n"); cat.stdin.flush()
    head = cat.stdout.readline().split()
    if len(head) < 3 or head[1] == b"missing":
        missing += 1
        continue
    data = cat.stdout.read(int(head[2])); cat.stdout.read(1)
    full = os.path.join(dest, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if mode == b"120000":
        os.symlink(data.decode(), full)
        continue
    with open(full, "wb") as f:
        f.write(data)
    if mode == b"100755":
        os.chmod(full, 0o755)
cat.stdin.close(); cat.wait()
if missing:
    print(f"seec.sh: {missing} blob(s) absent from {git} were skipped", file=sys.stderr)
PY
}

# copy_tree SRC DEST [REV]: a work tree is copied; a git directory is exported at REV.
copy_tree() {
  local src=$1 dest=$2 rev=${3:-HEAD}
  rm -rf "$dest"; mkdir -p "$dest"
  if [ -f "$src/Cargo.toml" ]; then
    (cd "$src" && tar --exclude=./target --exclude=./.git -cf - .) | tar -xf - -C "$dest"
  elif git --git-dir="$src" rev-parse --verify -q "$rev^{commit}" >/dev/null; then
    export_tree "$src" "$rev" "$dest"
  elif [ -d "$src/.git" ] && git --git-dir="$src/.git" rev-parse --verify -q "$rev^{commit}" >/dev/null; then
    export_tree "$src/.git" "$rev" "$dest"
  else
    echo "seec.sh: $src is neither a work tree nor a git directory holding $rev" >&2; exit 2
  fi
}

cargo_locked() {
  if [ -e "$lock" ] && command -v flock >/dev/null; then
    flock -o "$lock" cargo "$@"
  else
    cargo "$@"
  fi
}

mkdir -p "$work"
stamp="$work/.built-$(git --git-dir="$seec_src" rev-parse HEAD 2>/dev/null || echo tree)"
bin="$work/seec/target/release/examples/bristol"
if [ ! -x "$bin" ] || [ ! -e "$stamp" ]; then
  echo "seec.sh: copying sources to $work" >&2
  copy_tree "$seec_src" "$work/seec"
  copy_tree "$remoc_src" "$work/remoc" "$REMOC_REV"
  copy_tree "$prime_src" "$work/num-prime"
  cd "$work/seec"
  cat >>Cargo.toml <<EOF

[patch."https://github.com/robinhundt/remoc"]
remoc = { path = "$work/remoc/remoc" }

[patch."https://github.com/robinhundt/num-prime.git"]
num-prime = { path = "$work/num-prime" }
EOF
  # swanky dev-dependencies of zappot (git, unreachable here; only its benches use them)
  sed -i -e '/^ocelot = /d' -e '/^scuttlebutt = /d' crates/zappot/Cargo.toml
  # release build: the field only exists with debug assertions
  sed -i 's/^\( *\)output_set: Default::default(),/\1#[cfg(debug_assertions)]\n\1output_set: Default::default(),/' \
    crates/seec/src/executor.rs
  [ "$(grep -c 'cfg(debug_assertions)\]' crates/seec/src/executor.rs)" -ge 2 ] || {
    echo "seec.sh: executor.rs did not take the patch" >&2; exit 1; }
  cargo_locked update -p traitobject -p time 2>&1 | tail -3 >&2 || true
  t0=$(date +%s)
  # In slices of at most 9 minutes, so that the shared cargo lock is not held longer;
  # cargo resumes where the previous slice stopped.
  for attempt in $(seq 1 12); do
    if timeout 540 bash -c "$(declare -f cargo_locked); lock='$lock'; cargo_locked build --release -j $jobs -p seec --example bristol --features bench-api" >&2; then
      break
    fi
    [ "$attempt" -lt 12 ] || { echo "seec.sh: build did not finish" >&2; exit 1; }
    echo "seec.sh: build slice $attempt ended; continuing" >&2
  done
  echo "seec.sh: build took $(( $(date +%s) - t0 )) s" >&2
  touch "$stamp"
  cd - >/dev/null
fi

circuits="$repo/crates/mpc/testdata/circuits"
"$bin" compile -o "$work/aes_128.seec" "$circuits/aes_128.txt" >&2
"$bin" compile --simd 1024 -o "$work/sha256_x1024.seec" "$circuits/sha256.txt" >&2

# run NAME: both parties as separate processes over loopback, REPEAT times.
run() {
  local name=$1 i port
  for i in $(seq 1 "$repeat"); do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$bin" execute --id 0 --server "127.0.0.1:$port" --stats "$work/$name.0.$i.json" "$work/$name.seec" >/dev/null 2>"$work/$name.0.log" &
    local p0=$!
    sleep 0.5
    "$bin" execute --id 1 --server "127.0.0.1:$port" --stats "$work/$name.1.$i.json" "$work/$name.seec" >/dev/null 2>"$work/$name.1.log"
    wait $p0
  done
}
run aes_128
run sha256_x1024

python3 - "$work" "$repeat" "$out" <<'EOF'
import json, statistics, sys
work, repeat, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def phases(name):
    online, setup, bytes_setup, bytes_online = [], [], [], []
    for i in range(1, repeat + 1):
        r = json.load(open(f"{work}/{name}.0.{i}.json"))["data"][0]
        t = r["time_ms"]
        online.append(t.get("Online", 0))
        setup.append(sum(v for k, v in t.items() if k != "Online"))
        c = r["communication_bytes"]
        bytes_online.append(c.get("Online", {}).get("sent", 0))
        bytes_setup.append(sum(v["sent"] for k, v in c.items() if k != "Online"))
    return statistics.median(online), statistics.median(setup), bytes_setup[0], bytes_online[0]
res = {"seec_runs": repeat}
for name, key in (("aes_128", "seec_aes128"), ("sha256_x1024", "seec_sha256_x1024")):
    on, se, bs, bo = phases(name)
    res[f"{key}_online_ms"] = on
    res[f"{key}_setup_ms"] = se
    res[f"{key}_setup_bytes_sent"] = bs
    res[f"{key}_online_bytes_sent"] = bo
json.dump(res, open(out, "w"), indent=2)
print(json.dumps(res, indent=2))
EOF
