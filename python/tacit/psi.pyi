from typing import List, Optional, Sequence, Union

from . import TacitError as TacitError

Item = Union[str, bytes]

class Sender:
    """The PSI sender: holds a set, answers requests, learns nothing of the receiver's items."""

    def __init__(
        self,
        items: Sequence[Item],
        *,
        max_receiver: int = 10,
        max_sender: int = 10_000,
        group: str = "ristretto255",
        semi_honest: bool = False,
        reuse: str = "fresh",
        lambda_: int = 40,
    ) -> None: ...
    def respond(self, request: bytes) -> bytes:
        """Answers a receiver's request. With reuse="fresh" a Sender answers once."""

class Receiver:
    """The PSI receiver: learns which of its items the sender holds. One session per object."""

    def __init__(
        self,
        items: Sequence[Item],
        *,
        max_receiver: int = 10,
        max_sender: int = 10_000,
        group: str = "ristretto255",
        semi_honest: bool = False,
        lambda_: int = 40,
    ) -> None: ...
    def request(self) -> bytes:
        """The request to send to the sender."""
    def intersection(self, response: bytes) -> List[Item]:
        """Verifies the response and returns the common items as given, in input order."""

def query(
    address: str,
    items: Sequence[Item],
    *,
    pin: Optional[str] = None,
    plain_tcp: bool = False,
    max_receiver: int = 10,
    max_sender: int = 10_000,
    group: str = "ristretto255",
    semi_honest: bool = False,
    lambda_: int = 40,
    timeout: float = 30.0,
) -> List[Item]:
    """Queries `tacit psi serve` at address ("host:port"); TLS with a pinned key, or plain TCP if asked."""
