"""tacit.mpc: circuits (Bristol and built) against Python arithmetic, and GMW between
two processes against clear evaluation, with OT-extension triples and with a token
served by `tacit mpc token serve`, over TLS (pinned, first use) and plain TCP."""

import multiprocessing as mp
import os
import random
import re
import subprocess
import tempfile
import time

import pytest

from tacit import TacitError, mpc

W = 12  # bits per value in the GMW tests (debug builds, two cores)


def comparison_circuit(width=W):
    """The millionaires' problem and a sum: [x < y, x + y, x == y]."""
    b = mpc.Builder()
    x, y = b.input(width), b.input(width)
    return b.finish([b.lt(x, y), b.add(x, y), b.eq(x, y)])


def expect(x, y):
    return [int(x < y), x + y, int(x == y)]


# ---------------------------------------------------------------------------------
# Circuits in the clear.
# ---------------------------------------------------------------------------------

def test_built_circuits_compute_what_python_computes():
    rng = random.Random(1)
    b = mpc.Builder()
    x, y = b.input(16), b.input(16)
    s = b.input(1)
    diff, borrow = b.sub(x, y)
    outs = [b.add(x, y), b.add_mod(x, y), diff, borrow, b.mul(x, y), b.lt(x, y), b.le(x, y),
            b.gt(x, y), b.ge(x, y), b.eq(x, y), b.mux(s, x, y), b.xor(x, y), b.and_(x, y),
            b.or_(x, y), b.not_(x), x[3:11], mpc.Word.concat(y[8:], x[:8]), b.add(x, b.const(1000, 16))]
    c = b.finish(outs)
    assert c.input_widths == [16, 16, 1]
    m = 0xFFFF
    for _ in range(60):
        xv, yv, sv = rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(1)
        if rng.random() < 0.2:
            yv = xv
        want = [xv + yv, (xv + yv) & m, (xv - yv) & m, int(xv < yv), xv * yv, int(xv < yv),
                int(xv <= yv), int(xv > yv), int(xv >= yv), int(xv == yv), yv if sv else xv,
                xv ^ yv, xv & yv, xv | yv, ~xv & m, (xv >> 3) & 0xFF, (yv >> 8) | ((xv & 0xFF) << 8),
                xv + 1000]
        assert c.eval([xv, yv, sv]) == want
    # Bristol Fashion round trip: same function, same digest.
    again = mpc.Circuit.from_bristol(c.to_bristol())
    assert again.digest == c.digest
    assert again.eval([3, 5, 1]) == c.eval([3, 5, 1])
    assert c.stats["and_gates"] > 0 and c.stats["and_depth"] > 0


def test_input_forms_and_output_forms():
    c = mpc.shipped("adder64")
    rng = random.Random(2)
    for _ in range(20):
        a, b = rng.getrandbits(64), rng.getrandbits(64)
        assert c.eval([a, b]) == [(a + b) % 2**64]
        # a 0/1 string is in wire order (first character = wire 0), as `tacit mpc run --input`
        sa = "".join("1" if a >> k & 1 else "0" for k in range(64))
        assert c.eval([sa, b]) == [(a + b) % 2**64]
        assert c.eval([a.to_bytes(8, "big"), [b >> k & 1 for k in range(64)]]) == [(a + b) % 2**64]
        bits = c.eval([a, b], bits=True)[0]
        assert sum(int(v) << k for k, v in enumerate(bits)) == (a + b) % 2**64
    aes = mpc.shipped("aes_128")
    # FIPS-197 appendix C.1
    key = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
    pt = bytes.fromhex("00112233445566778899aabbccddeeff")
    ct = aes.eval([key, pt])[0].to_bytes(16, "big")
    assert ct.hex() == "69c4e0d86a7b0430d8cdb78070b4c55a"


