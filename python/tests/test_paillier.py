"""tacit.paillier against plaintext arithmetic, against phe, and between two processes."""
import json
import math
import random
import subprocess
import sys

import pytest

from tacit import TacitError, paillier

BITS = 1024  # small keys keep the suite fast; the bench uses 3072


@pytest.fixture(scope="module")
def keys():
    return paillier.generate_paillier_keypair(n_length=BITS)


def rand_ints(rng, k, bound=10**12):
    return [rng.randint(-bound, bound) for _ in range(k)]


def rand_floats(rng, k):
    return [rng.uniform(-1e6, 1e6) * rng.choice([1, 1e-9, 1e9]) for _ in range(k)]


def test_keypair_shape(keys):
    pub, priv = keys
    assert pub.n.bit_length() == BITS
    assert pub.g == pub.n + 1 and pub.nsquare == pub.n ** 2
    assert pub.max_int == pub.n // 3 - 1
    assert priv.p * priv.q == pub.n
    assert priv.public_key == pub and pub.crt_encryption
    assert str(priv.p) not in repr(priv)


def test_roundtrip_ints_and_floats(keys):
    pub, priv = keys
    rng = random.Random(1)
    for x in rand_ints(rng, 20) + [0, 1, -1, pub.max_int, -pub.max_int]:
        assert priv.decrypt(pub.encrypt(x)) == x
    for x in rand_floats(rng, 20) + [0.0, -0.5, 1e-300, 5e-324]:
        assert priv.decrypt(pub.encrypt(x)) == x  # phe's encoding keeps every mantissa bit


def test_arithmetic_matches_plaintext(keys):
    pub, priv = keys
    rng = random.Random(2)
    for _ in range(10):
        a, b, k = rng.randint(-10**9, 10**9), rng.randint(-10**9, 10**9), rng.randint(-1000, 1000)
        ea, eb = pub.encrypt(a), pub.encrypt(b)
        assert priv.decrypt(ea + eb) == a + b
        assert priv.decrypt(ea - eb) == a - b
        assert priv.decrypt(ea + b) == a + b
        assert priv.decrypt(b + ea) == a + b
        assert priv.decrypt(b - ea) == b - a
        assert priv.decrypt(ea * k) == a * k
        assert priv.decrypt(k * ea) == a * k
        assert priv.decrypt(-ea) == -a
        f, g = rng.uniform(-100, 100), rng.uniform(-100, 100)
        ef = pub.encrypt(f)
        assert priv.decrypt(ef + ea) == pytest.approx(f + a, rel=1e-12)
        assert priv.decrypt(ef * g) == pytest.approx(f * g, rel=1e-12)
        assert priv.decrypt(ef / 4) == pytest.approx(f / 4, rel=1e-12)
        assert priv.decrypt(ea + g) == pytest.approx(a + g, rel=1e-12)


def test_batch_operations_match_single(keys):
    pub, priv = keys
    rng = random.Random(3)
    xs, ys = rand_ints(rng, 16), rand_floats(rng, 16)
    ks = [rng.randint(-50, 50) for _ in xs]
    exs, eys = pub.encrypt_many(xs), pub.encrypt_many(ys)
    assert priv.decrypt_many(exs) == xs
    assert priv.decrypt_many(eys) == ys
    assert priv.decrypt_many(paillier.add_many(exs, eys)) == pytest.approx([x + y for x, y in zip(xs, ys)], rel=1e-12)
    assert priv.decrypt_many(paillier.add_many(exs, xs)) == [2 * x for x in xs]
    assert priv.decrypt_many(paillier.mul_many(exs, ks)) == [x * k for x, k in zip(xs, ks)]
    assert priv.decrypt(paillier.sum_encrypted(exs)) == sum(xs)
    with pytest.raises(ValueError):
        paillier.add_many(exs, eys[:-1])


