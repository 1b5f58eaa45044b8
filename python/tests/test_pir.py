"""tacit.pir: the lwe PIR as sans-I/O objects against the plaintext rows, deviating
messages, and the TracEdge subscriber against `tacit pir server serve`."""

import json
import os
import random
import re
import subprocess
import tempfile
import time

import pytest

from tacit import TacitError, pir


def random_rows(rng, n, width):
    return [bytes(rng.getrandbits(8) for _ in range(width)) for _ in range(n)]


# ---------------------------------------------------------------------------------
# Sans-I/O: server, hint, client, query, answer, decode.
# ---------------------------------------------------------------------------------

def test_rows_of_random_tables_at_random_indices():
    rng = random.Random(1)
    for n, width in [(1, 1), (2, 3), (37, 16), (300, 41), (1000, 5), (64, 200)]:
        rows = random_rows(rng, n, width)
        server = pir.Server(rows)
        client = pir.Client(server.hint())
        assert (client.rows, client.row_bytes) == (n, width)
        assert client.table_id == server.table_id
        for i in {0, n - 1} | {rng.randrange(n) for _ in range(5)}:
            query, state = client.query(i)
            assert state.row == i
            assert client.decode(server.answer(query), state) == rows[i], (n, width, i)


def test_outstanding_queries_decode_in_any_order_and_in_one_batch():
    rng = random.Random(2)
    rows = random_rows(rng, 500, 24)
    server = pir.Server(rows, seed=bytes(16))
    client = pir.Client(server.hint())
    idx = [rng.randrange(500) for _ in range(6)]
    made = [client.query(i) for i in idx]
    answers = server.answer_many([q for q, _ in made])
    for i, (q, st), a in reversed(list(zip(idx, made, answers))):
        assert client.decode(a, st) == rows[i]
    # without a state: the client's latest query
    q, _ = client.query(7)
    assert client.decode(server.answer(q)) == rows[7]


def test_the_query_hides_the_index_size_and_differs_every_time():
    rows = random_rows(random.Random(3), 200, 8)
    server = pir.Server(rows)
    client = pir.Client(server.hint())
    q1, _ = client.query(5)
    q2, _ = client.query(5)
    q3, _ = client.query(150)
    assert len(q1) == len(q2) == len(q3) == server.params()["query_bytes"]
    assert q1 != q2  # fresh secret and error each time


def test_from_file_reads_the_cli_table_format_and_gives_the_cli_row(tacit_bin):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "keys.tbl")
        subprocess.run([tacit_bin, "pir", "table", "gen", "--rows", "400", "--bytes", "41", "--out", path],
                       check=True, capture_output=True)
        data = open(path, "rb").read()
        server = pir.Server.from_file(path, 41)
        client = pir.Client(server.hint())
        for i in (0, 123, 399):
            q, st = client.query(i)
            row = client.decode(server.answer(q), st)
            assert row == data[41 * i:41 * (i + 1)]
            out = subprocess.run([tacit_bin, "pir", "query", "--table", path, "--bytes", "41", "--row", str(i), "--json"],
                                 check=True, capture_output=True, text=True).stdout
            assert json.loads(out)["row"] == row.hex()
        # Errors carry the CLI's one-line messages.
        bad = os.path.join(d, "bad.tbl")
        open(bad, "wb").write(b"x" * 100)
        with pytest.raises(TacitError) as e:
            pir.Server.from_file(bad, 41)
        cli = subprocess.run([tacit_bin, "pir", "query", "--table", bad, "--bytes", "41", "--row", "0"],
                             capture_output=True, text=True)
        assert cli.returncode != 0
        assert str(e.value) in cli.stderr, (str(e.value), cli.stderr)
        assert "not a whole number of 41-byte rows" in str(e.value)
        empty = os.path.join(d, "empty.tbl")
        open(empty, "wb").close()
        with pytest.raises(TacitError, match="is empty"):
            pir.Server.from_file(empty, 41)
        with pytest.raises(TacitError, match="cannot|No such|not"):
            pir.Server.from_file(os.path.join(d, "missing.tbl"), 41)


