"""lnk-sandbox's supervisor: the outer process that validates a spec, resolves its
grants, starts bubblewrap (or sandbox-exec) and stays its parent for the whole run.

The Python API for harnesses (see `supervisor.api`), loaded on first use so that the
command line's start stays lean:

    import supervisor
    status = supervisor.run(["make", "test"], spec="spec.toml", yes=True)
    wrapped = supervisor.wrap(["make", "test"], spec="spec.toml")   # .command_line
    supervisor.describe("spec.toml"), supervisor.check("spec.toml")  # plain dicts
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the command line's start several ms
    from typing import Any

__all__ = ["check", "describe", "exec_saved", "run", "wrap"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'supervisor' has no attribute {name!r}")
