"""A file's mode and times without namespaces: done by the supervisor, on a file the
grants write (direct mode's listener handlers).

Landlock has no right for chmod or utimensat: without a read-only mount (bwrap's EROFS)
any file the uid owns would get a new mode or new times, hidden or outside every grant,
and, run by root, every file of the system (a world-writable /etc). The filter hands
these calls to the listener (direct_rules.METADATA_CALLS); here each is done on the
file the call names, opened by the supervisor (O_PATH, the caller's working directory
or folder fd, following a link only where the call does), and only where that file's
path is in a Landlock rule that writes it (WRITE_FILE along the path, as the inner's
rules give it) and, run by root, root owns it (the sandbox holds no CAP_FOWNER). The
call is done on that open file, never by its path again, so a link swapped after the
check changes nothing. Everything else is EPERM, as a file the sandbox may not change.

The caller's path is read once (process_vm_readv); /proc/self and /proc/thread-self in
it are the caller's, not the supervisor's. A path the supervisor reaches that the
sandbox could not (another process's /proc/PID/cwd) ends at a file judged the same way:
what decides is the file reached, never the way there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Callable, Sequence

from inner.landlock import FS_RIGHTS
from inner.syscalls import number

from ..grants import is_within
from . import notify

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_EMPTY_PATH = 0x1000
WRITE_FILE = FS_RIGHTS["write_file"]
TIMESPECS = 32  # struct timespec[2]


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class Refused(Exception):
    """The call fails with this errno."""

    def __init__(self, error: int) -> None:
        super().__init__(error)
        self.error = error


class MetadataGuard:
    """Does chmod and utimensat for the sandbox on the files its rules write."""

    def __init__(self, rules: Sequence[tuple[str, int]]) -> None:
        self.rules = [(path, mask) for path, mask in rules if mask & WRITE_FILE]
        self.root = os.geteuid() == 0
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.utimensat.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                         ctypes.c_int)

    def writes(self, path: str) -> bool:
        """Whether a Landlock rule on `path` or a folder above it gives WRITE_FILE."""
        return any(is_within(path, rule) for rule, _ in self.rules)

    def handlers(self, listener: int) -> dict[int, Callable[[notify.Notification], None]]:
        """The listener's handlers, by call number (a call this architecture lacks is
        left out)."""
        found: dict[int, Callable[[notify.Notification], None]] = {}
        for name in ("chmod", "fchmod", "fchmodat", "fchmodat2", "utimensat"):
            try:
                nr = number(name)
            except KeyError:
                continue
            found[nr] = _Call(self, listener, name)
        return found


class _Call:
    """One call's handler."""

    def __init__(self, guard: MetadataGuard, listener: int, name: str) -> None:
        self.guard, self.listener, self.name = guard, listener, name

    def __call__(self, notification: notify.Notification) -> None:
        reader = notify.MemoryReader()  # its buffer is one call's: receivers run at once
        try:
            self._do(notification, reader)
        except Refused as refused:
            notify.send_error(self.listener, notification.id, refused.error)
        else:
            notify.send_value(self.listener, notification.id, 0)

    def _do(self, notification: notify.Notification, reader: notify.MemoryReader) -> None:
        pid, args = notification.pid, notification.args
        if self.name == "chmod":
            fd = self._open(reader, pid, AT_FDCWD, args[0], 0)
            mode = args[1]
        elif self.name == "fchmod":
            fd = self._open_fd(pid, _signed(args[0]))
            mode = args[1]
        elif self.name == "fchmodat":
            fd = self._open(reader, pid, _signed(args[0]), args[1], 0)
            mode = args[2]
        elif self.name == "fchmodat2":
            fd = self._open(reader, pid, _signed(args[0]), args[1], _signed(args[3]))
            mode = args[2]
        else:  # utimensat(dirfd, path or NULL, times or NULL, flags)
            flags = _signed(args[3])
            dirfd = _signed(args[0])
            fd = (self._open_fd(pid, dirfd) if args[1] == 0
                  else self._open(reader, pid, dirfd, args[1], flags))
            mode = 0
        try:
            self._judge(fd, link_refused=self.name != "utimensat")
            times = None
            if self.name == "utimensat" and args[2]:
                times = reader.read_bytes(pid, args[2], TIMESPECS)
                if times is None or len(times) != TIMESPECS:
                    raise Refused(errno.EFAULT)
            if not notify.id_valid(self.listener, notification.id):
                raise Refused(errno.ESRCH)  # the caller is gone; the pid may be another's
            if self.name == "utimensat":
                self._utimens(fd, times)
            else:
                try:
                    os.chmod(f"/proc/self/fd/{fd}", mode & 0o7777)
                except OSError as err:
                    raise Refused(err.errno or errno.EPERM) from None
        finally:
            os.close(fd)

    def _open(self, reader: notify.MemoryReader, pid: int, dirfd: int, pointer: int,
              flags: int) -> int:
        """The file a path names, as the caller would reach it: O_PATH, its link
        followed unless AT_SYMLINK_NOFOLLOW; "" with AT_EMPTY_PATH is `dirfd` itself."""
        raw = reader.read_string(pid, pointer) if pointer else None
        if raw is None:
            if pointer == 0:
                raise Refused(errno.EFAULT)
            raw = b""  # an empty string, or one the supervisor cannot read
        if not raw:
            if flags & AT_EMPTY_PATH:
                return self._open_fd(pid, dirfd)
            raise Refused(errno.ENOENT)
        path = os.fsdecode(raw)
        for own, theirs in (("/proc/thread-self", f"/proc/{pid}/task/{pid}"),
                            ("/proc/self", f"/proc/{pid}")):
            if path == own or path.startswith(own + "/"):
                path = theirs + path[len(own):]
        if not path.startswith("/"):
            base = f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
            path = f"{base}/{path}"
        nofollow = os.O_NOFOLLOW if flags & AT_SYMLINK_NOFOLLOW else 0
        try:
            return os.open(path, os.O_PATH | os.O_CLOEXEC | nofollow)
        except OSError as err:
            raise Refused(err.errno or errno.ENOENT) from None

    @staticmethod
    def _open_fd(pid: int, fd: int) -> int:
        """The file the caller's `fd` is."""
        if fd < 0:
            raise Refused(errno.EBADF)
        try:
            return os.open(f"/proc/{pid}/fd/{fd}", os.O_PATH | os.O_CLOEXEC)
        except OSError:
            raise Refused(errno.EBADF) from None

    def _judge(self, fd: int, *, link_refused: bool) -> None:
        """EPERM unless the sandbox's rules write the file `fd` is, and, run by root,
        root owns it; a link is refused where the call cannot change one."""
        info = os.fstat(fd)
        if link_refused and stat.S_ISLNK(info.st_mode):
            raise Refused(errno.EOPNOTSUPP)
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            raise Refused(errno.EPERM) from None
        if not path.startswith("/") or path.endswith(" (deleted)") \
                or not self.guard.writes(path):
            raise Refused(errno.EPERM)
        if self.guard.root and info.st_uid != 0:
            raise Refused(errno.EPERM)  # the sandbox holds no CAP_FOWNER

    def _utimens(self, fd: int, times: bytes | None) -> None:
        buffer = ctypes.create_string_buffer(times, TIMESPECS) if times is not None else None
        result = self.guard._libc.utimensat(fd, b"", buffer, AT_EMPTY_PATH)
        if result != 0:
            raise Refused(ctypes.get_errno() or errno.EPERM)