def test_bad_tables_and_indices_are_refused():
    with pytest.raises(TacitError, match="row 1 has 2 bytes; row 0 has 3"):
        pir.Server([b"abc", b"de"])
    with pytest.raises(TacitError, match="empty"):
        pir.Server([])
    with pytest.raises(TypeError, match="bytes"):
        pir.Server(["text rows"])
    with pytest.raises(TacitError, match="at least 1"):
        pir.Server.from_bytes(b"abcd", 0)
    with pytest.raises(ValueError, match="16 bytes"):
        pir.Server([b"ab"], seed=b"short")
    server = pir.Server([b"ab", b"cd", b"ef"])
    client = pir.Client(server.hint())
    with pytest.raises(TacitError, match="outside the table of 3 rows"):
        client.query(3)
    with pytest.raises(TacitError, match="no query"):
        pir.Client(server.hint()).decode(b"")


# ---------------------------------------------------------------------------------
# Deviating messages: every message is checked before it is used.
# ---------------------------------------------------------------------------------

def test_messages_for_another_table_or_malformed_are_refused():
    rng = random.Random(4)
    rows = random_rows(rng, 100, 16)
    server, other = pir.Server(rows), pir.Server(rows)  # another seed: another table id
    client = pir.Client(server.hint())
    q, st = client.query(9)
    # a query for another table (or one made before an update) is refused by the server
    with pytest.raises(TacitError, match="for table .* this side holds table"):
        other.answer(q)
    # an answer computed over another table is refused by the client
    q2, st2 = pir.Client(other.hint()).query(9)
    with pytest.raises(TacitError, match="for table"):
        client.decode(other.answer(q2), st)
    # truncated, extended, foreign messages
    for bad in (q[:-1], q + b"\0", b"", server.hint()[:50]):
        with pytest.raises(TacitError, match="malformed|lwe"):
            server.answer(bad)
    a = server.answer(q)
    for bad in (a[:-4], a + b"\0\0\0\0", q):
        with pytest.raises(TacitError):
            client.decode(bad, st)
    # a hint whose parameters do not match its length, or truncated
    h = bytearray(server.hint())
    with pytest.raises(TacitError):
        pir.Client(bytes(h[:-4]))
    h[3 + 12] ^= 0x07  # log_p
    with pytest.raises(TacitError):
        pir.Client(bytes(h))
    # the table id in an answer is bound: flipping it is refused
    flipped = bytearray(a)
    flipped[3] ^= 1
    with pytest.raises(TacitError, match="for table"):
        client.decode(bytes(flipped), st)
    assert client.decode(a, st) == rows[9]


def test_row_updates_move_the_table_id_and_clients_follow():
    rng = random.Random(5)
    rows = random_rows(rng, 120, 12)
    server = pir.Server(rows)
    client = pir.Client(server.hint())
    old_query, _ = client.query(3)
    new = bytes(rng.getrandbits(8) for _ in range(12))
    update = server.update_row(3, new)
    # the stale client's query is for the old table: refused, not answered wrongly
    with pytest.raises(TacitError, match="for table"):
        server.answer(old_query)
    client.apply_update(update)
    assert client.table_id == server.table_id
    q, st = client.query(3)
    assert client.decode(server.answer(q), st) == new
    # the same update again (made for the old table state) is refused
    with pytest.raises(TacitError, match="for table"):
        client.apply_update(update)
    # a tampered update does not lead to the announced table id
    up2 = bytearray(server.update_row(4, bytes(12)))
    up2[-1] ^= 1
    with pytest.raises(TacitError, match="for table"):
        client.apply_update(bytes(up2))


def test_weighted_queries_decode_the_weighted_sum():
    rng = random.Random(6)
    rows = random_rows(rng, 400, 10)
    server = pir.Server(rows)
    client = pir.Client(server.hint())
    p = client.params()
    s, log_p = p["slots"], p["log_p"]
    assert log_p == 8  # bytes are symbols here
    chosen = [(3, 1), (3 + s, 5), (3 + 4 * s, 200)]
    q, st = client.query_weighted(chosen)
    assert st.row is None
    got = client.decode_symbols(server.answer(q), st)
    want = [sum(w * rows[i][k] for i, w in chosen) % 256 for k in range(10)]
    assert got == want
    with pytest.raises(TacitError, match="one slot"):
        client.query_weighted([(0, 1), (1, 1)])


