"""Which inner confiner a launch starts: the compiled one, or its Python fallback.

The compiled inner (`inner/confine.c`) is built by setup.py at install, linked
statically, into the inner package's own folder (`inner/confine`), which the plan mounts
read-only inside: it needs no interpreter and no C library there, and costs what bwrap
costs (bare bwrap with it measured 0.90-1.02x bare bwrap; with the Python inner's
interpreter and imports, 2.3x). Both read one configuration (inner/config.py).

The Python inner (`python -I -S`, inner/main.py) runs instead:
- where nothing compiled it (no C compiler or no static C library at install);
- where it cannot run from where it is: its file system mounted noexec, or, run by root,
  not executable by others (the sandbox's own uid runs bwrap, and so the inner);
- for a harness's file operation (inner/fileop.py is the Python inner's alone);
- when `LNK_INNER=python` asks (the tests run both).
`lnk sandbox check` says which one a run gets here, and why.
"""

from __future__ import annotations

import os
import stat

from ..installation import inner_source

BINARY = "confine"  # in the inner package's folder, next to its Python modules
SWITCH = "LNK_INNER"
COMPILED = "compiled"
PYTHON = "python"


def compiled_path(source: str | None = None) -> str | None:
    """The compiled inner's host path when it can run from there, else None."""
    return None if compiled_problem(source) else os.path.join(
        source or inner_source(), BINARY)


def compiled_problem(source: str | None = None) -> str | None:
    """Why the compiled inner cannot run here, or None when it can."""
    path = os.path.join(source or inner_source(), BINARY)
    try:
        info = os.stat(path)
    except OSError:
        return "it was not built (setup.py needs a C compiler and a static C library)"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a file"
    # Run by root, the sandbox's own uid runs bwrap and the inner: others must be able to.
    if os.geteuid() == 0 and not info.st_mode & stat.S_IXOTH:
        return f"{path} is not executable by others ({stat.filemode(info.st_mode)})"
    if os.geteuid() != 0 and not os.access(path, os.X_OK):
        return f"{path} is not executable by this user"
    try:
        if os.statvfs(path).f_flag & os.ST_NOEXEC:
            return f"{path} is on a file system mounted noexec"
    except OSError as err:
        return f"{path}: {err.strerror}"
    return None


def choose(*, file_op: bool = False) -> str:
    """COMPILED or PYTHON, for a run (`file_op`: a harness's file operation)."""
    if file_op or os.environ.get(SWITCH) == PYTHON or compiled_path() is None:
        return PYTHON
    return COMPILED


def described() -> str:
    """Which inner a run gets here, and why, as `check` says it."""
    if os.environ.get(SWITCH) == PYTHON:
        return f"python ({SWITCH}=python)"
    problem = compiled_problem()
    if problem is not None:
        return f"python (the compiled inner cannot run: {problem})"
    return "compiled (C, built by setup.py; a harness's file operations use the Python one)"
