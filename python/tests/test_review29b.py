"""Review 29b (adversarial): red tests against the Python bindings.

Each test states the claim it checks (docs/python.md) and fails on main at the time of
the review.
"""
import copy
import pickle
import subprocess
import sys

import pytest

from tacit import TacitError, paillier

BITS = 512

# pyo3's PanicException derives from BaseException: a test that expects a Python
# error must not let one through as "some exception".
try:
    from pyo3_runtime import PanicException  # type: ignore
except Exception:  # pragma: no cover - the module exists once a panic was raised
    PanicException = None


@pytest.fixture(scope="module")
def keys():
    return paillier.generate_paillier_keypair(n_length=BITS)


@pytest.fixture(scope="module")
def other_keys():
    return paillier.generate_paillier_keypair(n_length=BITS + 64)


def _python_error(f):
    """Runs f; returns the exception if it is an ordinary Python error (Exception),
    fails the test if it is a Rust panic (PanicException, a BaseException) or if f
    returns normally."""
    try:
        r = f()
    except Exception as e:  # ValueError, OverflowError, TacitError ...
        return e
    except BaseException as e:  # PanicException crosses into Python
        pytest.fail(f"a Rust panic crossed into Python: {type(e).__name__}: {e}")
    pytest.fail(f"expected a Python error, got {r!r}")


def test_exponent_extremes_raise_python_errors_not_panics(keys):
    """docs/python.md: "Errors are tacit.TacitError ... where python-paillier raises
    ... ValueError, tacit.paillier raises the same"; the brief: no panic crosses into
    Python. `exponent` is a settable attribute (as in phe); i64 arithmetic on it
    (check_exponent_gap's `a - b`, mul_any's `self.exponent + ek`,
    EncodedNumber.decrease_exponent_to's `self.exponent - new_exp`) overflows: a
    PanicException in the dev build scripts/test installs, and a silently wrapped
    exponent in a release build."""
    pub, priv = keys
    hi, lo = pub.encrypt(1), pub.encrypt(2)
    hi.exponent = 2**63 - 1
    lo.exponent = -(2**63)
    _python_error(lambda: hi + lo)
    _python_error(lambda: hi.decrease_exponent_to(-1))
    # the product's exponent is exponent + the scalar's: it must not wrap around
    _python_error(lambda: hi * paillier.EncodedNumber(pub, 1, 1))
    _python_error(lambda: lo * 0.5)
    enc = paillier.EncodedNumber(pub, 1, 2**63 - 1)
    _python_error(lambda: enc.decrease_exponent_to(-1))


def test_batch_functions_refuse_an_encoding_of_another_key(keys, other_keys):
    """`x * enc` and `x + enc` refuse an EncodedNumber made for another key ("the
    encoding was made for another public key"); `mul_many` and `add_many` (docs:
    "Batch operations ... elementwise, b encrypted or plain") take it without the
    check and return a number that decrypts to garbage."""
    pub, priv = keys
    pub2, _ = other_keys
    x = pub.encrypt(5)
    enc2 = paillier.EncodedNumber.encode(pub2, -3)
    with pytest.raises(ValueError):
        x * enc2
    with pytest.raises(ValueError):
        x + enc2
    with pytest.raises(ValueError):
        r = paillier.mul_many([x], [enc2])
        pytest.fail(f"mul_many took another key's encoding: 5 * -3 decrypted to {priv.decrypt(r[0])}")
    with pytest.raises(ValueError):
        r = paillier.add_many([x], [enc2])
        pytest.fail(f"add_many took another key's encoding: 5 + -3 decrypted to {priv.decrypt(r[0])}")


def test_every_encrypted_number_is_a_unit_even_with_r_value(keys):
    """docs/python.md, CRT decryption: "without a per-call unit check: every
    EncryptedNumber was checked when it was made". `encrypt(value, r_value=r)` with
    an r that is not a unit mod n (0, a prime factor) makes an EncryptedNumber whose
    ciphertext is not in Z*_{n²}, unchecked; decryption then returns a wrong value
    instead of raising."""
    pub, priv = keys
    for r in [0, priv.p, pub.n]:
        e = _python_error(lambda: priv.decrypt(pub.encrypt(5, r_value=r)))
        assert isinstance(e, ValueError), e


