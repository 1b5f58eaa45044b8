# Review tool: a hostile operator re-signs a subscriber's enrolment receipt with the store's key.
# python3 receipt.py STORE IN.receipt OUT.receipt future|rows
import sqlite3, struct, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
store, infile, outfile, mode = sys.argv[1:5]
seed = sqlite3.connect(store).execute("select value from pir_config where name='signing_seed'").fetchone()[0]
sk = Ed25519PrivateKey.from_private_bytes(bytes(seed))
b = bytes.fromhex(open(infile).read().strip()); assert b[0] == 1 and struct.unpack(">H", b[1:3])[0] == 0x062f
d = b[3:]
server_key, row, key, rows, empty, seq, t = d[:32], struct.unpack(">Q", d[32:40])[0], d[40:72], struct.unpack(">Q", d[72:80])[0], d[80:112], *struct.unpack(">QQ", d[112:128])
if mode == "future":
    seq += 1_000_000; t += 10 * 365 * 86400 * 1000
elif mode == "rows":
    rows += 1
msg = server_key + struct.pack(">Q", row) + key + struct.pack(">Q", rows) + empty + struct.pack(">QQ", seq, t)
sig = sk.sign(b"tacit/tracedge/v3/receipt\0" + msg)
open(outfile, "w").write((bytes([1]) + struct.pack(">H", 0x062f) + msg + sig).hex() + "\n")
print("receipt", mode, "row", row, "seq", seq, "time", t, "rows", rows)
