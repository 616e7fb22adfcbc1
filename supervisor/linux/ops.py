"""What the Linux launch plan is made of: mount operations in order, and the plan itself.

Plain data, shared by the stages that build the plan (plan.py, mounts.py), the run's own
files that ask for mounts (gitrun.py), and those that read it (bwrap.py, confine.py,
mount_watch.py, pinning).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from .placeholders import Wanted

OpKind = Literal["ro-bind", "bind", "tmpfs", "symlink", "dev", "proc", "hide-file", "remount-ro"]

# Where the inner confiner's package is mounted inside, read-only; its parent goes on the
# interpreter's sys.path (`-I -S` shows neither site-packages nor the working directory).
INNER_PARENT = "/run/lnk-sandbox"


class MountOp(NamedTuple):
    """One bwrap operation. `source` is the host path pinned at launch (binds), or the
    link's text (symlink); `reason` says which rule asked for it. `idmapped`: run by
    root, a bind the sandbox sees as its own (idmapped.py): root's files there are the
    sandbox's, what it makes there is root's. `size` and `mode`: a tmpfs's size in
    bytes and its permissions (None: the kernel's default, and bwrap's 0755)."""

    kind: OpKind
    dest: str
    source: str | None = None
    reason: str = ""
    idmapped: bool = False
    size: int = 0  # a tmpfs's size in bytes (the run's limits); 0: the kernel's default
    mode: int | None = None


class LaunchPlan(NamedTuple):
    """What `bwrap.py` turns into arguments: mounts in order, and the rest of the setup."""

    ops: tuple[MountOp, ...]
    chdir: str
    root_mode: bool
    share_net: bool
    interpreter: str
    notes: tuple[str, ...] = ()
    holds: tuple[Wanted, ...] = ()
    inner_parent: str = INNER_PARENT
    unhidden: tuple[str, ...] = ()  # hidden places missing at launch (HostLayout)
    compiled_inner: bool = False  # bwrap runs the compiled inner, not `interpreter`