def test_bad_circuits_and_inputs_are_refused_with_the_clis_messages(tacit_bin):
    c = comparison_circuit()
    with pytest.raises(TacitError, match="takes 2 input values; 1 were given"):
        c.eval([1])
    with pytest.raises(TacitError, match="input 0 is 12 bits wide; 4096 needs 13 bits"):
        c.eval([4096, 0])
    with pytest.raises(TacitError, match="negative"):
        c.eval([-1, 0])
    with pytest.raises(TacitError, match="input 1 is 12 bits wide; 3 bits were given"):
        c.eval([0, "101"])
    with pytest.raises(TacitError, match="only 0 and 1"):
        c.eval([0, "10x"])
    with pytest.raises(TypeError):
        c.eval([0, 1.5])
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.txt")
        with open(bad, "w") as f:
            f.write("1 3\n2 1 1\n1 1\n\n2 1 0 5 2 AND\n")  # reads wire 5 before it is written
        with pytest.raises(TacitError) as e:
            mpc.load(bad)
        cli = subprocess.run([tacit_bin, "mpc", "eval", "--circuit", bad, "--input", "1", "--input", "1"],
                             capture_output=True, text=True)
        assert cli.returncode != 0
        assert str(e.value).split(": ", 1)[1] in cli.stderr, (str(e.value), cli.stderr)
        good = os.path.join(d, "cmp.txt")
        with open(good, "w") as f:
            f.write(c.to_bristol())
        assert mpc.load(good).digest == c.digest
        # the CLI evaluates the same circuit file to the same outputs
        out = subprocess.run([tacit_bin, "mpc", "eval", "--circuit", good, "--input", "0" * 11 + "1",
                              "--input", "1" + "0" * 11], check=True, capture_output=True, text=True).stdout
        assert out.split() == ["".join("1" if v else "0" for v in o) for o in c.eval([2048, 1], bits=True)]
    with pytest.raises(TacitError, match="line 1"):
        mpc.Circuit.from_bristol("x y\n")
    b, other = mpc.Builder(), mpc.Builder()
    x = b.input(4)
    with pytest.raises(TacitError, match="another builder"):
        other.add(x, other.input(4))
    with pytest.raises(TacitError, match="equal width"):
        b.xor(x, b.input(3))
    b.finish([x])
    with pytest.raises(TacitError, match="finished"):
        b.input(1)


# ---------------------------------------------------------------------------------
# GMW between two processes.
# ---------------------------------------------------------------------------------

def _party_b(queue, circuit_text, inputs, kwargs):
    from tacit import mpc as m

    try:
        r = m.run(m.Circuit.from_bristol(circuit_text), "b", inputs, **kwargs)
        queue.put(("ok", r.outputs, r.channel, r.peer_key, r.peer_key_how, r.triples_source))
    except Exception as e:  # the parent asserts on it
        queue.put(("error", type(e).__name__, str(e)))


