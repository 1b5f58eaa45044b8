#!/usr/bin/env bash
# Builds the random-OT rate that `tacit bench mpc engine --rot-floor-bin BIN` takes as
# the floor of its OT-extension triples: cryprot-ot's semi-honest IKNP extension
# (crates.io cryprot-ot 0.3.2), timed as its own criterion bench "single 2**p
# extension OTs" times it (base OTs outside the clock, send_into/receive_into over
# its in-process connection pair), on a tokio runtime of THREADS workers. The binary
# prints {"rot_per_s": median of RUNS, ...}.
#
#   bench/cryprot-rot.sh             # builds in $WORK; prints the binary's path
#   BIN [THREADS [LOG2_OTS [RUNS]]]  # defaults 2 22 5 (the bench runs `BIN 2 22`)
#
# The crate is made in $WORK (default /tmp/tacit-cryprot), outside this repository.
# cryprot-codes pins aes = "=0.9.0", a yanked version that a fresh resolution refuses;
# the lock file is made first with aes alone, aes is moved to 0.9.0 with
# `cargo update --precise` (which may pick a yanked version), and cryprot resolves
# against that. The build takes several minutes on two cores (s2n-quic, aws-lc).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/tacit-cryprot}
jobs=${JOBS:-2}
case "$work" in "$repo"|"$repo"/*) echo "cryprot-rot.sh: WORK must be outside the repository" >&2; exit 2;; esac

mkdir -p "$work/src"
cd "$work"
manifest() {
  cat > Cargo.toml <<TOML
[package]
name = "tacit-rot-rate"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
aes = "0.9.0-rc.0"
$1
[profile.release]
debug = false
TOML
}
echo 'fn main() {}' > src/main.rs
manifest ""
rm -f Cargo.lock
cargo generate-lockfile >&2
cargo update -p aes --precise 0.9.0 >&2 2>&1 | grep -v '^ *$' >&2 || true
manifest 'cryprot-ot = "=0.3.2"
cryprot-core = "0.3"
cryprot-net = { version = "0.2", features = ["__testing"] }
tokio = { version = "1", features = ["rt-multi-thread", "macros"] }
rand = "0.10"
'
cat > src/main.rs <<'RS'
//! Random OTs per second of semi-honest IKNP, as cryprot-ot's own bench measures
//! them; written by tacit's bench/cryprot-rot.sh.
use std::time::Instant;

use cryprot_core::alloc::HugePageMemory;
use cryprot_net::testing::local_conn;
use cryprot_ot::{
    RotReceiver, RotSender,
    extension::{SemiHonestOtExtensionReceiver, SemiHonestOtExtensionSender},
    random_choices,
};
use rand::{SeedableRng, rngs::StdRng};

fn main() {
    let arg = |i: usize, d: usize| std::env::args().nth(i).map_or(d, |s| s.parse().expect("a number"));
    let (threads, p, runs) = (arg(1, 2), arg(2, 22), arg(3, 5));
    let count = 1usize << p;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap();
    let mut rates = rt.block_on(async move {
        let (mut c1, mut c2) = local_conn().await.unwrap();
        let mut sender_ots = HugePageMemory::zeroed(count);
        let mut receiver_ots = HugePageMemory::zeroed(count);
        let mut rates = Vec::new();
        for _ in 0..runs {
            let mut rng1 = StdRng::seed_from_u64(42);
            let rng2 = StdRng::seed_from_u64(42 * 42);
            let choices = random_choices(count, &mut rng1);
            let mut sender = SemiHonestOtExtensionSender::new_with_rng(c1.sub_connection(), rng1);
            let mut receiver = SemiHonestOtExtensionReceiver::new_with_rng(c2.sub_connection(), rng2);
            tokio::try_join!(sender.do_base_ots(), receiver.do_base_ots()).unwrap();
            let now = Instant::now();
            (sender_ots, receiver_ots) = tokio::try_join!(
                tokio::spawn(async move {
                    sender.send_into(&mut sender_ots).await.unwrap();
                    sender_ots
                }),
                tokio::spawn(async move {
                    receiver.receive_into(&mut receiver_ots, &choices).await.unwrap();
                    receiver_ots
                })
            )
            .unwrap();
            rates.push(count as f64 / now.elapsed().as_secs_f64());
        }
        rates
    });
    rates.sort_by(f64::total_cmp);
    println!(
        "{{\"rot_per_s\": {}, \"threads\": {threads}, \"log2_ots\": {p}, \"runs\": {runs}, \"all\": {:?}}}",
        rates[rates.len() / 2],
        rates
    );
}
RS
t0=$(date +%s)
cargo build --release -j "$jobs" >&2
echo "cryprot-rot.sh: build took $(( $(date +%s) - t0 )) s" >&2
echo "$work/target/release/tacit-rot-rate"
