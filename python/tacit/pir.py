"""Private information retrieval: tacit's ``lwe`` PIR and the TracEdge subscriber.

Sans-I/O, as ``tacit pir query --backend lwe`` runs it in one process: the objects
make and take ``bytes`` (the wire encodings of ``docs/wire.md``), the caller carries
them::

    from tacit import pir
    server = pir.Server([b"row zero", b"row one!", b"row two!"])   # equal lengths
    client = pir.Client(server.hint())          # the hint: once per table, public
    query, state = client.query(1)              # the server cannot tell which row
    answer = server.answer(query)
    assert client.decode(answer, state) == b"row one!"

``authenticate(identity_file)`` is the TracEdge subscriber of ``tacit pir client
auth`` against ``tacit pir server serve`` (``enroll`` makes the identity file); a
server caught cheating raises :class:`ServerCaught` carrying the proof.
"""

from ._native import TacitError
from ._native import pir as _pir

Server = _pir.Server
Client = _pir.Client
QueryState = _pir.QueryState
AuthResult = _pir.AuthResult
EnrollResult = _pir.EnrollResult
enroll = _pir.enroll
authenticate = _pir.authenticate
verify_proof = _pir.verify_proof
NotEnrolled = _pir.NotEnrolled
Refused = _pir.Refused
ServerCaught = _pir.ServerCaught

__all__ = [
    "Server",
    "Client",
    "QueryState",
    "AuthResult",
    "EnrollResult",
    "enroll",
    "authenticate",
    "verify_proof",
    "NotEnrolled",
    "Refused",
    "ServerCaught",
    "TacitError",
]
