"""Boolean circuits and two-party GMW (tacit's ``mpc``).

Load a Bristol Fashion circuit or build one, evaluate it in the clear, and run it
under GMW between two processes, with multiplication triples from OT extension
(default) or from a trusted token (``tacit mpc token serve``)::

    from tacit import mpc
    b = mpc.Builder()
    x, y = b.input(32), b.input(32)          # input 0 is party a's, input 1 party b's
    millionaires = b.finish([b.lt(x, y)])
    assert millionaires.eval([5, 7]) == [1]

    # process 1, party a: listens and holds x
    listener = mpc.Listener("0.0.0.0:7900")
    print(listener.fingerprint)                 # give it to party b
    r = mpc.run(millionaires, "a", [5], listen=listener)
    # process 2, party b: connects, pins a's key, holds y
    r = mpc.run(millionaires, "b", [7], connect="host-a:7900", pin="<a's fingerprint>")
    r.outputs                                   # [1] on both sides: 5 < 7

The channel is ``tacit mpc run``'s: TLS 1.3 with each party's key from its tacit
store (``key()`` prints it, as ``tacit mpc key`` does), the listening party's key
pinned (``pin=``) or recorded on first use; plain TCP only with ``plain_tcp=True``.
GMW is secure against a peer that follows the protocol (semi-honest); see
``docs/mpc.md`` for what a deviating peer can do.
"""

from ._native import TacitError
from ._native import mpc as _mpc

Circuit = _mpc.Circuit
Word = _mpc.Word
Builder = _mpc.Builder
Listener = _mpc.Listener
RunResult = _mpc.RunResult
load = _mpc.load
shipped = _mpc.shipped
run = _mpc.run
key = _mpc.key
token_host_key = _mpc.token_host_key

__all__ = [
    "Circuit",
    "Word",
    "Builder",
    "Listener",
    "RunResult",
    "load",
    "shipped",
    "run",
    "key",
    "token_host_key",
    "TacitError",
]