# ---------------------------------------------------------------------------------
# TracEdge against `tacit pir server serve`.
# ---------------------------------------------------------------------------------

def _init(tacit_bin, store, rows):
    out = subprocess.run([tacit_bin, "pir", "server", "init", "--store", store, "--rows", str(rows)],
                         check=True, capture_output=True, text=True).stdout
    field = lambda name: next(l.split()[-1] for l in out.splitlines() if l.startswith(name))
    return field("pin"), field("server-key")


def _serve(tacit_bin, store, extra):
    proc = subprocess.Popen(
        [tacit_bin, "pir", "server", "serve", "--store", store, "--listen", "127.0.0.1:0", *extra],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on (\S+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    proc.wait()
    raise AssertionError("tacit pir server serve did not start")


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_enroll_authenticate_and_catch_a_cheating_server(tacit_bin):
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "op.sqlite3")
        pin, key = _init(tacit_bin, store, 16)
        alice = os.path.join(d, "alice.json")
        proc, addr = _serve(tacit_bin, store, ["--open-enrollment"])
        try:
            e = pir.enroll(addr, pin, key, alice, label="alice")
            assert 0 <= e.row < e.rows == 16
            r = pir.authenticate(alice)
            assert r.outcome == "authenticated"
            assert len(r.session_key) == 32
            assert re.fullmatch(r"[0-9a-f]{16}", r.session_key_fingerprint)
            assert r.session_key.hex() not in repr(r)
            assert len(r.audited_rows) == 4 and not r.hint_cached
            again = pir.authenticate(alice, audits=2)
            assert again.hint_cached and len(again.audited_rows) == 2
            assert again.session_key != r.session_key
            # An identity file is never overwritten.
            with pytest.raises(TacitError, match="exists"):
                pir.enroll(addr, pin, key, alice)
            # A wrong pin is refused by TLS, in one line.
            wrong = ("0" if pin[0] != "0" else "1") + pin[1:]
            with pytest.raises(TacitError) as ex:
                pir.enroll(addr, wrong, key, os.path.join(d, "bob.json"))
            assert "\n" not in str(ex.value)
            assert not os.path.exists(os.path.join(d, "bob.json"))
        finally:
            _stop(proc)
        # The same operator, now cheating on alice's row.
        proc, addr2 = _serve(tacit_bin, store, ["--cheat-rows", str(e.row)])
        try:
            ident = json.load(open(alice))
            ident["connect"] = addr2
            alice2 = os.path.join(d, "alice2.json")
            with open(alice2, "w") as f:
                json.dump(ident, f)
            os.chmod(alice2, 0o600)
            proof_file = os.path.join(d, "caught.proof")
            with pytest.raises(pir.ServerCaught) as caught:
                pir.authenticate(alice2, no_hint_cache=True, proof=proof_file)
            assert "SERVER CAUGHT CHEATING" in str(caught.value)
            proof = caught.value.proof
            assert open(proof_file, "rb").read() == proof
            assert pir.verify_proof(proof, server_key=key) == caught.value.finding
            out = subprocess.run([tacit_bin, "pir", "verify-proof", proof_file, "--server-key", key, "--json"],
                                 check=True, capture_output=True, text=True).stdout
            assert json.loads(out)["valid"] is True
            bad = bytearray(proof)
            bad[len(bad) // 2] ^= 1
            with pytest.raises(TacitError):
                pir.verify_proof(bytes(bad))
            with pytest.raises(TacitError, match="about server key"):
                pir.verify_proof(proof, server_key="11" * 32)
        finally:
            _stop(proc)
    with pytest.raises(TacitError, match="No such file|alice"):
        pir.authenticate(os.path.join(d, "alice.json"))
