"""Files lnk-sandbox writes on the host for a person, opened so nothing a sandbox wrote can
redirect them.

`--report FILE` names a path the person chose, often in the project, which an earlier
sandbox could write: a link planted there (or in a folder on the way) would make the
supervisor, running as the person (or as root), truncate and write whatever file the link
names: `~/.bashrc`, `/etc/ld.so.preload`. So the path is walked one component at a time:
a link inside a folder the spec writes is refused, a link elsewhere (`/var/run -> /run`,
made by the system) is followed, and the file itself is opened without following a link,
not blocking on a pipe, and must be a regular file. The other files lnk-sandbox writes
live in `$LNK_HOME`, which no sandbox can see (state.py writes them atomically, with
O_NOFOLLOW).

Facts: O_NOFOLLOW guards only the last component; O_PATH | O_NOFOLLOW opens a link itself
(fstat tells it); opening a FIFO for writing blocks until a reader comes, O_NONBLOCK makes
it ENXIO instead; at most 40 links are followed in one path (Linux's own limit).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence

from .errors import LaunchError

_MAX_LINKS = 40


def _within(path: str, folder: str) -> bool:
    return folder in (path, "/") or path.startswith(folder + "/")


def _refuse(path: str, why: str, err: int | None = None, *, what: str = "the report"
            ) -> LaunchError:
    if err in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = "name a file in a folder you may write, such as /tmp/report.jsonl"
    elif err == errno.ENOENT:
        hint = "make the folder first, or name a file in a folder that exists"
    else:
        hint = ("name a file outside the folders the sandbox writes, or remove what is "
                "there")
    return LaunchError(f"cannot write {what} to {path}: {why}", hint=hint, errno=err)


def open_report(path: str, written: Sequence[str], *, what: str = "the report") -> int:
    """An fd to append the report to, the file made (0600) or emptied first.

    `written`: the folders the sandbox will write (resolved). LaunchError, naming the
    path and what is wrong, for a link planted where a sandbox writes, a path that is
    not a regular file, or one that cannot be opened.
    """
    wanted = os.path.abspath(path)
    parts = [p for p in wanted.split("/") if p]
    if not parts:
        raise _refuse(path, "it is a folder", what=what)
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    where = ""
    links = 0
    try:
        while len(parts) > 1:
            part = parts.pop(0)
            if part == "..":
                where = os.path.dirname(where) if where else ""
                next_fd = os.open("..", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = next_fd
                continue
            if part == ".":
                continue
            try:
                next_fd = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as err:
                raise _refuse(path, f"{where}/{part}: {err.strerror}", err.errno,
                              what=what) from None
            mode = os.fstat(next_fd).st_mode
            if stat.S_ISLNK(mode):
                os.close(next_fd)
                link = f"{where}/{part}"
                if any(_within(link, folder) for folder in written):
                    raise _refuse(path, f"{link} is a link, in a folder the sandbox writes: "
                                  "a sandbox may have planted it", what=what)
                links += 1
                if links > _MAX_LINKS:
                    raise _refuse(path, "too many links", errno.ELOOP, what=what)
                target = os.readlink(part, dir_fd=fd)
                rest = [p for p in target.split("/") if p]
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                    where = ""
                parts = rest + parts
                continue
            if not stat.S_ISDIR(mode):
                os.close(next_fd)
                raise _refuse(path, f"{where}/{part} is not a folder", errno.ENOTDIR,
                              what=what)
            os.close(fd)
            fd = next_fd
            where = f"{where}/{part}"
        name = parts[0]
        try:
            report = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                             | os.O_CLOEXEC | os.O_APPEND, 0o600, dir_fd=fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise _refuse(path, f"{where}/{name} is a link", err.errno, what=what) from None
            raise _refuse(path, err.strerror or str(err), err.errno, what=what) from None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(report).st_mode):
        os.close(report)
        raise _refuse(path, "it is not a regular file", what=what)
    os.ftruncate(report, 0)
    return report
