"""The exec watch: every execve the sandbox makes, judged as Landlock judges it, and its
memory files made sealed.

The watch never decides: every exec goes on (USER_NOTIF_FLAG_CONTINUE) and Landlock
alone refuses. It judges the file the kernel will run, by device and inode against the
same list Landlock enforces, so that a refused program is named (and `learn` can list
what ran) without a privilege a person's lnk does not have. A script's `#!` interpreter
is judged too, since the kernel opens it for execution as well.

The order, for a list: read the path, judge the file, and only for a refusal say it
(stderr, the report) before the call goes on; then CONTINUE, always. Said after, the
notice raced the refused program's own words on the same stderr (dash writes its
"Permission denied" in three writes), and landed inside its line, where nothing that
reads lines beginning `lnk-sandbox:` finds it. The judgement (an openat2 and an fstat)
now comes before every exec goes on; the notice's cost, a refusal's alone. For learn
(every exec recorded, nothing said), the call goes on first and is judged after, as
before: its sandbox may have ended by then, which `_hold_root` provides for.

Under a program list, memfd_create without MFD_NOEXEC_SEAL comes here: the watch makes
the file itself with the flags asked plus MFD_NOEXEC_SEAL (MFD_EXEC dropped) and puts it
in the program as the call's answer (ADDFD_FLAG_SEND). The program gets a memory file it
can write, seal and map executable, but never run.

Facts that shape the loop (see notify.py): RECV ignores O_NONBLOCK, and a RECV blocked
when the sandbox ends is never woken (the kernel wakes only pollers at hang-up). So a
receiver polls first, and receives only after the poll said readable, holding a lock
while it does: no two receivers race for one notification, and none is left blocked in
RECV at the end. Hang-up (no task left using the filter) ends the receivers; they never
spin. There are several (leader and followers): SEND wakes the exec'ing task, which
often preempts the receiver that answered it for the length of an exec, and another
receiver takes the next notification meanwhile. They are threads, not event-loop tasks,
because the target's first execve waits on them and must not wait for the supervisor's
imports.
"""

from __future__ import annotations

import errno
import importlib
import os
import select
import stat
import threading
from collections.abc import Callable
from typing import Any

from inner.seccomp import MFD_CLOEXEC, MFD_EXEC, MFD_NOEXEC_SEAL

from ..events import BUILT_INSIDE, EventLog, Executed
from ..grants import is_within
from . import notify
from .openat2 import RESOLVE_IN_ROOT, RESOLVE_NO_MAGICLINKS, openat2

_watchc: Any = None


def compiled_available() -> bool:
    """Whether the compiled hot path was built (setup.py, where a C compiler is); loaded
    on first use, since cffi's backend costs a start that runs no watch."""
    global _watchc
    if _watchc is None:
        try:
            _watchc = importlib.import_module("supervisor.linux._watchc")
        except ImportError:
            _watchc = False
        if _watchc and not hasattr(_watchc.lib, "lnk_watch_continue"):
            _watchc = False  # built from an older source, which says a refusal late
    return bool(_watchc)

AT_FDCWD = -100
# One receiver per CPU, at most four: the record found four best on 4 CPUs (eight gaining
# nothing); on this 2-CPU machine benchmarks/exec_watch.py measured 1 and 2 receivers at
# about 50 us added per exec and 4 at 65 us, with 2 to 6% less throughput for all three.
RECEIVERS = min(4, max(1, os.cpu_count() or 1))
_READABLE = select.POLLIN
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


CHANGED = ("listed in [commands], but changed since the sandbox started: the list holds "
           "the file that was there then, since one rebuilt or replaced during the run "
           "could hold anything the sandbox wrote")


