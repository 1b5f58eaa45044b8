# Review tool: one TLS connection, no Hello, N LogRequests back to back.
# python3 logspam.py HOST PORT N
import socket, ssl, struct, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname="tracedge.tacit.invalid")
req = bytes([1]) + struct.pack(">H", 0x062c) + struct.pack(">QQ", 0, 2**63)
def rd(k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c: raise SystemExit("closed after %d bytes" % len(b))
        b += c
    return b
t0 = time.time(); total = 0
for i in range(n):
    s.sendall(struct.pack(">I", len(req)) + req); k = struct.unpack(">I", rd(4))[0]; rd(k); total += k
print(f"{n} LogRequests answered on one connection in {time.time()-t0:.2f} s; {total} bytes received for {n*(len(req)+4)} sent")