def test_public_only_key_encrypts_the_same_scheme(keys):
    pub, priv = keys
    bare = paillier.PaillierPublicKey(pub.n)
    assert bare == pub and hash(bare) == hash(pub) and not bare.crt_encryption
    c = bare.encrypt(-12345)
    assert priv.decrypt(c) == -12345
    assert priv.decrypt(c + pub.encrypt(5)) == -12340
    # fresh randomness: two encryptions of one value differ
    assert pub.encrypt(7).ciphertext() != pub.encrypt(7).ciphertext()


def test_crt_encryption_is_textbook_paillier(keys):
    """A CRT ciphertext c of m satisfies c·(1+mn)⁻¹ = rⁿ for some unit r: an n-th
    residue mod n², which the private key recognises as (c·g^-m)^(λ) = 1."""
    pub, priv = keys
    n, n2 = pub.n, pub.nsquare
    lam = (priv.p - 1) * (priv.q - 1) // math.gcd(priv.p - 1, priv.q - 1)
    for m in [0, 3, 99]:
        c = pub.encrypt(m).ciphertext()
        rn = c * pow(1 + m * n, -1, n2) % n2
        assert pow(rn, lam, n2) == 1
        assert rn != 1


def test_encoding_errors(keys):
    pub, priv = keys
    with pytest.raises(ValueError, match="Integer needs to be within"):
        pub.encrypt(pub.max_int + 1)
    with pytest.raises(TypeError, match="Don't know the precision"):
        pub.encrypt("12")
    with pytest.raises(ValueError):
        pub.encrypt(float("nan"))
    other_pub, other_priv = paillier.generate_paillier_keypair(n_length=512)
    with pytest.raises(ValueError, match="different public keys"):
        pub.encrypt(1) + other_pub.encrypt(1)
    with pytest.raises(ValueError, match="different key"):
        other_priv.decrypt(pub.encrypt(1))
    with pytest.raises(NotImplementedError):
        pub.encrypt(1) * pub.encrypt(2)
    with pytest.raises(TypeError):
        priv.decrypt(5)
    # an overflow after arithmetic is reported, not wrapped around
    big = pub.encrypt(pub.max_int)
    with pytest.raises(OverflowError):
        priv.decrypt(big * 2)


def test_bad_keys_and_ciphertexts_are_refused(keys):
    pub, _ = keys
    with pytest.raises(TacitError, match="even"):
        paillier.PaillierPublicKey(pub.n + 1)
    f = next(f for f in (3, 5, 7, 11, 13, 17) if (pub.n * f).bit_length() % 2 == 0)
    with pytest.raises(TacitError, match="small factor"):
        paillier.PaillierPublicKey(pub.n * f)
    with pytest.raises(TacitError, match="not in"):
        paillier.EncryptedNumber(pub, 0)
    with pytest.raises(TacitError, match="unit"):
        paillier.EncryptedNumber(pub, pub.n)
    with pytest.raises(ValueError):
        paillier.PaillierPrivateKey(pub, 7, 11)


