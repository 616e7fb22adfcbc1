"""Reading or writing one file as the sandbox would: the inner does it itself, confined.

A harness reads a file a command wrote, and writes one for the next command, through a
sandbox of the same spec (the Python API's `read_file` and `write_file`), so it never
touches a path the spec does not grant. The inner confiner is that sandbox once its
steps are applied: it does the one file operation in place of step 8 (execve), under
the same mounts, seccomp filter and Landlock rules. Nothing is executed, so a spec whose
program list holds no reader (no `cat`) can still have its files read; and the kernel's
own errno is the answer, reported on the status socket as an exec failure is.

Facts: opening a FIFO blocks until its other end is opened, unless O_NONBLOCK (then a
write-only open without a reader fails with ENXIO), so both opens are non-blocking and
only a regular file is read or written (a FIFO, socket or device is EINVAL); O_TRUNC
truncates at open, before the type is known, which for the one regular file is what
a write wants anyway; st_size of a /proc file is 0, so a read's limit counts bytes read.

macOS has no inner: there this module's source runs as the command itself (`-c`, with
`standalone`), under the profile, and exits with the errno (imports: os, stat, errno).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from .config import FileOp
    from .protocol import Channel

CHUNK = 1 << 20


def _regular(fd: int) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise OSError(errno.EISDIR, os.strerror(errno.EISDIR))
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read(path: str, limit: int | None) -> None:
    """The file's bytes to stdout; EFBIG when it holds more than `limit` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        _regular(fd)
        if limit is not None and os.fstat(fd).st_size > limit:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
        total = 0
        while chunk := os.read(fd, CHUNK):
            total += len(chunk)
            if limit is not None and total > limit:
                raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
            _write_all(1, chunk)
    finally:
        os.close(fd)


def write(path: str) -> None:
    """Stdin, whole, as the file's new content; missing parent folders made first."""
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOCTTY
                 | os.O_NONBLOCK, 0o666)
    try:
        _regular(fd)
        while chunk := os.read(0, CHUNK):
            _write_all(fd, chunk)
    finally:
        os.close(fd)


def perform(operation: FileOp, status: Channel) -> NoReturn:
    """Do `operation` (read or write `path`, a read holding at most `limit` bytes); exit
    0, or report the errno on the status socket and exit as a failed execve would (127
    for a missing path, 126 otherwise)."""
    path = operation.path
    try:
        if operation.op == "read":
            read(path, operation.limit)
        elif operation.op == "write":
            write(path)
        else:
            raise OSError(errno.EINVAL, f"no file operation {operation.op!r}")
    except OSError as err:
        code = err.errno or errno.EIO
        status.send_exec_failure(code, path)
        os._exit(127 if code in (errno.ENOENT, errno.ENOTDIR) else 126)
    os._exit(0)


def standalone(args: list[str]) -> int:
    """`OP PATH [LIMIT]` as a command's arguments: 0, or the errno as the exit status."""
    op, path, limit = [*args, "", "", ""][:3]
    try:
        if op == "read":
            read(path, int(limit) if limit else None)
        elif op == "write":
            write(path)
        else:
            return errno.EINVAL
    except OSError as err:
        return err.errno or errno.EIO
    return 0