def two_parties(circuit, a_inputs, b_inputs, a_kwargs, b_kwargs, listener=None, b_circuit=None):
    """Party a here (listening), party b in a spawned process; returns both results
    (party a's RunResult or exception, party b's tuple)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    if listener is None:
        listener = mpc.Listener("127.0.0.1:0", **a_kwargs.pop("listener", {}))
    if listener.fingerprint and "pin" not in b_kwargs and not b_kwargs.get("plain_tcp") and not b_kwargs.pop("no_pin", False):
        b_kwargs["pin"] = listener.fingerprint
    b_kwargs.pop("no_pin", None)
    proc = ctx.Process(target=_party_b,
                       args=(q, (b_circuit or circuit).to_bristol(), b_inputs, dict(b_kwargs, connect=listener.address)))
    proc.start()
    try:
        a = mpc.run(circuit, "a", a_inputs, listen=listener, timeout=a_kwargs.pop("timeout", 60), **a_kwargs)
    except TacitError as e:
        a = e
    b = q.get(timeout=120)
    proc.join(60)
    return a, b


def test_gmw_with_ot_extension_between_two_processes_matches_clear_evaluation():
    rng = random.Random(3)
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        sa, sb = os.path.join(d, "a.sqlite3"), os.path.join(d, "b.sqlite3")
        listener = mpc.Listener("127.0.0.1:0", store=sa)
        assert listener.fingerprint == mpc.key(store=sa)
        for _ in range(3):
            x, y = rng.getrandbits(W), rng.getrandbits(W)
            a, b = two_parties(c, [x], [y], {}, {"store": sb}, listener=listener)
            assert not isinstance(a, Exception), a
            assert b[0] == "ok", b
            assert a.outputs == b[1] == expect(x, y) == c.eval([x, y])
            assert (a.channel, b[2]) == ("tls", "tls")
            assert a.triples_source == b[5] == "ot"
            assert b[3] == listener.fingerprint and b[4] == "pinned"
            assert a.peer_key == mpc.key(store=sb)
            assert a.stats["and_gates"] == c.stats["and_gates"]
            assert a.stats["online_rounds"] >= c.stats["and_depth"]
        # Both inputs owned by b: a supplies none.
        a, b = two_parties(c, [], [5, 5], {"owners": "bb"}, {"store": sb, "owners": "bb"}, listener=listener)
        assert a.outputs == b[1] == expect(5, 5)


def test_trust_on_first_use_then_a_changed_key_is_refused():
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        sa, sb, evil = (os.path.join(d, n) for n in ("a.sqlite3", "b.sqlite3", "evil.sqlite3"))
        l1 = mpc.Listener("127.0.0.1:0", store=sa)
        a, b = two_parties(c, [1], [2], {}, {"store": sb, "no_pin": True}, listener=l1)
        assert b[0] == "ok" and b[4] == "recorded on first use", b
        a, b = two_parties(c, [3], [2], {}, {"store": sb, "no_pin": True}, listener=l1)
        assert b[0] == "ok" and b[4] == "as recorded before", b
        # Another party (another key) on the same address: refused by b, and a's run
        # ends without a result (the handshake never completes; a's timeout).
        port = l1.address
        del l1
        time.sleep(0.2)
        l2 = mpc.Listener(port, store=evil)
        a, b = two_parties(c, [1], [2], {"timeout": 4}, {"store": sb, "no_pin": True}, listener=l2)
        assert b[0] == "error" and "TLS" in b[2] and "\n" not in b[2], b
        assert isinstance(a, TacitError) and "timeout" in str(a)


def test_pins_are_enforced_both_ways():
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        sa, sb, sc = (os.path.join(d, n) for n in ("a.sqlite3", "b.sqlite3", "c.sqlite3"))
        # b pins a key that is not a's
        wrong = mpc.key(store=sc)
        a, b = two_parties(c, [1], [2], {"timeout": 4, "listener": {"store": sa}}, {"store": sb, "pin": wrong})
        assert b[0] == "error" and "cannot connect" in b[2], b
        # a admits only c's key: b is refused at the handshake
        a, b = two_parties(c, [1], [2], {"timeout": 4, "listener": {"store": sa, "pin": [mpc.key(store=sc)]}},
                           {"store": sb})
        assert b[0] == "error", b
        assert isinstance(a, TacitError) and "not one of the pinned keys" in str(a), a
        # a admits b's key
        a, b = two_parties(c, [1], [2], {"listener": {"store": sa, "pin": mpc.key(store=sb)}}, {"store": sb})
        assert b[0] == "ok" and a.outputs == expect(1, 2) and a.peer_key_how == "pinned"


def test_plain_tcp_only_when_both_ask_and_a_mismatched_session_is_refused():
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        sb = os.path.join(d, "b.sqlite3")
        a, b = two_parties(c, [7], [9], {"listener": {"plain_tcp": True}}, {"plain_tcp": True})
        assert b[0] == "ok" and a.outputs == b[1] == expect(7, 9)
        assert a.channel == b[2] == "plain" and a.peer_key is None
        # a TLS party b against a plain party a: one line, naming the mismatch
        a, b = two_parties(c, [7], [9], {"timeout": 4, "listener": {"plain_tcp": True}}, {"store": sb, "no_pin": True})
        assert b[0] == "error" and "\n" not in b[2], b
        # the peer computes another circuit: both refuse before any input is shared
        other = comparison_circuit(W + 1)
        a, b = two_parties(c, [7], [9], {"listener": {"store": os.path.join(d, "a.sqlite3")}}, {"store": sb},
                           b_circuit=other)
        assert isinstance(a, TacitError) and "another circuit" in str(a), a
        assert b[0] == "error" and ("session mismatch" in b[2] or "another circuit" in b[2]), b
    with pytest.raises(TacitError, match="party a needs listen="):
        mpc.run(c, "a", [1])
    with pytest.raises(TacitError, match="party b needs connect="):
        mpc.run(c, "b", [1])
    with pytest.raises(TacitError, match="this party supplies 1"):
        mpc.run(c, "b", [1, 2], connect="127.0.0.1:1")
    with pytest.raises(TacitError, match="trust_ca"):
        mpc.run(c, "b", [1], connect="127.0.0.1:1", triples="token")


def test_cli_party_b_against_a_python_party_a(tacit_bin):
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cmp.txt")
        with open(path, "w") as f:
            f.write(c.to_bristol())
        sa, sb = os.path.join(d, "a.sqlite3"), os.path.join(d, "b.sqlite3")
        listener = mpc.Listener("127.0.0.1:0", store=sa)
        y = 1234
        ybits = "".join("1" if y >> k & 1 else "0" for k in range(W))
        cli = subprocess.Popen([tacit_bin, "mpc", "run", "--circuit", path, "--party", "b", "--connect",
                                listener.address, "--pin", listener.fingerprint, "--input", ybits],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, TACIT_STORE=sb))
        a = mpc.run(c, "a", [999], listen=listener, timeout=60)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, err
        assert out.split() == a.output_strings
        assert a.outputs == expect(999, y)


def _token_setup(tacit_bin, d, a_store):
    """A software token paired with party a's store, served by `tacit mpc token serve`:
    returns (process, address, link key, manufacturer CA key)."""
    ca = os.path.join(d, "manufacturer.key")
    out = subprocess.run([tacit_bin, "mpc", "token", "ca", "--out", ca], check=True, capture_output=True, text=True).stdout
    ca_key = re.search(r"([0-9a-f]{64})", out).group(1)
    host = mpc.token_host_key(store=a_store)
    state, seal = os.path.join(d, "token.state"), os.path.join(d, "token.seal")
    out = subprocess.run([tacit_bin, "mpc", "token", "init", "--state", state, "--ca-key", ca, "--seal-key", seal,
                          "--pair", host], check=True, capture_output=True, text=True).stdout
    link = re.search(r"token link key \(party a pins it with --token-pin\): ([0-9a-f]{64})", out).group(1)
    proc = subprocess.Popen([tacit_bin, "mpc", "token", "serve", "--state", state, "--seal-key", seal,
                             "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    addr = None
    deadline = time.time() + 60
    while time.time() < deadline and addr is None:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"token listening on (\S+)", line)
        if m:
            addr = m.group(1)
    assert addr, "tacit mpc token serve did not start"
    return proc, addr, link, ca_key


def test_gmw_with_token_triples_between_two_processes(tacit_bin):
    rng = random.Random(4)
    c = comparison_circuit()
    with tempfile.TemporaryDirectory() as d:
        sa, sb = os.path.join(d, "a.sqlite3"), os.path.join(d, "b.sqlite3")
        proc, addr, link, ca_key = _token_setup(tacit_bin, d, sa)
        try:
            listener = mpc.Listener("127.0.0.1:0", store=sa)
            for _ in range(2):
                x, y = rng.getrandbits(W), rng.getrandbits(W)
                a, b = two_parties(c, [x], [y], {"token": addr, "token_pin": link, "store": sa},
                                   {"store": sb, "trust_ca": ca_key, "accept_software_token": True},
                                   listener=listener)
                assert not isinstance(a, Exception), a
                assert b[0] == "ok", b
                assert a.outputs == b[1] == expect(x, y)
                assert a.triples_source == b[5] == "token"
            # b refuses a software token unless it says it accepts one
            a, b = two_parties(c, [1], [2], {"token": addr, "token_pin": link, "store": sa, "timeout": 20},
                               {"store": sb, "trust_ca": ca_key}, listener=listener)
            assert b[0] == "error" and "software" in b[2], b
            assert isinstance(a, TacitError)
            # b refuses a token certified by another manufacturer
            a, b = two_parties(c, [1], [2], {"token": addr, "token_pin": link, "store": sa, "timeout": 20},
                               {"store": sb, "trust_ca": "11" * 32, "accept_software_token": True},
                               listener=listener)
            assert b[0] == "error", b
            # a pins another token link key: refused before anything is asked of the token
            wrong = ("0" if link[0] != "0" else "1") + link[1:]
            a, b = two_parties(c, [1], [2], {"token": addr, "token_pin": wrong, "store": sa, "timeout": 20},
                               {"store": sb, "trust_ca": ca_key, "accept_software_token": True},
                               listener=listener)
            assert isinstance(a, TacitError) and "token" in str(a), a
        finally:
            proc.terminate()
            proc.wait(10)


def test_a_waiting_party_releases_the_gil_and_ctrl_c_interrupts_it():
    import signal
    import sys

    script = r"""
