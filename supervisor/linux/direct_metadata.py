"""A file's mode, owner and times, and a watch on a folder, without namespaces: done by
the supervisor, on a file the grants write (or, for a watch, read): direct mode's
listener handlers.

Landlock has no right for chmod, chown or utimensat: without a read-only mount (bwrap's
EROFS) any file the uid owns would get a new mode, group or times, hidden or outside
every grant, and, run by root, every file of the system (a world-writable /etc). Nor
does it judge inotify_add_watch: a watch on a hidden folder (~/.ssh, $LNK_HOME) told the
names made and opened there, which bwrap's empty folder never shows. The filter hands
these calls to the listener (direct_rules.METADATA_CALLS); here each is done on the
file the call names, opened by the supervisor (O_PATH, the caller's working directory
or folder fd, following a link only where the call does), and only where that file's
path is in a Landlock rule that writes it (WRITE_FILE along the path, as the inner's
rules give it; a watch: READ_DIR for a folder, READ_FILE for a file), never a device
node (the rules write the host's /dev/null and terminal, whose mode is not the run's,
and which every process of the machine uses: red team 30b) and, run by root, the
kernel's checks for a process without capabilities hold (root owns it, a group of its
own). The call is done on that open file, never by
its path again, so a link swapped after the check changes nothing. Everything else is
EPERM, as a file the sandbox may not change.

The caller's path is read once (process_vm_readv, else /proc/PID/mem: `Reader`);
/proc/self and /proc/thread-self in it are the caller's, not the supervisor's. It is
walked as the caller would walk it, so that the answer (ENOENT, EACCES, EPERM) tells
nothing the caller could not see: run by root, without the capabilities that pass a
folder's mode (another user's private folder), and through no magic link but the
caller's own (another process's /proc/PID/root or cwd, which Landlock's ptrace scope
refuses the caller, is ELOOP): red team 30c. What decides is the file reached, never
the way there. The kernel's name for that file decides only where it names that very file in
the supervisor's own tree: a file of another mount namespace, reached through a
process's /proc/PID/root (a container's, a devcontainer's), is given the name it has
there, which may be a path the rules write here (red team 30b).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence

from inner import capabilities
from inner.landlock import FS_RIGHTS
from inner.syscalls import number, syscall

from ..grants import is_within
from . import notify

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_EMPTY_PATH = 0x1000
WRITE_FILE = FS_RIGHTS["write_file"]
READ_FILE = FS_RIGHTS["read_file"]
READ_DIR = FS_RIGHTS["read_dir"]
TIMESPECS = 32  # struct timespec[2]
IN_DONT_FOLLOW = 0x02000000
UNCHANGED = -1  # chown's "leave it"
CALLS = ("chmod", "fchmod", "fchmodat", "fchmodat2", "utimensat", "chown", "fchown",
         "lchown", "fchownat", "inotify_add_watch")
_PIDFD_GETFD = 438
# /proc/self and /proc/thread-self however the path spells them ('//proc/./self/'): read
# as the caller's, never the supervisor's own.
_PROC_SELF = re.compile(r"/+(?:\./+)*proc/+(?:\./+)*(self|thread-self)(?=/|$)")
# The caller's own magic links (its working directory, root, an fd), spelt as _open
# spells them: the only ones its path may go through (a process outside the sandbox's
# are refused to the caller by Landlock's ptrace scope, never to the supervisor).
_CALLERS_LINK = re.compile(r"/proc/(\d+)(?:/task/(\d+))?/(?:cwd|root|fd/\d+)(?=/|$)")
RESOLVE_NO_MAGICLINKS = 0x02
# Run by root, the supervisor walks the caller's path without these, as the caller
# (who holds none) would: else its ENOENT against EPERM told which files another user's
# private folder holds (red team 30c).
_DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class Refused(Exception):
    """The call fails with this errno."""

    def __init__(self, error: int) -> None:
        super().__init__(error)
        self.error = error


class MetadataGuard:
    """Does chmod, chown, utimensat and inotify_add_watch for the sandbox on the files
    its rules write (a watch: read)."""

    def __init__(self, rules: Sequence[tuple[str, int]]) -> None:
        self.rules = list(rules)
        self.root = os.geteuid() == 0
        # The supervisor's effective set, read once: the handlers' threads lower and
        # raise it around each open (as_caller), every chmod of a tar's extraction.
        self.effective = capabilities.sets()[0] if self.root else 0
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.utimensat.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_int)
        self.libc.fchownat.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.c_int, ctypes.c_int)
        self.libc.inotify_add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p,
                                                ctypes.c_uint32)
        self.libc.syscall.restype = ctypes.c_long

    def rights(self, path: str) -> int:
        """The Landlock rights the rules give `path`: every rule on it or above, added."""
        found = 0
        for rule, mask in self.rules:
            if is_within(path, rule):
                found |= mask
        return found

    @contextlib.contextmanager
    def as_caller(self) -> Iterator[None]:
        """This thread without the capabilities that walk past a folder's mode (run by
        root; the sandbox holds none), given back after."""
        effective = self.effective
        if not effective & _DAC:
            yield
            return
        capabilities.set_effective(effective & ~_DAC)
        try:
            yield
        finally:
            capabilities.set_effective(effective)

    def writes(self, path: str) -> bool:
        """Whether a Landlock rule on `path` or a folder above it gives WRITE_FILE."""
        return bool(self.rights(path) & WRITE_FILE)

    def handlers(self, listener: int) -> dict[int, Callable[[notify.Notification], None]]:
        """The listener's handlers, by call number (a call this architecture lacks is
        left out)."""
        found: dict[int, Callable[[notify.Notification], None]] = {}
        for name in CALLS:
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
        reader = Reader()  # its buffer is one call's: receivers run at once
        try:
            value = self._do(notification, reader)
        except Refused as refused:
            notify.send_error(self.listener, notification.id, refused.error)
        else:
            notify.send_value(self.listener, notification.id, value)

    def _do(self, notification: notify.Notification, reader: Reader) -> int:
        pid, args = notification.pid, notification.args
        name = self.name
        flags = 0
        if name in ("chmod", "chown", "lchown"):
            nofollow = AT_SYMLINK_NOFOLLOW if name == "lchown" else 0
            fd = self._open(reader, pid, AT_FDCWD, args[0], nofollow)
            rest = args[1:]
        elif name in ("fchmod", "fchown"):
            fd = self._open_fd(pid, _signed(args[0]))
            rest = args[1:]
        elif name in ("fchmodat", "fchmodat2", "fchownat"):
            flags = _signed(args[4 if name == "fchownat" else 3]) if name != "fchmodat" else 0
            fd = self._open(reader, pid, _signed(args[0]), args[1], flags)
            rest = args[2:]
        elif name == "utimensat":  # (dirfd, path or NULL, times or NULL, flags)
            dirfd = _signed(args[0])
            fd = (self._open_fd(pid, dirfd) if args[1] == 0
                  else self._open(reader, pid, dirfd, args[1], _signed(args[3])))
            rest = args[2:]
        else:  # inotify_add_watch(fd, path, mask)
            nofollow = AT_SYMLINK_NOFOLLOW if args[2] & IN_DONT_FOLLOW else 0
            fd = self._open(reader, pid, AT_FDCWD, args[1], nofollow)
            rest = args[2:]
        try:
            info = self._judge(fd, name)
            times = None
            if name == "utimensat" and rest[0]:
                times = reader.read_bytes(pid, rest[0], TIMESPECS)
                if times is None:
                    raise Refused(errno.EFAULT)
            if not notify.id_valid(self.listener, notification.id):
                raise Refused(errno.ESRCH)  # the caller is gone; the pid may be another's
            if name == "utimensat":
                return self._utimens(fd, times)
            if "chown" in name:
                return self._chown(fd, info, _signed(rest[0]), _signed(rest[1]))
            if name == "inotify_add_watch":
                return self._watch(pid, _signed(args[0]), fd, rest[0] & 0xFFFFFFFF,
                                   notification.id)
            try:
                os.chmod(f"/proc/self/fd/{fd}", rest[0] & 0o7777)
            except OSError as err:
                raise Refused(err.errno or errno.EPERM) from None
            return 0
        finally:
            os.close(fd)

    def _open(self, reader: Reader, pid: int, dirfd: int, pointer: int,
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
        own = _PROC_SELF.match(path)  # //proc/./self as /proc/self: the kernel's walk
        if own is not None:
            theirs = f"/proc/{pid}/task/{pid}" if own[1] == "thread-self" else f"/proc/{pid}"
            path = theirs + path[own.end():]
        if not path.startswith("/"):
            base = f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
            path = f"{base}/{path}"
        nofollow = os.O_NOFOLLOW if flags & AT_SYMLINK_NOFOLLOW else 0
        # Walked as the caller walks it: no folder's mode passed by a capability, and no
        # magic link but the caller's own (the prefix), each reached first: another
        # process's /proc/PID/root, cwd or fd (a container's files), even by a link,
        # is ELOOP, never an ENOENT or EPERM telling what is there (red team 30c).
        link = _CALLERS_LINK.match(path)
        if link is not None and all(n in (None, str(pid)) for n in link.groups()):
            start, rest = link[0], path[link.end():].lstrip("/")
        else:
            start, rest = "/", path.lstrip("/") or "."
        try:
            with self.guard.as_caller():
                if not rest:
                    return os.open(start, os.O_PATH | os.O_CLOEXEC | nofollow)
                base_fd = os.open(start, os.O_PATH | os.O_CLOEXEC)
                folder, name = os.path.split(rest.rstrip("/") or ".")
                try:
                    if folder:
                        parent = _openat2(base_fd, folder, os.O_PATH | os.O_CLOEXEC,
                                          RESOLVE_NO_MAGICLINKS)
                        os.close(base_fd)
                        base_fd = parent
                    _not_anothers_proc(base_fd, pid)
                    return _openat2(base_fd, name, os.O_PATH | os.O_CLOEXEC | nofollow,
                                    RESOLVE_NO_MAGICLINKS)
                finally:
                    os.close(base_fd)
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

    def _judge(self, fd: int, name: str) -> os.stat_result:
        """EPERM unless the sandbox's rules write the file `fd` is (a watch: read it,
        and, run by root, its mode lets root without capabilities read it); a link is
        refused where the call cannot change one."""
        info = os.fstat(fd)
        if stat.S_ISLNK(info.st_mode) and name not in ("utimensat", "lchown", "fchownat"):
            raise Refused(errno.EOPNOTSUPP if "chmod" in name else errno.EPERM)
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            raise Refused(errno.EPERM) from None
        if not path.startswith("/") or path.endswith(" (deleted)"):
            raise Refused(errno.EPERM)
        try:  # the name is this file's here: not another mount namespace's, at a path
            there = os.lstat(path)  # its own namespace names like one the rules write
        except OSError:  # (reached through /proc/PID/root), nor one moved or removed
            raise Refused(errno.EPERM) from None
        if (there.st_dev, there.st_ino) != (info.st_dev, info.st_ino):
            raise Refused(errno.EPERM)
        rights = self.guard.rights(path)
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            # A device node a rule reads or writes is the host's own (/dev/null, the
            # terminal: direct_rules.run_paths), not a grant's: never changed, and never
            # watched (every process of the machine reads and writes it: a watch on
            # /dev/urandom told when a key was made). Run by root the sandbox owns
            # them, and a chmod of /dev/null broke every other user (red team 30b).
            raise Refused(errno.EACCES if name == "inotify_add_watch" else errno.EPERM)
        if name == "inotify_add_watch":
            if not rights & (READ_DIR if stat.S_ISDIR(info.st_mode) else READ_FILE):
                raise Refused(errno.EACCES)
            if self.guard.root and not _root_reads(info):
                raise Refused(errno.EACCES)
            return info
        if not rights & WRITE_FILE:
            raise Refused(errno.EPERM)
        if self.guard.root and info.st_uid != 0:
            raise Refused(errno.EPERM)  # the sandbox holds no CAP_FOWNER
        return info

    def _utimens(self, fd: int, times: bytes | None) -> int:
        buffer = ctypes.create_string_buffer(times, TIMESPECS) if times is not None else None
        if self.guard.libc.utimensat(fd, b"", buffer, AT_EMPTY_PATH) != 0:
            raise Refused(ctypes.get_errno() or errno.EPERM)
        return 0

    def _chown(self, fd: int, info: os.stat_result, uid: int, gid: int) -> int:
        """Run by root, what the kernel lets a process without CAP_CHOWN do: no new
        owner, and a group only of its own; else the kernel judges, as for the caller."""
        if self.guard.root:
            if uid not in (UNCHANGED, info.st_uid):
                raise Refused(errno.EPERM)
            if gid not in (UNCHANGED, info.st_gid, os.getegid(), *os.getgroups()):
                raise Refused(errno.EPERM)
        if self.guard.libc.fchownat(fd, b"", uid, gid, AT_EMPTY_PATH) != 0:
            raise Refused(ctypes.get_errno() or errno.EPERM)
        return 0

    def _watch(self, pid: int, instance: int, fd: int, mask: int, notification: int) -> int:
        """The watch added to the caller's own inotify instance (taken by pidfd_getfd),
        on the file judged, its link never followed again."""
        try:
            tgid = _thread_group(pid)
            pidfd = os.pidfd_open(tgid)
        except OSError:
            raise Refused(errno.EBADF) from None
        try:
            # The caller still waits, so the pidfd is its process, not one given its
            # pid since (killed by another of the sandbox's meanwhile): never another
            # process's instance (the person's editor's) taken.
            if not notify.id_valid(self.listener, notification):
                raise Refused(errno.ESRCH)
            taken = self.guard.libc.syscall(ctypes.c_long(_PIDFD_GETFD), ctypes.c_long(pidfd),
                                            ctypes.c_long(instance), ctypes.c_long(0))
            if taken < 0:  # a runtime's profile refuses pidfd_getfd (Docker's, without
                raise Refused(errno.EACCES)  # CAP_SYS_PTRACE): the watch cannot be added
        finally:
            os.close(pidfd)
        try:
            wd: int = self.guard.libc.inotify_add_watch(
                taken, f"/proc/self/fd/{fd}".encode(), mask & ~IN_DONT_FOLLOW)
            if wd < 0:
                raise Refused(ctypes.get_errno() or errno.EINVAL)
            return wd
        finally:
            os.close(taken)


class Reader:
    """The caller's path and times: by process_vm_readv (notify.MemoryReader), or,
    where a runtime's seccomp profile refuses it (Docker's default one, without
    CAP_SYS_PTRACE), from /proc/PID/mem, which the same uid may read without it. That
    one reads a page the caller protected too: its own memory, which it passed."""

    def __init__(self) -> None:
        self.fast = notify.MemoryReader()

    def read_string(self, pid: int, address: int, limit: int = 4096) -> bytes | None:
        found = self.fast.read_string(pid, address, limit)
        if found is not None:
            return found
        data = self._mem(pid, address, limit, string=True)
        if data is None:
            return None
        end = data.find(b"\0")
        return data[:end] if end >= 0 else None  # no end within the limit: unread

    def read_bytes(self, pid: int, address: int, size: int) -> bytes | None:
        found = self.fast.read_bytes(pid, address, size)
        if found is not None:
            return found
        data = self._mem(pid, address, size, string=False)
        return data if data is not None and len(data) == size else None

    @staticmethod
    def _mem(pid: int, address: int, size: int, *, string: bool) -> bytes | None:
        """`size` bytes at `address`, page by page; a string's up to its NUL only (the
        page after may be a hole). Bytes read on past a NUL: a utimensat's times that
        straddle a page hold zeros in the first page (an EFAULT, now and then, as the
        caller's stack moved)."""
        try:
            fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            out = b""
            while len(out) < size:  # page by page: a string may end before a hole
                step = min(size - len(out), 4096 - (address + len(out)) % 4096)
                try:
                    chunk = os.pread(fd, step, address + len(out))
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                if string and b"\0" in chunk:
                    break
            return out or None
        finally:
            os.close(fd)


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64))


