#!/usr/bin/env bash
# python-paillier (phe) ⇄ tacit, both directions, live.
#
# Installs phe (and click, which pheutil needs) from PyPI into bench/.venv (git-ignored),
# then checks:
#   1. a key made by pheutil; pheutil encrypts; tacit decrypts; tacit adds two phe
#      ciphertexts and pheutil decrypts the sum;
#   2. a key made by tacit; tacit encrypts; pheutil decrypts; pheutil adds; tacit
#      decrypts;
#   3. the same through phe's Python API (lambda/mu-free keys built from p and q).
# Usage: bench/phe_interop.sh [path/to/tacit]   (default: target/release/tacit)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
tacit="${1:-${CARGO_TARGET_DIR:-$root/target}/release/tacit}"
[ -x "$tacit" ] || { echo "build tacit first: cargo build --release -p tacit-cli (or pass its path)"; exit 1; }
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q phe click
pheutil="$venv/bin/pheutil"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cd "$work"
near() { "$venv/bin/python" -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-9*max(1,abs(b)) else 1)" "$1" "$2"; }
check() { if near "$2" "$3"; then echo "ok   $1: $2"; else echo "FAIL $1: got $2, want $3"; exit 1; fi; }

echo "== phe key, phe encrypts, tacit decrypts and adds =="
"$pheutil" genpkey --keysize 2048 phe.priv.json 2>/dev/null
"$pheutil" extract phe.priv.json phe.pub.json 2>/dev/null
"$pheutil" encrypt phe.pub.json 12.5 > a.json 2>/dev/null
"$pheutil" encrypt phe.pub.json -- -30 > b.json 2>/dev/null
check "tacit decrypts phe's 12.5" "$("$tacit" pros decrypt --key phe.priv.json a.json)" 12.5
check "tacit decrypts phe's -30" "$("$tacit" pros decrypt --key phe.priv.json b.json)" -30
"$tacit" pros add --key phe.pub.json a.json b.json > sum.json
check "phe decrypts tacit's sum" "$("$pheutil" decrypt phe.priv.json sum.json 2>/dev/null)" -17.5

echo "== tacit key, tacit encrypts, phe decrypts and adds =="
"$tacit" pros keygen --bits 3072 --out t.json 2>/dev/null
"$tacit" pros encrypt --key t.pub.json 1234567 > c.json
"$tacit" pros encrypt --key t.pub.json -- -0.25 > d.json
check "phe decrypts tacit's 1234567" "$("$pheutil" decrypt t.json c.json 2>/dev/null)" 1234567
check "phe decrypts tacit's -0.25" "$("$pheutil" decrypt t.json d.json 2>/dev/null)" -0.25
"$pheutil" addenc t.pub.json c.json d.json > e.json 2>/dev/null
check "tacit decrypts phe's sum" "$("$tacit" pros decrypt --key t.json e.json)" 1234566.75

echo "== phe's Python API with tacit's key =="
"$tacit" pros encrypt --key t.pub.json 99 > f.json
"$venv/bin/python" - t.json f.json <<'PY'
import json, sys, phe
from phe.util import base64_to_int
k = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
pub = phe.PaillierPublicKey(base64_to_int(k["pub"]["n"]))
priv = phe.PaillierPrivateKey(pub, base64_to_int(k["p"]), base64_to_int(k["q"]))
x = phe.EncryptedNumber(pub, int(c["v"]), int(c["e"]))
assert priv.decrypt(x + 1) == 100, priv.decrypt(x + 1)
print("ok   phe API decrypts tacit's 99 (+1 = 100)")
PY
echo "all interop checks passed"
