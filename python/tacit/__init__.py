"""tacit: privacy-preserving discovery and matching, from Python.

Modules:

* :mod:`tacit.psi` -- malicious-secure private set intersection as sans-I/O objects
  (``Sender``, ``Receiver``; messages are ``bytes``) and a client of ``tacit psi serve``.
* :mod:`tacit.paillier` -- the Paillier cryptosystem with python-paillier's (``phe``)
  names, CRT decryption, CRT encryption when the private key is known, and batch
  operations on all cores.
* :mod:`tacit.pir` -- the ``lwe`` PIR client and server as sans-I/O objects, and the
  TracEdge subscriber (``enroll``, ``authenticate``) against ``tacit pir server serve``.
* :mod:`tacit.mpc` -- Bristol circuits, a circuit builder, clear evaluation, and GMW
  between two processes (OT-extension or token triples).

Errors are :class:`TacitError` (a ``ValueError``) with the one-line message the
``tacit`` command prints, or the exception python-paillier raises in the same case.
"""

from ._native import TacitError
from . import paillier, psi
from . import mpc, pir

__version__ = "0.1.0"
__all__ = ["TacitError", "paillier", "psi", "pir", "mpc", "__version__"]