def _openat2(dirfd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2) (Linux 5.6): `path` from `dirfd`, with RESOLVE_* `resolve`."""
    how = _OpenHow(flags, 0, resolve)
    return syscall("openat2", dirfd, os.fsencode(path), ctypes.byref(how),
                   ctypes.sizeof(how))


# A folder below a process's folder in /proc (its fd, fdinfo, map_files, task/TID/fd):
# the process's number, however /proc is reached (a bind mount of it).
_PROC_BELOW = re.compile(r"(?:^|/)(\d+)/[^/]")


def _not_anothers_proc(folder: int, pid: int) -> None:
    """EACCES for a folder below another process's folder in /proc, before a name in it
    is looked up: the caller is refused there (Landlock's ptrace scope), the supervisor
    is not, and its ENOENT for a missing name against EPERM for one there (a magic link
    opened O_PATH, not followed) told which fds the process holds and where its memory
    is mapped (map_files; red team 30d)."""
    if os.fstat(folder).st_dev != os.stat("/proc").st_dev:
        return
    below = _PROC_BELOW.search(os.readlink(f"/proc/self/fd/{folder}"))
    if below is not None and int(below[1]) not in (pid, _thread_group(pid)):
        raise OSError(errno.EACCES, "another process's folder in /proc")


def _thread_group(tid: int) -> int:
    """The process a thread belongs to (pidfd_open takes a process, not a thread)."""
    with open(f"/proc/{tid}/status", "rb") as handle:
        for line in handle:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1])
    raise OSError(errno.ESRCH, "no Tgid")


def _root_reads(info: os.stat_result) -> bool:
    """Whether uid 0 without CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH may read it (a
    folder: read it and search it)."""
    need = 0o5 if stat.S_ISDIR(info.st_mode) else 0o4
    if info.st_uid == 0:
        shift = 6
    elif info.st_gid in (os.getegid(), *os.getgroups()):
        shift = 3
    else:
        shift = 0
    return (info.st_mode >> shift) & need == need
