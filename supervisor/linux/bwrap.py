"""The launch plan emitted as bubblewrap arguments, and what this bwrap can do.

Facts (bubblewrap 0.8.0 as Debian ships it; see the reference, §5):
- `--bind-fd`/`--ro-bind-fd` are not in upstream 0.8.0: Debian backported them
  (CVE-2024-42472); upstream has them from 0.10.0. Without them a grant would be bound
  by path, which a writable ancestor could redirect, so their absence refuses the launch.
- bwrap binds /proc/self/fd/N: an fd it did not inherit may be the /proc it opened itself,
  and it then binds procfs silently. Every fd named here is made inheritable by launch.
- `--json-status-fd` writes `{"child-pid": N, ...}` once the sandbox exists and
  `{"exit-code": N}` when the command ends (128+N for a signal); a setup failure exits 1
  with neither exit-code line, which is how launch tells bwrap's failure from the
  command's own status 1.
- Run by root, bwrap keeps every capability inside unless told `--cap-drop ALL`, and the
  bounding set stays full unless it also has a user namespace of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

from ..errors import LaunchError
from .inner_program import BINARY
from .plan import INNER_PARENT, LaunchPlan, MountOp


# The inner confiner's entry: `-I -S` keep the interpreter from reading the environment,
# site-packages or the working directory; the package is on a fixed read-only path.
def inner_boot(parent: str) -> str:
    """The inner's entry, its package's folder put on sys.path."""
    return (f"import sys;sys.path.insert(0,{parent!r});"
            "from inner.main import main;main(int(sys.argv[1]))")


INNER_BOOT = inner_boot(INNER_PARENT)


def inner_command(plan: LaunchPlan, config_fd: str) -> list[str]:
    """What bwrap runs inside: the compiled inner from its package's mount, or the
    Python one; either reads its configuration from `config_fd`."""
    if plan.compiled_inner:
        return [f"{plan.inner_parent}/inner/{BINARY}", config_fd]
    return [plan.interpreter, "-I", "-S", "-c", inner_boot(plan.inner_parent), config_fd]


class BwrapInfo(NamedTuple):
    """What this machine's bwrap is and offers (probed once per boot; see capabilities)."""

    path: str
    version: str
    bind_fd: bool
    disable_userns: bool


def probe_bwrap(path: str) -> BwrapInfo:
    """Ask bwrap for its version and options; LaunchError if it cannot run."""
    import subprocess

    try:
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
        usage = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LaunchError(f"cannot run {path}: {err}") from None
    return BwrapInfo(
        path=path,
        version=version.removeprefix("bubblewrap ").strip(),
        bind_fd="--ro-bind-fd" in usage,
        disable_userns="--disable-userns" in usage,
    )


def find_bwrap() -> str | None:
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        candidate = os.path.join(folder or ".", "bwrap")
        if folder.startswith("/") and os.access(candidate, os.X_OK):
            return candidate
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


def _op_args(op: MountOp, fd_of: Callable[[MountOp], str]) -> list[str]:
    if op.kind == "ro-bind":
        return ["--ro-bind-fd", fd_of(op), op.dest]
    if op.kind == "bind":
        return ["--bind-fd", fd_of(op), op.dest]
    if op.kind == "hide-file":
        return ["--ro-bind-data", fd_of(op), op.dest]
    if op.kind == "tmpfs":
        sized = ["--size", str(op.size)] if op.size else []
        mode = ["--perms", f"{op.mode:o}"] if op.mode is not None else []
        return [*sized, *mode, "--tmpfs", op.dest]
    if op.kind == "symlink":
        assert op.source is not None
        return ["--symlink", op.source, op.dest]
    if op.kind == "dev":
        return ["--dev", op.dest]
    if op.kind == "proc":
        return ["--proc", op.dest]
    if op.kind == "remount-ro":
        return ["--remount-ro", op.dest]
    raise AssertionError(op.kind)


def bwrap_args(
    plan: LaunchPlan,
    info: BwrapInfo,
    *,
    fd_of: Callable[[MountOp], str],
    json_status_fd: str,
    config_fd: str,
    mark: tuple[str, ...] = (),
) -> list[str]:
    """The whole bwrap command line. `fd_of` names the inherited fd of a bind's source;
    `mark` goes first (runs.tag: how the next start finds what a killed run left)."""
    args = [
        info.path,
        *mark,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]
    if plan.root_mode:
        # bwrap runs as idmapped.SANDBOX_UID: uid 0 inside, another user outside.
        args += ["--uid", "0", "--gid", "0"]
    if not plan.share_net:
        args.append("--unshare-net")
    if info.disable_userns:
        args.append("--disable-userns")
    for op in plan.ops:
        args.extend(_op_args(op, fd_of))
    args += ["--chdir", plan.chdir, "--json-status-fd", json_status_fd]
    args += ["--", *inner_command(plan, config_fd)]
    return args


def require_bind_fd(info: BwrapInfo) -> None:
    if not info.bind_fd:
        raise LaunchError(
            f"bubblewrap {info.version} at {info.path} has no --bind-fd, so a grant could "
            "only be bound by path, which a changed folder could redirect",
            hint="install bubblewrap 0.10 or newer, or Debian's 0.8.0-2+deb12u1 "
            "(apt-get install bubblewrap)",
        )