import sys, threading, time
from tacit import mpc, TacitError
b = mpc.Builder(); x, y = b.input(4), b.input(4); c = b.finish([b.lt(x, y)])
l = mpc.Listener("127.0.0.1:0", plain_tcp=True)
ticks = [0]
def tick():
    while True:
        ticks[0] += 1
        time.sleep(0.01)
threading.Thread(target=tick, daemon=True).start()
print("waiting", flush=True)
try:
    mpc.run(c, "a", [1], listen=l)
except KeyboardInterrupt:
    print("interrupted", ticks[0], flush=True)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "waiting"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    m = re.match(r"interrupted (\d+)", out.strip())
    assert m, (out, err)
    # the other thread ran while party a waited (about 100 ticks in a second)
    assert int(m.group(1)) > 20


def test_a_listener_runs_one_session_at_a_time():
    import threading

    c = comparison_circuit()
    l = mpc.Listener("127.0.0.1:0", plain_tcp=True)
    got = []

    def first():
        try:
            mpc.run(c, "a", [1], listen=l, timeout=3)
        except TacitError as e:
            got.append(str(e))

    t = threading.Thread(target=first)
    t.start()
    time.sleep(0.5)
    with pytest.raises(TacitError, match="running another session"):
        mpc.run(c, "a", [1], listen=l, timeout=3)
    t.join(10)
    assert got and "no result within 3" in got[0]
