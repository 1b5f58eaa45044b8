import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

from . import TacitError as TacitError

_Path = Union[str, "os.PathLike[str]"]

class Server:
    """The ``lwe`` PIR server over a table of equal-length rows.

    The constructor lays out the table and computes the hint ``H = D·A`` once (all
    cores, GIL released). ``seed`` (16 bytes) fixes the public matrix ``A``; random
    by default.
    """

    def __init__(self, rows: Sequence[bytes], *, seed: Optional[bytes] = None) -> None: ...
    @staticmethod
    def from_bytes(data: bytes, row_bytes: int, *, seed: Optional[bytes] = None) -> "Server":
        """Rows of ``row_bytes`` bytes, row ``i`` at offset ``i*row_bytes``."""
    @staticmethod
    def from_file(path: _Path, row_bytes: int, *, seed: Optional[bytes] = None) -> "Server":
        """A table file in the format of ``tacit pir table gen`` (raw rows)."""
    def hint(self) -> bytes:
        """The hint every client downloads once per table; it carries the parameters. Public."""
    def answer(self, query: bytes) -> bytes:
        """Answers one query (refused when made for another table id)."""
    def answer_many(self, queries: Sequence[bytes]) -> List[bytes]:
        """Answers many queries in one pass over the table."""
    def update_row(self, index: int, row: bytes) -> bytes:
        """Replaces a row; returns the hint update clients apply (the table id changes)."""
    @property
    def rows(self) -> int: ...
    @property
    def row_bytes(self) -> int: ...
    @property
    def table_id(self) -> str:
        """SHA-256 over the hint (hex); changes with every update."""
    def params(self) -> Dict[str, Union[int, float, str]]:
        """rows, row_bytes, log_p, slots, cols, matrix_rows, hint/query/answer_bytes, failure_log2."""

class QueryState:
    """A query's secret (zeroized when dropped, never printed) and the row asked for."""

    @property
    def row(self) -> Optional[int]: ...

class Client:
    """The ``lwe`` PIR client of one table, made from the server's hint."""

    def __init__(self, hint: bytes) -> None: ...
    def query(self, index: int) -> Tuple[bytes, QueryState]:
        """A query for row ``index`` (fresh LWE secret) and the state to decode its answer."""
    def query_weighted(self, entries: Sequence[Tuple[int, int]]) -> Tuple[bytes, QueryState]:
        """A weighted query over rows of one slot (TracEdge's Multiple Row Selection)."""
    def decode(self, answer: bytes, state: Optional[QueryState] = None) -> bytes:
        """The row from the answer; ``state`` defaults to this client's latest query."""
    def decode_symbols(self, answer: bytes, state: Optional[QueryState] = None) -> List[int]:
        """The decoded symbols mod ``2**log_p`` (a weighted query's weighted sum)."""
    def apply_update(self, update: bytes) -> None:
        """Applies ``Server.update_row``'s hint update (checked against the table id)."""
    @property
    def rows(self) -> int: ...
    @property
    def row_bytes(self) -> int: ...
    @property
    def table_id(self) -> str: ...
    def params(self) -> Dict[str, Union[int, float, str]]: ...

class AuthResult:
    """A successful TracEdge authentication."""

    outcome: str  # "authenticated"
    epoch: int
    expires_ms: int
    audited_rows: List[int]
    hint_cached: bool
    log_entries_fetched: int
    sessions: int
    @property
    def session_key(self) -> bytes:
        """The 32-byte session key both sides hold (secret)."""
    @property
    def session_key_fingerprint(self) -> str:
        """First 8 bytes of SHA-256 of the session key, hex (what the CLI prints)."""
    @property
    def times(self) -> Dict[str, float]: ...

class EnrollResult:
    row: int
    rows: int
    log_entries: int

class NotEnrolled(TacitError):
    """The server's signed table log removed this subscriber's key (``row``, ``log_entry``)."""

    row: int
    log_entry: int

class Refused(TacitError):
    """The server refused (``code``: "TableChanged", "Busy" or "Other"; ``reason``)."""

    code: str
    reason: str

class ServerCaught(TacitError):
    """The server was caught misbehaving: ``proof`` (bytes, for ``verify_proof`` or
    ``tacit pir verify-proof``) and ``finding`` (what it proves)."""

    proof: bytes
    finding: str

def enroll(
    address: str,
    pin: str,
    server_key: str,
    out: _Path,
    *,
    label: str = "",
    proof: Optional[_Path] = None,
) -> EnrollResult:
    """Registers with an open-enrolment server and writes the identity file ``out``."""

def authenticate(
    identity_file: _Path,
    *,
    audits: int = 4,
    accept_paper_commitment: bool = False,
    hint_cache: Optional[_Path] = None,
    no_hint_cache: bool = False,
    retries: int = 1,
    timeout: float = 120.0,
    proof: Optional[_Path] = None,
) -> AuthResult:
    """Authenticates anonymously as ``tacit pir client auth``; raises ServerCaught,
    NotEnrolled, Refused or TacitError otherwise."""

def verify_proof(proof: bytes, *, server_key: Optional[str] = None) -> str:
    """Checks a proof of misbehaviour offline; returns the finding."""
