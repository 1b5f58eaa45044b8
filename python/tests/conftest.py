import os
import shutil

import pytest


def tacit_binary():
    """The `tacit` binary for interop tests: $TACIT_BIN, else the cargo build of this
    clone ($CARGO_TARGET_DIR or target/, debug then release), else PATH."""
    env = os.environ.get("TACIT_BIN")
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    for profile in ("debug", "release"):
        p = os.path.join(target, profile, "tacit")
        if os.path.exists(p):
            return p
    return shutil.which("tacit")


@pytest.fixture(scope="session")
def tacit_bin():
    b = tacit_binary()
    if not b:
        pytest.skip("no tacit binary: set TACIT_BIN or run `cargo build -p tacit-cli` (scripts/test does)")
    return b
