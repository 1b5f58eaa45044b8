from . import paillier as paillier, psi as psi
from . import mpc as mpc, pir as pir

__version__: str

class TacitError(ValueError):
    """An error of tacit: bad input, a deviating peer, a network failure."""
