"""Path sockets under the grants, found by type at launch, for the plan to hide each one the
spec does not name.

Why by type: connect() on a path socket needs no write right, so a read grant of home
shows the sandbox every agent listening there, and with it what the agent holds: a real
`ssh-agent -a ~/.bitwarden-ssh-agent.sock` signed for the sandbox (the red team's find),
as 1Password's, gpg-agent's or a container engine's would have answered. A table of
names misses every agent it does not list, so sockets are found where they are:

- `/proc/net/unix` lists every socket bound in this network namespace, with its path:
  each one under a grant, at any depth, cheaply;
- a walk of each granted folder and the folders in it (sockets at depth one and two,
  where agents put theirs: `~/.x.sock`, `~/.1password/agent.sock`), no link followed,
  finds those bound in another network namespace (a container's, another sandbox's).
  A socket found only by the walk that refuses a connection is left: nobody listens
  there, and a later run's server may need to remove it. The walk stops after
  MAX_FOLDERS folders in all, breadth first, and says where it stopped.

Not found, and stated as gaps (`check`): a socket made after the launch by a process
outside, and one bound in another network namespace deeper than the walk looks. Where
the kernel has Landlock's RESOLVE_UNIX (ABI 9), both are closed anyway: no rule grants
the right on a folder, so every path socket made outside the sandbox but the named ones
is refused (confine.py).

Facts: /proc/net/unix shows the path as bind() was given it (relative when it was, and
as the binder's mount namespace saw it), so a path is taken only when it is absolute and
what is there now is a socket; DirEntry.is_dir/is_file/is_symlink answer from the
directory's own record, so only what is none of them costs a stat.
"""

from __future__ import annotations

import _socket
import errno
import os
import stat
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple

MAX_FOLDERS = 256
DEPTH = 2  # sockets in a granted folder and in the folders in it
# Never walked: the kernel's own file systems, which hold no socket a program binds.
_PSEUDO = ("/proc", "/sys", "/dev")


class FoundSockets(NamedTuple):
    """`sockets`: the paths found, sorted; `unwalked`: folders the walk did not list,
    its budget spent (their sockets are found only when bound in this namespace)."""

    sockets: tuple[str, ...] = ()
    unwalked: tuple[str, ...] = ()


def _within(path: str, folder: str) -> bool:
    return folder in (path, "/") or path.startswith(folder + "/")


def bound_here() -> set[str]:
    """The absolute paths of the sockets bound in this network namespace."""
    found: set[str] = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return found
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            # Where the socket is: the folder as the kernel resolves it (the grants'
            # targets are resolved too), the name itself not followed.
            folder, name = os.path.split(os.path.normpath(fields[7]))
            found.add(os.path.join(os.path.realpath(folder), name))
    return found


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def _listened(path: str) -> bool:
    """Whether a connect to `path` is not refused (a socket nobody listens on is)."""
    # _socket, not socket: socket.py's enums cost every start about 2 ms (launch.py).
    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        probe.setblocking(False)
        probe.connect(path)
    except OSError as err:
        return err.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    finally:
        probe.close()
    return True


def find(roots: Iterable[str], skip: Iterable[str] = (), *,
         max_folders: int = MAX_FOLDERS) -> FoundSockets:
    """The path sockets under `roots` (granted folders, resolved), but those under `skip`
    (hidden already)."""
    roots = sorted(set(roots), key=lambda r: (r.count("/"), r))
    skip = tuple(skip)

    def wanted(path: str) -> bool:
        return (any(_within(path, r) for r in roots)
                and not any(_within(path, s) for s in skip))

    found = {p for p in bound_here() if wanted(p) and _is_socket(p)}
    queue: deque[tuple[str, int]] = deque(
        (r, 0) for r in roots if not any(_within(r, p) for p in _PSEUDO if r != "/"))
    walked = 0
    seen: set[str] = set()
    while queue and walked < max_folders:
        folder, depth = queue.popleft()
        if folder in seen or not wanted(folder):
            continue
        seen.add(folder)
        walked += 1
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth + 1 < DEPTH and entry.path not in _PSEUDO:
                        queue.append((entry.path, depth + 1))
                elif (not entry.is_file(follow_symlinks=False) and not entry.is_symlink()
                      and stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
                      and entry.path not in found and wanted(entry.path)
                      and _listened(entry.path)):
                    found.add(entry.path)
            except OSError:
                continue
    unwalked = tuple(sorted({f for f, _ in queue if f not in seen}))
    return FoundSockets(tuple(sorted(found)), unwalked)
