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
``to_json`` / ``from_json`` read and write python-paillier's JSON (pheutil's format).
"""

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
    "sum_encrypted", "from_phe", "to_phe", "TacitError", "DEFAULT_KEYSIZE",
]
