"""Which OS this process serves, chosen once (as trio's `_subprocess_platform` chooses).

The shared hall (every module of `supervisor/` outside `linux/` and `macos/`) asks this
module, never `sys.platform`, so that a spec means the same on both and a test flips
one value (`SYSTEM`) to stand on the other OS. This module imports nothing of the
project: every stage may ask it without a circle. The backend each command is served
by is chosen in `supervisor/platform/backends.py`, the one module of the hall that
imports `supervisor/linux/` or `supervisor/macos/`.
"""

from __future__ import annotations

import sys
from typing import Literal

System = Literal["linux", "macos"]

# Anything but a Mac is served as Linux: it is the only other backend, and its launch
# refuses what that kernel cannot do (fail closed).
SYSTEM: System = "macos" if sys.platform == "darwin" else "linux"


def is_macos() -> bool:
    """Read at each call, so that a test's flip of `SYSTEM` holds everywhere."""
    return SYSTEM == "macos"
