"""Where one run is placed inside its sandbox: its working directory and its /tmp.

A harness running many commands under one spec (the Python API's `Sandbox`, Inspect's
provider, `lnk mcp`) asks two things of a launch that a spec does not say: the working
directory of this command, and a /tmp that lasts from one command to the next. Neither
widens the spec:

- The working directory only moves bwrap's `--chdir`: it must be a folder the sandbox
  sees already (a grant, a system folder, /tmp), and the spec's `.` keeps meaning what it
  meant when the snapshot was made.
- The session's /tmp is a folder lnk-sandbox made for the session in `$LNK_HOME` (hidden
  from every sandbox), bound at /tmp in place of the fresh tmpfs: the sandbox sees in it
  only what its own earlier commands wrote there, and no host path. Its source is pinned
  like every bind; run by root it is idmapped, as the tmpfs would be the sandbox's own.
  A folder on disk has no size of its own: the size `[limits] tmp` gives a fresh /tmp
  does not hold it, so a spec that sets that limit refuses a session's /tmp (fail
  closed) rather than run without it; the default limit is the tmpfs's, not asked for.
  What an earlier command left there (a link where bwrap makes the mount point of a
  grant below /tmp) can move only what the sandbox sees: every bind's source is pinned
  by descriptor, and the new root holds nothing writable but the grants.

Both are inputs of the plan (`RunMounts`), placed as it is built (plan.py), never edited
into it after; whether the working directory is there on the host is looked at once the
plan is made (`confirm_working_directory`), so that building it stays pure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..errors import LaunchError
from ..grants import deepest, is_within
from .ops import LaunchPlan, MountOp

SESSION_TMP_REASON = "the session's own /tmp (kept between its commands)"


def session_tmp(source: str, *, tmp_granted: bool, size_asked: bool = False,
                root_mode: bool = False) -> MountOp:
    """The folder `source` bound at /tmp, in place of a fresh tmpfs.

    A spec that grants /tmp itself keeps the host's /tmp, as it asked (`tmp_granted`):
    there is no fresh one to replace, and LaunchError says so rather than binding over
    the grant. `size_asked`: the spec sets `[limits] tmp`, which a folder cannot hold
    (LaunchError).
    """
    if size_asked:
        raise LaunchError("the spec sets a size for /tmp ([limits] tmp), which a session's "
                          "/tmp, a folder kept between its commands, cannot hold",
                          hint="give each command a fresh /tmp (Sandbox(..., fresh_tmp="
                          "True)), or remove limits.tmp from the spec")
    if tmp_granted:
        raise LaunchError("the spec grants /tmp itself, so the sandbox's /tmp is the host's "
                          "and a session cannot have one of its own",
                          hint="grant a folder inside /tmp instead of /tmp, or run without "
                          "a session")
    return MountOp("bind", "/tmp", source, SESSION_TMP_REASON, idmapped=root_mode)


def working_directory(ops: Iterable[MountOp], cwd: str) -> str:
    """Where the command starts: `cwd` (absolute, as the sandbox sees it), a link the
    plan makes on its way followed.

    The deepest mount holding `cwd` says what is there: a grant or system folder shows
    the host's folder (`confirm_working_directory` looks there), the session's /tmp its
    own folder, a fresh tmpfs nothing but itself. LaunchError when `cwd` is in none the
    sandbox sees, or below a fresh tmpfs's top: bwrap would otherwise fail after the
    mounts with a message of its own.
    """
    if not cwd.startswith("/"):
        raise LaunchError(f"the working directory {cwd!r} is not an absolute path")
    ops = tuple(ops)
    cwd = _through_links(ops, os.path.normpath(cwd))
    holder = _holder(ops, cwd)
    if holder is None or holder.kind not in ("bind", "ro-bind", "tmpfs"):
        raise LaunchError(f"the working directory {cwd} is in no folder the sandbox sees",
                          hint="pick a folder the spec grants (files.read or files.write), "
                          "a system folder, or /tmp")
    if holder.kind == "tmpfs" and cwd != holder.dest:  # a fresh tmpfs holds nothing yet
        raise _missing(cwd)
    return cwd


def confirm_working_directory(plan: LaunchPlan) -> None:
    """The host's side of `working_directory`: the folder `plan.chdir` shows, in the
    bind holding it, is there now (LaunchError when it is not). `build_plan` is pure, so
    this is looked at after, once the plan is made."""
    holder = _holder(plan.ops, plan.chdir)
    if holder is None or holder.kind not in ("bind", "ro-bind"):
        return
    assert holder.source is not None
    if not os.path.isdir(os.path.join(holder.source,
                                      os.path.relpath(plan.chdir, holder.dest))):
        raise _missing(plan.chdir)


def _missing(cwd: str) -> LaunchError:
    return LaunchError(f"the working directory {cwd} does not exist in the sandbox",
                       hint="make it first (mkdir), or pick a folder that exists")


MOUNTS = ("bind", "ro-bind", "tmpfs", "hide-file", "proc", "dev")


def _holder(ops: Iterable[MountOp], path: str) -> MountOp | None:
    return deepest(path, ((op.dest, op) for op in ops if op.kind in MOUNTS))


def _through_links(ops: Iterable[MountOp], path: str) -> str:
    """`path` with a link the plan makes (Debian's /bin -> usr/bin) followed once."""
    for op in ops:
        if op.kind == "symlink" and op.source and is_within(path, op.dest):
            target = os.path.normpath(os.path.join(os.path.dirname(op.dest), op.source))
            return target + path[len(op.dest):]
    return path