def test_json_roundtrip(keys):
    pub, priv = keys
    pj = json.loads(pub.to_json())
    assert pj["kty"] == "DAJ" and pj["alg"] == "PAI-GN1"
    pub2 = paillier.PaillierPublicKey.from_json(pub.to_json())
    priv2 = paillier.PaillierPrivateKey.from_json(priv.to_json())
    assert pub2 == pub and priv2 == priv
    c = pub.encrypt(-2.25)
    c2 = paillier.EncryptedNumber.from_json(pub2, c.to_json())
    assert priv2.decrypt(c2) == -2.25
    # phe's λ form of the private key
    lam = (priv.p - 1) * (priv.q - 1) // math.gcd(priv.p - 1, priv.q - 1)
    import base64

    b64 = lambda x: base64.urlsafe_b64encode(x.to_bytes((x.bit_length() + 7) // 8, "big")).decode().rstrip("=")
    lj = {"kty": "DAJ", "key_ops": ["decrypt"], "lambda": b64(lam), "pub": pj}
    assert paillier.PaillierPrivateKey.from_json(json.dumps(lj)) == priv
    other_pub, _ = paillier.generate_paillier_keypair(n_length=512)
    with pytest.raises(TacitError, match="another key|key mismatch"):
        paillier.EncryptedNumber.from_json(other_pub, c.to_json())
    with pytest.raises(TacitError, match="python-paillier JSON"):
        paillier.PaillierPublicKey.from_json("{")


def test_arithmetic_results_are_rerandomised_before_leaving(keys):
    pub, priv = keys
    a = pub.encrypt(5)
    s = a * 3
    raw = s.ciphertext(be_secure=False)
    assert raw == pow(a.ciphertext(), 3, pub.nsquare)  # deterministic from a and 3 …
    assert s.ciphertext() != raw  # … so it is re-randomised before it is shared
    assert priv.decrypt(s) == 15


def test_raw_ciphertexts_are_textbook_paillier(keys):
    """The ciphertexts behind the numbers (kept in Montgomery form inside) against
    Python's own arithmetic mod n²: construction and ciphertext() round-trip, addition
    is the product, negation the inverse, scalar multiplication the power, exponent
    alignment the power 16^d, raw_encrypt is (1 + mn)·rⁿ, raw_decrypt is
    L(c^λ mod n²)·μ mod n on random units."""
    pub, priv = keys
    n, n2 = pub.n, pub.nsquare
    lam = (priv.p - 1) * (priv.q - 1) // math.gcd(priv.p - 1, priv.q - 1)
    mu = pow(lam, -1, n)
    rng = random.Random(7)

    def unit():
        while True:
            c = rng.randrange(1, n2)
            if math.gcd(c, n) == 1:
                return c

    for _ in range(8):
        ca, cb = unit(), unit()
        a, b = paillier.EncryptedNumber(pub, ca, -3), paillier.EncryptedNumber(pub, cb, -3)
        assert a.ciphertext(be_secure=False) == ca
        assert (a + b).ciphertext(be_secure=False) == ca * cb % n2
        assert paillier.add_many([a], [b])[0].ciphertext(be_secure=False) == ca * cb % n2
        assert paillier.sum_encrypted([a, b, a]).ciphertext(be_secure=False) == ca * cb * ca % n2
        assert (-a).ciphertext(be_secure=False) == pow(ca, -1, n2)
        k = rng.randrange(2, 2**40)
        assert (a * k).ciphertext(be_secure=False) == pow(ca, k, n2)
        assert paillier.mul_many([a], [k])[0].ciphertext(be_secure=False) == pow(ca, k, n2)
        assert (a * -k).ciphertext(be_secure=False) == pow(pow(ca, -1, n2), k, n2)
        assert a.decrease_exponent_to(-5).ciphertext(be_secure=False) == pow(ca, 16**2, n2)
        c = paillier.EncryptedNumber(pub, cb, -1)  # aligned to -3 before the product
        assert (a + c).ciphertext(be_secure=False) == ca * pow(cb, 16**2, n2) % n2
        assert priv.raw_decrypt(ca) == (pow(ca, lam, n2) - 1) // n * mu % n
        m, r = rng.randrange(n), unit() % n or 1
        assert pub.raw_encrypt(m, r_value=r) == (1 + m * n) * pow(r, n, n2) % n2
        assert priv.raw_decrypt(pub.raw_encrypt(m)) == m
        assert paillier.PaillierPublicKey(n).raw_encrypt(m, r_value=r) == (1 + m * n) * pow(r, n, n2) % n2
    # ints and floats, encrypted one by one and in a batch, decrypt one by one and in a batch
    xs = rand_ints(rng, 12) + rand_floats(rng, 12)
    enc = pub.encrypt_many(xs)
    assert [priv.decrypt(x) for x in enc] == xs == priv.decrypt_many([pub.encrypt(x) for x in xs])


BOTH_PRODUCTS = r"""
import json, random, sys
from tacit import paillier
d = json.loads(sys.stdin.read())
n = d["n"]; n2 = n * n
pub = paillier.PaillierPublicKey(n)
out = {"kind": paillier._mform_kind(pub), "ok": True}
rng = random.Random(d["seed"])
for _ in range(20):
    ca, cb, k = rng.randrange(1, n2), rng.randrange(1, n2), rng.randrange(2, 2**64)
    a, b = paillier.EncryptedNumber(pub, ca), paillier.EncryptedNumber(pub, cb)
    out["ok"] &= (a + b).ciphertext(be_secure=False) == ca * cb % n2
    out["ok"] &= paillier.sum_encrypted([a, b, b]).ciphertext(be_secure=False) == ca * cb * cb % n2
    out["ok"] &= (a * k).ciphertext(be_secure=False) == pow(ca, k, n2)
print(json.dumps(out))
"""


@pytest.mark.parametrize("bits", [512, 1024, 2048, 3072])
def test_both_montgomery_products_match_python(bits, keys):
    """The AVX-512 IFMA product (where the CPU has it) and OpenSSL's
    (TACIT_NO_IFMA=1) against Python's arithmetic mod n², on random units of keys of
    several sizes (each size is another number of 52-bit limbs)."""
    import os

    n = keys[0].n if bits == BITS else paillier.generate_paillier_keypair(n_length=bits)[0].n
    kinds = set()
    for env in [{}, {"TACIT_NO_IFMA": "1"}]:
        out = subprocess.run([sys.executable, "-c", BOTH_PRODUCTS], input=json.dumps({"n": n, "seed": bits}),
                             capture_output=True, text=True, check=True, env={**os.environ, **env})
        res = json.loads(out.stdout)
        assert res["ok"], res
        kinds.add(res["kind"])
    assert "openssl" in kinds


def test_non_units_are_refused(keys):
    """A ciphertext sharing a factor with n is not in Z*_{n²}: refused on the way in
    (and a party holding one already knows the factorisation)."""
    pub, priv = keys
    for c in [priv.p, priv.q * 12345, priv.p * priv.q * 7]:
        with pytest.raises(TacitError, match="not a unit"):
            paillier.EncryptedNumber(pub, c)
        with pytest.raises(TacitError, match="not a unit"):
            priv.raw_decrypt(c)
        with pytest.raises(TacitError, match="not a unit"):
            paillier.numbers_from_json(json.dumps({"public_key": {"g": pub.g, "n": pub.n}, "values": [[str(c), 0]]}))
    for c in [0, -1, pub.nsquare, pub.nsquare + 1]:
        with pytest.raises(TacitError, match="not in"):
            paillier.EncryptedNumber(pub, c)


def test_phe_docs_serialisation_format(keys):
    """phe's documentation, "Serialisation": {"public_key": {"g", "n"}, "values":
    [[ciphertext, exponent], ...]} both ways, as that example writes and reads it."""
    pub, priv = keys
    rng = random.Random(8)
    xs = rand_ints(rng, 5) + rand_floats(rng, 5)
    nums = pub.encrypt_many(xs)
    s = paillier.numbers_to_json(nums)
    d = json.loads(s)
    assert d["public_key"] == {"g": pub.n + 1, "n": pub.n}
    assert [e for _, e in d["values"]] == [x.exponent for x in nums]
    # the reading half of phe's example, done by hand
    key = paillier.PaillierPublicKey(n=int(d["public_key"]["n"]))
    assert priv.decrypt_many([paillier.EncryptedNumber(key, int(c), int(e)) for c, e in d["values"]]) == xs
    key2, back = paillier.numbers_from_json(s)
    assert key2 == pub and not key2.crt_encryption and priv.decrypt_many(back) == xs
    key3, back = paillier.numbers_from_json(s, public_key=pub)
    assert key3 is pub and priv.decrypt_many(back) == xs
    # n and g as strings are read too; wrong g, another key, garbage are refused
    d["public_key"] = {"g": str(pub.n + 1), "n": str(pub.n)}
    assert priv.decrypt_many(paillier.numbers_from_json(json.dumps(d))[1]) == xs
    other_pub, _ = paillier.generate_paillier_keypair(n_length=512)
    with pytest.raises(TacitError, match="another public key"):
        paillier.numbers_from_json(s, public_key=other_pub)
    d["public_key"]["g"] = str(pub.n + 2)
    with pytest.raises(TacitError, match="g must be n"):
        paillier.numbers_from_json(json.dumps(d))
    for bad in ["{", "[]", '{"public_key": {"n": 5}}', '{"public_key": {"g": 2, "n": 1}, "values": [["x", 0]]}']:
        with pytest.raises(TacitError, match="python-paillier JSON"):
            paillier.numbers_from_json(bad)
    with pytest.raises(ValueError, match="different public keys"):
        paillier.numbers_to_json([nums[0], other_pub.encrypt(1)])


# ---------------------------------------------------------------------------------
# phe
# ---------------------------------------------------------------------------------

def _phe():
    try:
        import phe  # noqa: F401
    except ImportError:
        pytest.skip("phe is not installed (pip install phe); scripts/test installs it")
    import phe

    return phe


def test_encoding_is_phes(keys):
    phe = _phe()
    pub, _ = keys
    ppub = paillier.to_phe(pub)
    rng = random.Random(4)
    values = rand_ints(rng, 20) + rand_floats(rng, 20) + [0.0, 1e-320, -3.75, 2**70, 1 / 3]
    for v in values:
        ours = paillier.EncodedNumber.encode(pub, v)
        theirs = phe.EncodedNumber.encode(ppub, v)
        assert (ours.encoding, ours.exponent) == (theirs.encoding, theirs.exponent), v
    for v, prec, maxe in [(1 / 3, 1e-6, None), (1234.5678, 0.01, None), (7, None, -3), (2.5, None, -20), (1e20, 1e5, None)]:
        ours = paillier.EncodedNumber.encode(pub, v, precision=prec, max_exponent=maxe)
        theirs = phe.EncodedNumber.encode(ppub, v, precision=prec, max_exponent=maxe)
        assert (ours.encoding, ours.exponent) == (theirs.encoding, theirs.exponent), (v, prec, maxe)
        assert ours.decode() == theirs.decode()


def test_interop_with_phe_both_ways():
    phe = _phe()
    ppub, ppriv = phe.generate_paillier_keypair(n_length=BITS)
    priv = paillier.from_phe(ppriv)
    pub = priv.public_key
    assert pub == paillier.from_phe(ppub)
    rng = random.Random(5)
    xs = rand_ints(rng, 5) + rand_floats(rng, 5)
    # phe encrypts, tacit decrypts and computes
    ours = paillier.from_phe([ppub.encrypt(x) for x in xs], public_key=pub)
    assert priv.decrypt_many(ours) == xs
    # tacit encrypts and computes, phe decrypts
    theirs = paillier.to_phe(paillier.add_many(pub.encrypt_many(xs), ours), public_key=ppub)
    assert [ppriv.decrypt(t) for t in theirs] == pytest.approx([2 * x for x in xs], rel=1e-12)
    # mixed arithmetic lands on the same values
    a, b = xs[0], xs[7]
    assert ppriv.decrypt(paillier.to_phe(pub.encrypt(a) * 3 + b, ppub)) == pytest.approx(ppriv.decrypt(ppub.encrypt(a) * 3 + b))
    assert paillier.to_phe(priv).p in (ppriv.p, ppriv.q)


def test_ciphertexts_are_phes_ciphertext_for_ciphertext():
    """The same operations on the same ciphertexts give phe's ciphertexts bit for bit:
    +, - with encrypted and plain numbers (exponent alignment included), scalar * and
    /, negation, decrease_exponent_to."""
    phe = _phe()
    ppub, ppriv = phe.generate_paillier_keypair(n_length=BITS)
    priv = paillier.from_phe(ppriv)
    pub = priv.public_key
    rng = random.Random(9)
    raw = lambda x: x.ciphertext(be_secure=False)
    for _ in range(6):
        a, b = rng.randint(-10**6, 10**6), rng.uniform(-1e3, 1e3)
        k, f = rng.randint(-99, 99), rng.uniform(-10, 10)
        pa, pb = ppub.encrypt(a), ppub.encrypt(b)
        ta, tb = paillier.from_phe([pa, pb], public_key=pub)
        pairs = [
            (ta + tb, pa + pb), (ta - tb, pa - pb), (tb + ta, pb + pa), (ta + k, pa + k), (tb + a, pb + a),
            (ta + f, pa + f), (k - ta, k - pa), (ta * k, pa * k), (tb * f, pb * f), (ta / 4, pa / 4),
            (-tb, pb * -1), (ta.decrease_exponent_to(-3), pa.decrease_exponent_to(-3)),
            (paillier.add_many([ta], [tb])[0], pa + pb), (paillier.mul_many([tb], [k])[0], pb * k),
        ]
        for ours, theirs in pairs:
            assert (raw(ours), ours.exponent) == (raw(theirs), theirs.exponent)
            assert priv.decrypt(ours) == ppriv.decrypt(theirs)


# ---------------------------------------------------------------------------------
# Two processes: A holds the key; B computes a weighted sum on A's ciphertexts.
# ---------------------------------------------------------------------------------

PARTY_B = r"""
import json, sys
from tacit import paillier
msg = json.loads(sys.stdin.read())
pub = paillier.PaillierPublicKey.from_json(msg["public_key"])
assert not pub.crt_encryption
xs = [paillier.EncryptedNumber.from_json(pub, c) for c in msg["values"]]
weights = msg["weights"]
total = paillier.sum_encrypted(paillier.mul_many(xs, weights)) + pub.encrypt(msg["offset"])
print(json.dumps({"result": total.to_json()}))
"""


def test_two_processes_weighted_sum(keys):
    pub, priv = keys
    rng = random.Random(6)
    xs = rand_ints(rng, 8, 10**6) + rand_floats(rng, 4)
    weights = [rng.randint(-9, 9) for _ in xs]
    offset = rng.randint(-100, 100)
    msg = {"public_key": pub.to_json(), "values": [c.to_json() for c in pub.encrypt_many(xs)], "weights": weights, "offset": offset}
    out = subprocess.run([sys.executable, "-c", PARTY_B], input=json.dumps(msg), capture_output=True, text=True, check=True)
    result = paillier.EncryptedNumber.from_json(pub, json.loads(out.stdout)["result"])
    want = sum(w * x for w, x in zip(weights, xs)) + offset
    assert priv.decrypt(result) == pytest.approx(want, rel=1e-9)


# ---------------------------------------------------------------------------------
# The examples of README.md and docs/python.md print what their comments say.
# ---------------------------------------------------------------------------------

def _python_block(path, after):
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, path), encoding="utf-8").read()
    start = text.index("```python", text.index(after)) + len("```python")
    return text[start:text.index("```", start)]


@pytest.mark.parametrize("path,after", [("README.md", "Paillier, with python-paillier's names"), ("docs/python.md", "## `tacit.paillier`")])
def test_documented_paillier_example(path, after, capsys):
    code = _python_block(path, after)
    want = [line.split("#", 1)[1].strip() for line in code.splitlines() if line.startswith("print(") and "#" in line]
    exec(compile(code, path, "exec"), {})
    got = capsys.readouterr().out.splitlines()
    assert len(got) == len([line for line in code.splitlines() if line.startswith("print(")])
    printed_with_comment = [g for g, line in zip(got, [l for l in code.splitlines() if l.startswith("print(")]) if "#" in line]
    assert printed_with_comment == want