class Judge:
    """The list Landlock enforces, as (device, inode); None means every program runs.

    With `record` (learn), every exec seen is kept in `seen` instead of judged. `listed`:
    the paths of the listed files, to say why a file at one of them is refused anyway
    (it is another file now).
    """

    def __init__(self, allowed: frozenset[tuple[int, int]] | None, *,
                 record: bool = False, listed: frozenset[str] = frozenset(),
                 written: tuple[str, ...] = ()) -> None:
        self.allowed = allowed
        self.record = record
        self.listed = listed
        self.written = written  # folders the sandbox writes: a program there is its own
        self.seen: list[Executed] = []

    def reason(self, path: str | None) -> str:
        """Why a refused file is not on the list, where the list alone does not say."""
        if path is None:
            return ""
        if path in self.listed:
            return CHANGED
        if any(is_within(path, folder) for folder in self.written):
            return BUILT_INSIDE
        return ""

    def wants(self, identity: tuple[int, int]) -> bool:
        """Whether an exec of the file `identity` (device, inode) is reported: every one
        for learn, else those the list refuses. The compiled watch decides the same from
        the same fields (record, allowed)."""
        return self.record or (self.allowed is not None and identity not in self.allowed)


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
        receivers: int = RECEIVERS,
        compiled: bool = True,
        handlers: Callable[[int], dict[int, Callable[[notify.Notification], None]]]
        | None = None,
    ):
        self.listener = listener
        self.judge = judge
        self.events = events
        self.seal_memfd = seal_memfd
        self._execve = numbers["execve"]
        self._execveat = numbers["execveat"]
        self._memfd = numbers["memfd_create"]
        self.reader = notify.MemoryReader()
        self.root: int | None = None
        self._mounts: int | None = None  # the sandbox's mount namespace, held (see _hold_root)
        self._root_lock = threading.Lock()
        self.failure: BaseException | None = None
        self.on_failure: Callable[[], None] | None = None
        self._leader = threading.Lock()
        self._done = False
        self.compiled = compiled and compiled_available()
        self._native: Any = None
        if self.compiled:
            self._native = self._native_watch()
        target = self._run_compiled if self.compiled else self._run
        self._threads = [
            threading.Thread(target=target, name=f"lnk-exec-watch-{i}", daemon=True)
            for i in range(receivers)
        ]
        self._handlers: dict[int, Callable[[notify.Notification], None]] = {
            self._execve: self._on_exec,
            self._execveat: self._on_exec,
            self._memfd: self._on_memfd,
        }
        if handlers is not None:  # a run without namespaces' (direct_metadata.py)
            self._handlers.update(handlers(listener))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float | None = None) -> None:
        for thread in self._threads:
            thread.join(timeout)
        for fd in (self.root, self._mounts):
            if fd is not None:
                os.close(fd)
        self.root = self._mounts = None
        if self._native is not None and not any(t.is_alive() for t in self._threads):
            _watchc.lib.lnk_watch_free(self._native)
            self._native = None

    # -- the compiled receivers ------------------------------------------------------------

    def _native_watch(self) -> Any:
        ffi, lib = _watchc.ffi, _watchc.lib
        allowed = sorted(self.judge.allowed or ())
        flat = ffi.new("unsigned long long[]", [n for pair in allowed for n in pair] or [0])
        native = lib.lnk_watch_new(self.listener, self._execve, self._execveat,
                                   int(self.judge.record), int(self.judge.allowed is not None),
                                   flat, len(allowed))
        if native == ffi.NULL:
            raise MemoryError("the exec watch could not be made")
        return native

    def _run_compiled(self) -> None:
        ffi, lib = _watchc.ffi, _watchc.lib
        event = ffi.new("struct lnk_event *")
        try:
            while True:
                lib.lnk_watch_next(self._native, event)  # the GIL is released meanwhile
                if event.kind == lib.LNK_DONE:
                    return
                if event.kind == lib.LNK_ERROR:
                    raise OSError(event.err, os.strerror(event.err), "the exec watch")
                if event.kind == lib.LNK_EXEC:
                    self._compiled_exec(ffi, event)
                    continue
                notification = notify.Notification.of(event.id, event.pid, event.nr,
                                                       tuple(event.args))
                self._handlers.get(event.nr, self._unexpected)(notification)
        except BaseException as err:  # the run must end with a clear error, not hang
            self.failure = err
            if self.on_failure is not None:
                self.on_failure()

    def _compiled_exec(self, ffi: Any, event: Any) -> None:
        """A refusal (or, for learn, any exec) the compiled loop judged; a refusal's
        call waits (`pending`) until it is said, then goes on, whatever happened."""
        try:
            asked = os.fsdecode(ffi.string(event.asked))
            resolved = os.fsdecode(ffi.string(event.resolved)) or None
            if event.wanted:
                self._report(event.pid, Executed(asked, resolved, event.dev, event.ino))
            if event.interp_wanted:
                name = os.fsdecode(ffi.string(event.interp_asked))
                self._report(event.pid, Executed(
                    name, os.fsdecode(ffi.string(event.interp_resolved)) or None,
                    event.interp_dev, event.interp_ino, interpreter_of=resolved or asked))
        finally:
            if event.pending:
                _watchc.lib.lnk_watch_continue(self._native, event.id)

    def _report(self, pid: int, item: Executed) -> None:
        if self.judge.record:
            self.judge.seen.append(item)
        else:
            self.events.add("program", item.asked, item.path or item.asked,
                            "commands.programs", pid, reason=self.judge.reason(item.path))

    def _next(self, poller: select.poll) -> notify.Notification | None:
        """The next notification, or None once the sandbox is gone (as the leader)."""
        with self._leader:
            while not self._done:
                ready = poller.poll()
                if not ready:
                    continue
                mask = ready[0][1]
                if not mask & _READABLE:
                    self._done = True  # hang-up: the sandbox is gone
                    break
                try:
                    return notify.receive(self.listener)
                except OSError as err:
                    if err.errno != errno.ENOENT:
                        raise
                    if mask & _GONE:
                        self._done = True
                    # else the caller died between the poll and the receive
            return None

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.listener, _READABLE)
        try:
            while (notification := self._next(poller)) is not None:
                handler = self._handlers.get(notification.nr, self._unexpected)
                handler(notification)
        except BaseException as err:  # the run must end with a clear error, not hang
            self._done = True
            self.failure = err
            if self.on_failure is not None:
                self.on_failure()  # a call left waiting on an unread listener would hang

    def _unexpected(self, notification: notify.Notification) -> None:
        notify.send_error(self.listener, notification.id, errno.ENOSYS)

    # -- exec --------------------------------------------------------------------------

    def _on_exec(self, notification: notify.Notification) -> None:
        """Read the path and what resolving it needs, judge the file, say a refusal,
        and let the call go on (the module's docstring says why in this order).

        Every process of the sandbox has the same root (chroot, pivot_root and new mount
        namespaces are refused by the filter), so it is opened once and kept for the run.
        """
        pid = notification.pid
        if notification.nr == self._execve:
            dirfd, pointer = AT_FDCWD, notification.args[0]
        else:
            dirfd, pointer = _signed(notification.args[0]), notification.args[1]
        raw = self.reader.read_string(pid, pointer)
        path = None
        if raw:
            asked = os.fsdecode(raw)
            path = asked
            try:
                if not asked.startswith("/"):
                    base = os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD
                                       else f"/proc/{pid}/fd/{dirfd}")
                    path = f"{base.rstrip('/')}/{asked}"
                if self.root is None:
                    self._hold_root(pid)
            except OSError:
                path = None
            if path is not None and not notify.id_valid(self.listener, notification.id):
                path = None  # the caller died, and the pid may be another's now
        if self.judge.record or path is None or self.root is None:
            notify.send_continue(self.listener, notification.id)
            if path is not None and self.root is not None:
                self._judge_file(pid, asked, path, None)
            return
        try:
            self._judge_file(pid, asked, path, None)  # says a refusal, before it goes on
        finally:
            notify.send_continue(self.listener, notification.id)

    def _hold_root(self, pid: int) -> None:
        """Open the sandbox's root, and hold its mount namespace for the rest of the run.

        The file is judged after the exec went on, so the sandbox may have ended by then
        (a refused program exits at once). When its last process exits, the kernel
        unmounts the whole tree of its mount namespace, and a root fd alone then shows
        the bare mount points: the file is gone and the refusal would go unnamed. An open
        /proc/PID/ns/mnt keeps the namespace, and every mount in it, until the watch
        closes it. Both are opened while the caller waits on the watch, so it is alive.
        """
        with self._root_lock:
            if self.root is not None:
                return
            mounts = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
            try:
                self.root = os.open(f"/proc/{pid}/root",
                                    os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                os.close(mounts)
                raise
            self._mounts = mounts

    def _judge_file(self, pid: int, asked: str, path: str, script: str | None) -> None:
        assert self.root is not None
        fd, readable = None, True
        # Non-blocking: the sandbox may exec a FIFO (the kernel refuses it), whose plain
        # open would wait for a writer and stall this receiver, and with it every exec
        # after. An unreadable file (mode 0711) is still judged, through O_PATH.
        for flags in (os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, os.O_PATH):
            try:
                fd = openat2(self.root, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
                break
            except OSError:
                readable = False
        if fd is None:
            return  # gone: the kernel's answer stands, unnamed
        try:
            info = os.fstat(fd)
            identity = (info.st_dev, info.st_ino)
            head = (os.pread(fd, 256, 0) if readable and script is None
                    and stat.S_ISREG(info.st_mode) else b"")
            wanted = self.judge.wants(identity)
            resolved = _inside_path(fd) if wanted else None
        finally:
            os.close(fd)
        if wanted:
            self._report(pid, Executed(asked, resolved, info.st_dev, info.st_ino,
                                       interpreter_of=script))
        if head.startswith(b"#!"):
            words = head[2:].split(b"\n", 1)[0].split()
            if words:
                self._judge_file(pid, os.fsdecode(words[0]), os.fsdecode(words[0]),
                                 script=path)

    # -- memory files --------------------------------------------------------------------

    def _on_memfd(self, notification: notify.Notification) -> None:
        flags = notification.args[1] & 0xFFFFFFFF
        if not self.seal_memfd:
            notify.send_error(self.listener, notification.id, errno.ENOSYS)
            return
        raw = self.reader.read_string(notification.pid, notification.args[0], limit=250)
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
