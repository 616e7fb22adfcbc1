"""The lnk-sandbox that is running: its base interpreter and the inner confiner's package.

Both backends start this interpreter inside (Linux: the inner confiner, from its
package mounted read-only; macOS: a file operation's script), so it is the real base
interpreter, never a venv link or a shim a sandbox could have rewritten.
"""

from __future__ import annotations

import os
import sys


def interpreter() -> tuple[str, str]:
    """The real base interpreter (never a venv link or a shim) and its prefix."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base), os.path.realpath(sys.base_prefix)


def inner_source() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "inner")