def test_keys_and_numbers_pickle_and_copy_as_phes_do(keys):
    """docs/python.md: "`from tacit import paillier as phe` runs most phe code
    unchanged". phe's keys and EncryptedNumber pickle (multiprocessing, joblib and
    federated-learning code ship them that way) and copy; tacit's raise TypeError
    "cannot pickle"."""
    pub, priv = keys
    x = pub.encrypt(7)
    pub2 = pickle.loads(pickle.dumps(pub))
    assert pub2 == pub
    priv2 = pickle.loads(pickle.dumps(priv))
    assert priv2.decrypt(x) == 7
    y = pickle.loads(pickle.dumps(x))
    assert priv.decrypt(y) == 7 and y.public_key == pub
    assert priv.decrypt(copy.deepcopy(x)) == 7
    assert priv.decrypt(copy.copy(x)) == 7


HUGE_CONST = r"""
import sys
from tacit import mpc, TacitError
b = mpc.Builder()
for width in [2**62, 2**63 + 5, 2**64 - 1]:
    try:
        b.const(0, width)
    except (TacitError, ValueError, MemoryError, OverflowError) as e:
        print("refused", width, e)
    else:
        print("accepted", width)
print("alive")
"""


def test_builder_const_of_a_huge_width_is_refused_not_an_abort():
    """docs/python.md: errors are one-line Python exceptions (and the brief: no
    panic, no process abort). `Builder.input` bounds its width (1 to 2^24 bits);
    `Builder.const(value, width)` does not: value_bits collects `width` bools, so a
    huge width aborts the process on the failed allocation (or panics with
    'capacity overflow')."""
    out = subprocess.run([sys.executable, "-c", HUGE_CONST], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "alive" in out.stdout, (out.returncode, out.stdout, out.stderr[-2000:])
    assert "accepted" not in out.stdout, out.stdout


def test_pir_decode_with_another_clients_state_is_an_error_not_a_panic():
    """docs/python.md (tacit.pir): "decode(answer, state=None)" -- errors are
    TacitError with one line. A QueryState made by another Client (another, larger
    table) passes decode's table-id check when the answer carries that table's id
    (a server's bytes, or the user passing the wrong state), and its slot indexes past
    this client's hint: LweClient::decode slices `hint[r·n..(r+1)·n]` out of bounds, a
    Rust panic (PanicException) instead of a refusal."""
    import os

    from tacit import pir

    small = pir.Server([os.urandom(32) for _ in range(4)])
    big = pir.Server([os.urandom(32) for _ in range(4096)])
    ca, cb = pir.Client(small.hint()), pir.Client(big.hint())
    slots_a, slots_b = small.params()["slots"], big.params()["slots"]
    assert slots_b > slots_a, (slots_a, slots_b)
    # a row of the big table in a slot the small table does not have
    _, state_b = cb.query(slots_b - 1)
    q_a, _ = ca.query(0)
    ans_a = small.answer(q_a)  # the small table's length, with the small table's id ...
    id_a, id_b = bytes.fromhex(ca.table_id), bytes.fromhex(cb.table_id)
    assert ans_a.count(id_a) == 1
    forged = ans_a.replace(id_a, id_b)  # ... relabelled with the big table's id
    e = _python_error(lambda: ca.decode(forged, state_b))
    assert isinstance(e, TacitError), e


def test_a_hostile_serialised_exponent_does_not_panic_later(keys):
    """A file in the format of phe's documentation (numbers_from_json) is what another
    party sends. EncryptedNumber.from_json bounds the exponent (|e| <= 4096, '"e" is
    not a small integer'); numbers_from_json does not, so an exponent of 2**63 - 1
    (or -2**63) is taken, and the receiver's next ordinary operation (adding 0.5,
    multiplying by 0.5) overflows i64 inside the binding: a PanicException in the dev
    build, a silently wrapped exponent in release."""
    import json

    pub, priv = keys
    c = pub.encrypt(1).ciphertext()
    for e, op in [(2**63 - 1, lambda x: x + pub.encrypt(0.5)), (-(2**63), lambda x: x * 0.5)]:
        s = json.dumps({"public_key": {"g": pub.g, "n": pub.n}, "values": [[str(c), e]]})
        try:
            _, [x] = paillier.numbers_from_json(s, public_key=pub)
        except TacitError:
            continue  # refused at the door, as EncryptedNumber.from_json does
        _python_error(lambda: op(x))


def test_building_a_public_key_from_n_releases_the_gil():
    """docs/python.md: "Every long operation ... releases the GIL". Checking a
    peer's modulus (PaillierPublicKey(n), PaillierPublicKey.from_json,
    numbers_from_json, from_phe) trial-divides it by every prime below 2^24: about
    0.45 s for a 3072-bit n here, a hundred decryptions, with the GIL held (py_new
    calls PublicKey::from_modulus without py.detach), so every other Python thread
    of a server stops while it reads a key."""
    import threading
    import time

    pub, _ = paillier.generate_paillier_keypair(n_length=3072)
    n = pub.n
    ticks, stop = [], threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    paillier.PaillierPublicKey(n)
    t1 = time.perf_counter()
    time.sleep(0.05)
    stop.set()
    t.join()
    during = [x for x in ticks if t0 - 0.01 <= x <= t1 + 0.01]
    gaps = [b - a for a, b in zip(during, during[1:])]
    longest = max(gaps, default=t1 - t0)
    assert longest < 0.2, f"another thread stood still for {longest:.3f} s of a {t1 - t0:.3f} s PaillierPublicKey(n)"


def test_a_huge_timeout_is_refused_not_a_panic(tmp_path):
    """docs/python.md: `query(..., timeout=30.0)`, `authenticate(..., timeout=120.0)`,
    `run(..., timeout=None)`; errors are one-line TacitError/ValueError. The bindings
    check `timeout > 0 and finite`, then call Duration::from_secs_f64, which panics
    ("cannot convert float seconds to Duration: value is either too big or NaN") for
    a finite value beyond u64 seconds, e.g. 1e20: a PanicException in every build."""
    from tacit import mpc, pir, psi

    e = _python_error(lambda: psi.query("127.0.0.1:9", ["a"], plain_tcp=True, timeout=1e20))
    assert isinstance(e, ValueError), e
    ident = tmp_path / "id.json"
    ident.write_text("{}")
    e = _python_error(lambda: pir.authenticate(str(ident), timeout=1e20))
    assert isinstance(e, ValueError), e
    b = mpc.Builder()
    x, y = b.input(1), b.input(1)
    c = b.finish([b.and_(x, y)])
    e = _python_error(lambda: mpc.run(c, "b", [1], connect="127.0.0.1:9", store=str(tmp_path / "store"), timeout=1e20))
    assert isinstance(e, ValueError), e


PSI_QUERY_WAITS = r"""
import sys
from tacit import psi
try:
    psi.query("127.0.0.1:%d" % int(sys.argv[1]), ["a"], plain_tcp=True, timeout=25.0)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
except Exception as e:
    print("error", e, flush=True)
    sys.exit(4)
"""


def test_ctrl_c_interrupts_a_psi_query_that_waits():
    """The bindings' own rule (crates/py/src/blocking.rs: network waits run with
    Python's signal handlers polled, "Ctrl-C interrupts a party that waits for its
    peer instead of leaving it stuck until the peer comes"; docs/python.md for
    mpc.run, pir.authenticate's docstring): psi.query runs its own tokio runtime
    inside py.detach without block_on, so against a server that accepts and says
    nothing, Ctrl-C is ignored until the read timeout (25 s here) expires."""
    import signal
    import socket
    import time

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-c", PSI_QUERY_WAITS, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        conn, _ = srv.accept()  # the query connected; say nothing
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        try:
            out, _ = p.communicate(timeout=8)
        except subprocess.TimeoutExpired:
            pytest.fail("psi.query ignored Ctrl-C for 8 s while waiting for a silent server")
        assert p.returncode == 3 and "interrupted" in out, (p.returncode, out, time.monotonic() - t0)
        conn.close()
    finally:
        p.kill()
        srv.close()
