"""Private set intersection (tacit's DH-PSI; malicious-secure by default).

The receiver learns which of its items the sender holds; the sender learns nothing
about the receiver's items. Sans-I/O, as OpenMined PSI's API: the objects make and
take ``bytes``, the caller carries them::

    from tacit import psi
    receiver = psi.Receiver(["alice@example.com", "15551230000"])
    sender = psi.Sender(["bob@example.com", "15551230000"])
    request = receiver.request()            # receiver -> sender
    response = sender.respond(request)      # sender -> receiver
    assert receiver.intersection(response) == ["15551230000"]

Both sides pad to the bounds ``max_receiver`` (default 10) and ``max_sender``
(default 10 000) and must use the same bounds, ``group`` and ``semi_honest``.
``query(address, items, pin=...)`` runs the receiver against ``tacit psi serve``.
"""

from ._native import TacitError
from ._native import psi as _psi

Sender = _psi.Sender
Receiver = _psi.Receiver
query = _psi.query

__all__ = ["Sender", "Receiver", "query", "TacitError"]
