"""The Paillier cryptosystem with python-paillier's (``phe``) API.

::

    from tacit import paillier
    public_key, private_key = paillier.generate_paillier_keypair()   # 3072 bits
    a, b = public_key.encrypt(3.5), public_key.encrypt(-2)
    assert private_key.decrypt(a + b * 4 + 1) == -3.5

Same names and number encoding as phe (``EncodedNumber``: ``mantissa * 16**exponent``),
so code written for phe runs unchanged after ``from tacit import paillier as phe``
-- and faster: CRT decryption, CRT encryption when the private key is in the process,
and the ``*_many`` batch functions that release the GIL and use every core.
``from_phe`` / ``to_phe`` convert keys and numbers from and to phe objects;
``to_json`` / ``from_json`` read and write python-paillier's JSON: pheutil's JWK-like
format for keys and numbers, and ``numbers_to_json`` / ``numbers_from_json`` the format
of phe's documentation ("Serialisation": a public key and a list of numbers).
"""

import json as _json

from ._native import TacitError
from ._native import paillier as _p

PaillierPublicKey = _p.PaillierPublicKey
PaillierPrivateKey = _p.PaillierPrivateKey
EncryptedNumber = _p.EncryptedNumber
EncodedNumber = _p.EncodedNumber
generate_paillier_keypair = _p.generate_paillier_keypair
add_many = _p.add_many
mul_many = _p.mul_many
sum_encrypted = _p.sum_encrypted
_native_floor_mulmod = _p._floor_mulmod  # bench/python only
_mform_kind = _p._mform_kind  # which Montgomery product a key uses: "avx512-ifma" or "openssl"

DEFAULT_KEYSIZE = 3072


class PaillierPrivateKeyring(dict):
    """phe's keyring: private keys by public key; ``decrypt`` finds the right one."""

    def __init__(self, private_keys=None):
        super().__init__()
        for key in private_keys or []:
            self.add(key)

    def add(self, private_key):
        if not isinstance(private_key, PaillierPrivateKey):
            raise TypeError("private_key should be of type PaillierPrivateKey, not %s" % type(private_key))
        self[private_key.public_key] = private_key

    def decrypt(self, encrypted_number):
        return self[encrypted_number.public_key].decrypt(encrypted_number)


def numbers_to_json(encrypted_numbers):
    """A list of ``EncryptedNumber`` (one key) as the JSON of phe's documentation,
    section "Serialisation"::

        {"public_key": {"g": <int>, "n": <int>},
         "values": [["<ciphertext>", <exponent>], ...]}

    Each ciphertext is re-randomised first if it came from arithmetic (as
    ``ciphertext()`` does)."""
    numbers = list(encrypted_numbers)
    if not numbers:
        raise ValueError("an empty list has no public key to write")
    key = numbers[0].public_key
    for x in numbers:
        if not isinstance(x, EncryptedNumber):
            raise TypeError("numbers_to_json takes EncryptedNumber, not %s" % type(x).__name__)
        if x.public_key != key:
            raise ValueError("Attempted to serialise numbers encrypted against different public keys!")
    return _json.dumps({
        "public_key": {"g": key.g, "n": key.n},
        "values": [(str(x.ciphertext()), x.exponent) for x in numbers],
    })


def numbers_from_json(s, public_key=None):
    """Reads the JSON of :func:`numbers_to_json` (phe's documentation, "Serialisation";
    ``n`` and ``g`` as numbers or strings, ``g`` must be ``n + 1``) and returns
    ``(public_key, [EncryptedNumber, ...])``. With ``public_key`` (for example one that
    came with its private key, so that it encrypts with the CRT) the JSON's key must be
    that key. Every ciphertext is checked to lie in ``Z*_{n²}``."""
    try:
        d = _json.loads(s)
        pk = d["public_key"]
        n, g = int(pk["n"]), int(pk["g"])
        values = [(int(c), int(e)) for c, e in d["values"]]
    except (ValueError, KeyError, TypeError) as e:
        raise TacitError("python-paillier JSON: not phe's serialised numbers (%s)" % e) from None
    if g != n + 1:
        raise TacitError("python-paillier JSON: g must be n + 1")
    # the bound EncryptedNumber.from_json applies to "e" (an exponent near 2**63 made
    # later arithmetic overflow)
    if any(abs(e) > 4096 for _, e in values):
        raise TacitError('python-paillier JSON: an exponent is not a small integer (|e| <= 4096)')
    if public_key is None:
        public_key = PaillierPublicKey(n)
    elif public_key.n != n:
        raise TacitError("python-paillier JSON: the numbers were encrypted under another public key")
    return public_key, [EncryptedNumber(public_key, c, e) for c, e in values]


def from_phe(obj, public_key=None):
    """Converts a phe ``PaillierPublicKey``, ``PaillierPrivateKey`` or
    ``EncryptedNumber`` (or a list of them) to tacit's. A number needs its key: the
    converted ``public_key`` if given (faster, and CRT encryption when it came from a
    private key), else its own key converted."""
    if isinstance(obj, (list, tuple)):
        return [from_phe(o, public_key) for o in obj]
    kind = type(obj).__name__
    if kind == "PaillierPublicKey" and hasattr(obj, "nsquare"):
        return PaillierPublicKey(int(obj.n))
    if kind == "PaillierPrivateKey" and hasattr(obj, "p"):
        return PaillierPrivateKey(PaillierPublicKey(int(obj.public_key.n)), int(obj.p), int(obj.q))
    if kind == "EncryptedNumber" and hasattr(obj, "ciphertext"):
        key = public_key if public_key is not None else from_phe(obj.public_key)
        if int(key.n) != int(obj.public_key.n):
            raise ValueError("the number is encrypted under another public key")
        return EncryptedNumber(key, int(obj.ciphertext(be_secure=False)), int(obj.exponent))
    raise TypeError("from_phe takes phe's PaillierPublicKey, PaillierPrivateKey or EncryptedNumber, not %s" % kind)


def to_phe(obj, public_key=None):
    """Converts tacit's keys and numbers (or a list of them) to phe objects (phe must
    be installed). A number gets ``public_key`` (a phe key) if given, else a new phe
    key with its modulus."""
    import phe

    if isinstance(obj, (list, tuple)):
        return [to_phe(o, public_key) for o in obj]
    if isinstance(obj, PaillierPublicKey):
        return phe.PaillierPublicKey(obj.n)
    if isinstance(obj, PaillierPrivateKey):
        return phe.PaillierPrivateKey(phe.PaillierPublicKey(obj.public_key.n), obj.p, obj.q)
    if isinstance(obj, EncryptedNumber):
        key = public_key if public_key is not None else phe.PaillierPublicKey(obj.public_key.n)
        return phe.EncryptedNumber(key, obj.ciphertext(), obj.exponent)
    raise TypeError("to_phe takes tacit's PaillierPublicKey, PaillierPrivateKey or EncryptedNumber, not %s" % type(obj).__name__)


__all__ = [
    "PaillierPublicKey", "PaillierPrivateKey", "EncryptedNumber", "EncodedNumber",
    "PaillierPrivateKeyring", "generate_paillier_keypair", "add_many", "mul_many",
    "sum_encrypted", "from_phe", "to_phe", "numbers_to_json", "numbers_from_json",
    "TacitError", "DEFAULT_KEYSIZE",
]
