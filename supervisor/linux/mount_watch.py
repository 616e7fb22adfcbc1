"""The sandbox's mount table, watched for what keeps a written folder's files read-only.

A protection inside a write grant (a dot file bound read-only, a hide, a placeholder, a
folder bound onto itself so it cannot be renamed) is a mount over a path, and the kernel
takes a mount off a dentry that is renamed over or removed in another mount namespace:
when the person's own tools replace a protected file while a run lasts (`git pull` or
`git checkout` writing a new `.mcp.json`, an editor saving `.envrc` by renaming a new
file over it), the sandbox's mount over it is gone, and the path is a plain file of the
folder the sandbox writes: it could write what the person's tools run next. Landlock
cannot close it (a written folder's new files must stay the sandbox's to write), so the
run is ended the moment it happens (status 125), with the path named.

The inner hands over an fd of its own `/proc/self/mountinfo` before the go (the table
complete, nothing of the command run yet); the kernel keeps the mount namespace with the
open file, and marks it with an exceptional condition (POLLPRI) at each change of the
table. A thread waits on it and reads the table again at each change, and every
RECHECK_SECONDS besides: a mount point renamed on the host moves in the table without
a change the kernel marks.

What it cannot do: a command writing the path in the moment between the host's replace
and the end of the run is not stopped; the message says to check the path. A command
that did so and ended by itself before the watch ended it is found after the run all the
same: each watched path's identity on the host (device and inode), taken at launch, is
compared when the run ends, and a replaced one is said, status 125.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable, Mapping

from ..mountinfo import mount_points
from .plan import SOCKET_HIDDEN, LaunchPlan

# The table is read again this often even without the kernel's mark: a mount point the
# host renames away (an editor saving `.mcp.json` by renaming the old one to a backup,
# `.mcp.json~`, and writing a new one; a folder above it moved) changes no mount, so the
# kernel marks nothing, while the mount now shows at the other path and the new file at
# the watched one is the sandbox's to write (measured: it was written, and the run went
# on until it ended by itself; red team 24c).
RECHECK_SECONDS = 0.1

# Mounts that close something inside a folder the sandbox writes.
_CLOSING = ("ro-bind", "bind", "tmpfs", "hide-file")


def watched_mounts(plan: LaunchPlan) -> dict[str, str]:
    """Each mount point strictly inside a write bind of the plan, and each socket's
    hide wherever it is, with its reason.

    A socket's hide under a read grant too: connect() needs no Landlock right below ABI
    9, so the agent's new socket, bound at its path again when it restarts (which takes
    the hide off), is not closed by the read grant's closing (confine.closed_folders)."""
    written = [op.dest for op in plan.ops if op.kind == "bind"]
    return {op.dest: op.reason for op in plan.ops if op.kind in _CLOSING
            and (any(op.dest != top and op.dest.startswith(top.rstrip("/") + "/")
                     for top in written)
                 or (op.kind == "hide-file" and op.reason == SOCKET_HIDDEN))}


def identities(paths: Mapping[str, str]) -> dict[str, tuple[int, int] | None]:
    """Each path's (device, inode) on the host now, None where it is missing."""
    found: dict[str, tuple[int, int] | None] = {}
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            found[path] = None
        else:
            found[path] = (info.st_dev, info.st_ino)
    return found


def replaced(before: Mapping[str, tuple[int, int] | None],
             reasons: Mapping[str, str]) -> str | None:
    """The first path of `before` that is another file (or gone, or new) now; a hidden
    socket merely gone after the run is not (while the run lasts, it ends the run: an
    agent restarted at its path would be reachable before any poll saw it)."""
    now = identities({path: "" for path in before})
    return next((path for path, identity in before.items() if now[path] != identity
                 and not (now[path] is None and reasons.get(path) == SOCKET_HIDDEN)), None)


class MountWatch:
    """Waits on the sandbox's mountinfo; calls `lost(path, reason)` once, for the first
    watched mount point missing from it (the run is then ended by the caller)."""

    def __init__(self, table_fd: int, watched: Mapping[str, str],
                 lost: Callable[[str, str], None]) -> None:
        self.fd = table_fd
        self.watched = dict(watched)
        self.lost = lost
        self._stop_read, self._stop_write = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="lnk-mounts", daemon=True)

    def start(self) -> None:
        """Check the table as it is now, then wait for its changes."""
        self._thread.start()

    def stop(self) -> None:
        try:
            os.write(self._stop_write, b"\0")
        except OSError:
            pass
        if self._thread.ident is not None:
            self._thread.join(timeout=5)
        for fd in (self.fd, self._stop_read, self._stop_write):
            try:
                os.close(fd)
            except OSError:
                pass

    def _missing(self) -> tuple[str, str] | None:
        try:
            os.lseek(self.fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(self.fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            return None  # the namespace is gone with the sandbox: nothing left to write
        points = mount_points(b"".join(chunks))
        return next(((p, r) for p, r in self.watched.items() if p not in points), None)

    def _run(self) -> None:
        while True:
            missing = self._missing()  # reading it again also clears the condition
            if missing is not None:
                self.lost(*missing)
                return
            try:
                readable, _, _ = select.select([self._stop_read], [], [self.fd],
                                               RECHECK_SECONDS)
            except (OSError, ValueError):
                return
            if readable:
                return
