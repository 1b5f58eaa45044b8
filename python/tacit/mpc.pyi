import os
from typing import Dict, List, Optional, Sequence, Tuple, Union, overload

from . import TacitError as TacitError

_Path = Union[str, "os.PathLike[str]"]
# One input value: an int (wire k = bit k), a str of 0/1 (first character = first
# wire, as `tacit mpc run --input`), bytes (a big-endian integer, the convention of
# the Bristol AES/SHA-256 circuits) or a sequence of bits in wire order.
Value = Union[int, str, bytes, Sequence[Union[int, bool]]]

class Circuit:
    """A Boolean circuit (immutable): gates in topological order over numbered wires."""

    @staticmethod
    def from_bristol(text: str) -> "Circuit":
        """Parses Bristol Fashion text."""
    @staticmethod
    def from_file(path: _Path) -> "Circuit":
        """Reads a Bristol Fashion file (as `tacit mpc run --circuit`)."""
    def to_bristol(self) -> str: ...
    @property
    def input_widths(self) -> List[int]: ...
    @property
    def output_widths(self) -> List[int]: ...
    @property
    def stats(self) -> Dict[str, int]:
        """gates, and_gates, xor_gates, inv_gates, other_gates, and_depth, wires."""
    @property
    def digest(self) -> str:
        """SHA-256 of the canonical encoding (hex): what the two parties compare."""
    @overload
    def eval(self, inputs: Sequence[Value]) -> List[int]: ...
    @overload
    def eval(self, inputs: Sequence[Value], *, bits: bool) -> List: ...
    def eval(self, inputs, *, bits=False):
        """Evaluates in the clear; one int per output (wire k = bit k), or bit lists with bits=True."""

class Word:
    """Little-endian bits of a circuit under construction (wires or constants)."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: Union[int, slice]) -> "Word": ...
    @staticmethod
    def concat(*words: "Word") -> "Word":
        """The words' bits one after the other (the first lowest)."""

class Builder:
    """Builds a circuit with tacit-mpc's builder: constants fold, dead gates go."""

    def __init__(self) -> None: ...
    def input(self, width: int) -> Word:
        """The next input value (numbered in declaration order)."""
    def const(self, value: Value, width: int) -> Word: ...
    def xor(self, a: Word, b: Word) -> Word: ...
    def and_(self, a: Word, b: Word) -> Word: ...
    def or_(self, a: Word, b: Word) -> Word: ...
    def not_(self, a: Word) -> Word: ...
    def add(self, a: Word, b: Word) -> Word:
        """a + b, one bit wider than the wider operand."""
    def add_mod(self, a: Word, b: Word) -> Word:
        """a + b mod 2**n, n the wider width."""
    def sub(self, a: Word, b: Word) -> Tuple[Word, Word]:
        """(a - b mod 2**n, borrow): borrow is 1 when a < b."""
    def mul(self, a: Word, b: Word) -> Word:
        """a * b, len(a) + len(b) bits."""
    def lt(self, a: Word, b: Word) -> Word: ...
    def le(self, a: Word, b: Word) -> Word: ...
    def gt(self, a: Word, b: Word) -> Word: ...
    def ge(self, a: Word, b: Word) -> Word: ...
    def eq(self, a: Word, b: Word) -> Word: ...
    def mux(self, s: Word, zero: Word, one: Word) -> Word:
        """one if s else zero (s: 1 bit)."""
    def finish(self, outputs: Sequence[Word]) -> Circuit:
        """The circuit whose output value i is outputs[i]; the builder is used up."""

class Listener:
    """Party a's bound socket (TLS with the store's key, or plain TCP if asked)."""

    def __init__(
        self,
        address: str,
        *,
        store: Optional[_Path] = None,
        pin: Union[None, str, Sequence[str]] = None,
        plain_tcp: bool = False,
    ) -> None: ...
    @property
    def address(self) -> str:
        """The bound "host:port" (the chosen port for port 0)."""
    @property
    def fingerprint(self) -> Optional[str]:
        """This party's key, for party b's pin= (None on plain TCP)."""

class RunResult:
    """A GMW run as this party saw it."""

    party: str
    triples_source: str
    channel: str
    peer_key: Optional[str]
    peer_key_how: str
    @property
    def outputs(self) -> List[int]: ...
    @property
    def output_bits(self) -> List[List[bool]]: ...
    @property
    def output_strings(self) -> List[str]: ...
    @property
    def stats(self) -> Dict[str, float]: ...

def load(source: Union[_Path, str]) -> Circuit:
    """A Bristol Fashion file (a path) or text (a str with a line break)."""

def shipped(name: str) -> Circuit:
    """"aes_128", "sha256" or "adder64" from the Bristol Fashion set."""

def run(
    circuit: Union[Circuit, _Path, str],
    party: str,
    inputs: Union[Value, Sequence[Value], None],
    *,
    listen: Union[None, str, Listener] = None,
    connect: Optional[str] = None,
    pin: Union[None, str, Sequence[str]] = None,
    store: Optional[_Path] = None,
    plain_tcp: bool = False,
    owners: Optional[str] = None,
    triples: Optional[str] = None,
    token: Optional[str] = None,
    token_pin: Optional[str] = None,
    pool: Optional[_Path] = None,
    trust_ca: Optional[str] = None,
    accept_software_token: bool = False,
    timeout: Optional[float] = None,
) -> RunResult:
    """Runs the circuit under GMW with a peer process, as `tacit mpc run`."""

def key(store: Optional[_Path] = None) -> str:
    """This store's key for GMW sessions (as `tacit mpc key`)."""

def token_host_key(store: Optional[_Path] = None) -> str:
    """This store's token link key (as `tacit mpc token host-key`)."""
