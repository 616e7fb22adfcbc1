"""Mount sources pinned at launch: opened one component at a time, no link followed.

Facts (checked on this kernel, see shared/reference/linux-kernel-interfaces.md §7):
- `O_PATH|O_NOFOLLOW` on a link *succeeds* and returns the link itself, so each
  component is fstat'ed after opening; `O_NOFOLLOW` only guards the last component of a
  path, which is why the walk opens one component per call, relative to the last fd.
- An O_PATH fd of a directory or a regular file is what bwrap's `--bind-fd` takes; bwrap
  then mounts /proc/self/fd/N and compares the fd's device and inode with the
  destination's, so the mount is exactly the file opened here.

A wrapped command may run long after its snapshot was made, and a writable ancestor of a
grant may have been replaced by then; the walk refuses the launch at the first link
rather than follow it where the snapshot did not go.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import NamedTuple

from ..errors import LaunchError

_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


class PinnedPath(NamedTuple):
    """An open O_PATH descriptor of `path` and what it was when opened."""

    path: str
    fd: int
    device: int
    inode: int
    is_dir: bool


class LinkInPath(LaunchError):
    """A component of a pinned path is a link; `link` names it."""

    def __init__(self, path: str, link: str, points_to: str):
        super().__init__(
            f"{link} is a link (to {points_to}); it was not when the grant {path} was "
            "checked, so the launch is refused rather than follow it",
            hint="remove the link, or check the spec again (run it anew, not a saved one)",
        )
        self.path = path
        self.link = link


class FoundLink(OSError):
    """`walk` met a link; `filename` is the path up to and including it."""

    def __init__(self, walked: str):
        super().__init__(errno.ELOOP, "a link", walked)


def walk(path: str, *, folder: bool = False) -> int:
    """An O_PATH fd of `path` (absolute), opened one component at a time, no link followed.

    FoundLink at a link, NotADirectoryError where a component above the last (or the
    last, with `folder`) is not a folder, any other OSError as the kernel gave it. The
    walk both the launch's pinning and the placeholders' folders use.
    """
    fd = os.open("/", _FLAGS)
    walked = ""
    try:
        for part in [p for p in path.split("/") if p]:
            walked += "/" + part
            next_fd = os.open(part, _FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                raise FoundLink(walked)
            if (walked != path or folder) and not stat.S_ISDIR(mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", walked)
    except BaseException:
        os.close(fd)
        raise
    return fd


def pin(path: str) -> PinnedPath:
    """Open `path` (absolute, normalized) without following any link in it.

    Raises LinkInPath for a link, FileNotFoundError when a component is missing, and
    LaunchError for anything else the kernel refuses.
    """
    if not path.startswith("/") or os.path.normpath(path) != path:
        raise LaunchError(f"{path!r} is not an absolute, normalized path")
    try:
        fd = walk(path)
    except FoundLink as err:
        raise LinkInPath(path, str(err.filename), _readlink(str(err.filename))) from None
    except FileNotFoundError:
        raise
    except OSError as err:
        what = "is not a folder" if err.errno == errno.ENOTDIR else f"cannot be opened: " \
            f"{err.strerror}"
        raise LaunchError(f"{err.filename or path} {what}", errno=err.errno) from None
    info = os.fstat(fd)
    return PinnedPath(path, fd, info.st_dev, info.st_ino, stat.S_ISDIR(info.st_mode))


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"
