"""The exec watch: every execve the sandbox makes, judged as Landlock judges it, and its
memory files made sealed.

The watch never decides: every exec goes on (USER_NOTIF_FLAG_CONTINUE) and Landlock
alone refuses. It judges the file the kernel will run, by device and inode against the
same list Landlock enforces, so that a refused program is named (and `learn` can list
what ran) without a privilege a person's lnk does not have. A script's `#!` interpreter
is judged too, since the kernel opens it for execution as well.

Under a program list, memfd_create without MFD_NOEXEC_SEAL comes here: the watch makes
the file itself with the flags asked plus MFD_NOEXEC_SEAL (MFD_EXEC dropped) and puts it
in the program as the call's answer (ADDFD_FLAG_SEND). The program gets a memory file it
can write, seal and map executable, but never run.

Facts that shape the loop (see notify.py): RECV ignores O_NONBLOCK and a RECV blocked when
the sandbox ends is never woken, so one receiver thread polls first and then receives: a
poll that says readable leaves a RECV that cannot block. Hang-up (no task left using the
filter) ends the thread; it never spins. The receiver is a thread, not an event-loop
task, because the target's first execve waits on it and must not wait for the
supervisor's imports.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..events import EventLog
from . import notify
from .openat2 import RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, openat2

AT_FDCWD = -100
MFD_CLOEXEC = 0x1
MFD_EXEC = 0x10
MFD_NOEXEC_SEAL = 0x8
_READABLE = select.POLLIN
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


@dataclass(frozen=True)
class Executed:
    """One exec the watch saw: the path as asked, and the file it resolved to inside
    (its path, device and inode; None where it could not be resolved)."""

    asked: str
    path: str | None
    device: int = 0
    inode: int = 0
    interpreter_of: str | None = None


@dataclass
class Judge:
    """The list Landlock enforces, as (device, inode); None means every program runs."""

    allowed: frozenset[tuple[int, int]] | None
    seen: list[Executed] = field(default_factory=list)
    record: bool = False

    def allows(self, item: Executed) -> bool:
        return self.allowed is None or item.path is None or (
            (item.device, item.inode) in self.allowed)


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class ExecWatch:
    """The receiver thread on one listener, started as soon as the inner hands it over."""

    def __init__(
        self,
        listener: int,
        *,
        numbers: dict[str, int],
        judge: Judge,
        events: EventLog,
        seal_memfd: bool,
    ):
        self.listener = listener
        self.judge = judge
        self.events = events
        self.seal_memfd = seal_memfd
        self._execve = numbers["execve"]
        self._execveat = numbers["execveat"]
        self._memfd = numbers["memfd_create"]
        self.failure: BaseException | None = None
        self.on_failure: Callable[[], None] | None = None
        self.handled = 0
        self._thread = threading.Thread(target=self._run, name="lnk-exec-watch", daemon=True)
        self._handlers: dict[int, Callable[[notify.Notification], None]] = {
            self._execve: self._on_exec,
            self._execveat: self._on_exec,
            self._memfd: self._on_memfd,
        }

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.listener, _READABLE)
        try:
            while True:
                ready = poller.poll()
                if not ready:
                    continue
                mask = ready[0][1]
                if not mask & _READABLE:
                    return  # hang-up: the sandbox is gone
                try:
                    notification = notify.receive(self.listener)
                except OSError as err:
                    if err.errno == errno.ENOENT:
                        if mask & _GONE:
                            return
                        continue  # the caller died between the poll and the receive
                    raise
                self.handled += 1
                handler = self._handlers.get(notification.nr, self._unexpected)
                handler(notification)
        except BaseException as err:  # the run must end with a clear error, not hang
            self.failure = err
            if self.on_failure is not None:
                self.on_failure()  # a call left waiting on an unread listener would hang

    def _unexpected(self, notification: notify.Notification) -> None:
        notify.send_error(self.listener, notification.id, errno.ENOSYS)

    # -- exec --------------------------------------------------------------------------

    def _on_exec(self, notification: notify.Notification) -> None:
        pid = notification.pid
        if notification.nr == self._execve:
            dirfd, pointer = AT_FDCWD, notification.args[0]
        else:
            dirfd, pointer = _signed(notification.args[0]), notification.args[1]
        raw = notify.read_string(pid, pointer)
        item = None
        if raw is not None and notify.id_valid(self.listener, notification.id):
            item = self._resolve(pid, dirfd, os.fsdecode(raw))
        notify.send_continue(self.listener, notification.id)
        if item is not None:
            self._judge(pid, item)

    def _judge(self, pid: int, item: Executed) -> None:
        if self.judge.record:
            self.judge.seen.append(item)
        elif not self.judge.allows(item):
            self.events.add("program", item.asked, item.path or item.asked,
                            "commands.programs", pid)

    def _resolve(self, pid: int, dirfd: int, asked: str) -> Executed | None:
        """Resolve `asked` as the kernel will for process `pid`; its interpreter too."""
        path = asked
        try:
            if not path.startswith("/"):
                base = os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD
                                   else f"/proc/{pid}/fd/{dirfd}")
                path = f"{base.rstrip('/')}/{path}"
            root = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return self._open_and_stat(root, asked, path, pid)
        finally:
            os.close(root)

    def _open_and_stat(self, root: int, asked: str, path: str, pid: int) -> Executed | None:
        try:
            fd = openat2(root, path, os.O_RDONLY, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
        except OSError:
            try:
                fd = openat2(root, path, os.O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
            except OSError:
                return None
        try:
            info = os.fstat(fd)
            resolved = _inside_path(fd)
            head = b""
            if stat.S_ISREG(info.st_mode):
                try:
                    head = os.pread(fd, 256, 0)
                except OSError:
                    head = b""
        finally:
            os.close(fd)
        item = Executed(asked, resolved, info.st_dev, info.st_ino)
        if head.startswith(b"#!"):
            words = head[2:].split(b"\n", 1)[0].split()
            if words:
                interpreter = self._open_script_interpreter(root, os.fsdecode(words[0]), item)
                if interpreter is not None:
                    self._judge(pid, interpreter)
        return item

    def _open_script_interpreter(self, root: int, name: str, script: Executed
                                 ) -> Executed | None:
        try:
            fd = openat2(root, name, os.O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            resolved = _inside_path(fd)
        finally:
            os.close(fd)
        return Executed(name, resolved, info.st_dev, info.st_ino,
                        interpreter_of=script.path or script.asked)

    # -- memory files --------------------------------------------------------------------

    def _on_memfd(self, notification: notify.Notification) -> None:
        flags = notification.args[1] & 0xFFFFFFFF
        if not self.seal_memfd:
            notify.send_error(self.listener, notification.id, errno.ENOSYS)
            return
        raw = notify.read_string(notification.pid, notification.args[0], limit=250)
        if raw is None:
            notify.send_error(self.listener, notification.id, errno.EFAULT)
            return
        wanted = (flags & ~(MFD_EXEC | MFD_CLOEXEC)) | MFD_NOEXEC_SEAL
        try:
            fd = os.memfd_create(os.fsdecode(raw), wanted | MFD_CLOEXEC)
        except OSError as err:
            notify.send_error(self.listener, notification.id, err.errno or errno.EINVAL)
            return
        try:
            notify.add_fd_and_send(self.listener, notification.id, fd,
                                   cloexec=bool(flags & MFD_CLOEXEC))
        except OSError as err:
            if err.errno != errno.ENOENT:  # the caller is gone: nothing to answer
                notify.send_error(self.listener, notification.id, errno.ENOSYS)
        finally:
            os.close(fd)


def _inside_path(fd: int) -> str | None:
    """The path of an fd as the sandbox sees it (the kernel prints it from the process's
    own root, which the supervisor cannot reach)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
