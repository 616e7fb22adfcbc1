"""Supervising a running bwrap: the status socket, signals, the exit status.

The supervisor stays bwrap's parent for the whole run. It waits without an event loop
(select on bwrap's pidfd, the deadline's and the kill grace's timeouts, the signals'
wakeup fd), however long the run lasts, until something needs its services: anyio,
asyncio and uvloop cost 65 to 85 ms of CPU to import here (issue 21). The network's
services (the proxy, forwarded and exposed ports) are needed once one of the fds they
serve is readable (a connection waits, a datagram came: `wake`), or the helper died;
from then on they run under anyio beside the same wait. A command that makes no
connection never loads the loop. Nothing decides less in one way than in the other: the
status socket is read by a thread from the start, and signals are forwarded by the same
handlers in both.

`prepare` runs in that thread before it reads the inner's first message: the network's
hand-off to its helper, whose listeners the go waits for (the thread sends the go; none
when `prepare` says the sandbox ended first).

Signals: bwrap forwards none, and one that killed it would kill the target with it
(die-with-parent). Those sent to the supervisor are passed to bwrap's process group by
the rule both OSes share (signal_forwarding.py: which signals, an end asked twice or
outlived by its grace kills the whole tree); here each handled signal also wakes
wait_sync, which waits for that grace.

Timeout: a run given one (deadline.py) that is still going at its deadline is killed
whole by `Supervision.time_out`, in either phase, and ends with status 124.
"""

from __future__ import annotations

import _socket
import array
import errno
import json
import os
import select
import signal
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from inner import protocol

from ..deadline import TIMEOUT_STATUS, Deadline
from ..errors import ConfinementError, HelperError, LaunchError, SandboxError
from ..events import say
from ..signal_forwarding import SignalForwarding
from ..terminal import give_terminal
from .launch import Launched
from .mount_watch import identities, replaced
from .plan import SOCKET_HIDDEN

if TYPE_CHECKING:
    from .mount_watch import MountWatch
    from .watch import ExecWatch

# A task run in the loop beside the wait for bwrap (the network proxy and its helper);
# cancelled when bwrap ends.
Service = Callable[["Supervision"], Coroutine[Any, Any, None]]


class Served(NamedTuple):
    """What a part of the run served in the loop asks of `supervise` (the network: the
    proxy, forwarded and exposed ports, and their helper): `service`, run under anyio
    beside the wait once it is needed; `prepare`, run in the status thread before the
    go (the hand-off to the helper, whose listeners the go waits for; False when the
    sandbox ended first: no go, ever); and `wake`, the fds whose readiness needs the
    service (a connection waits, a datagram came, the helper died)."""

    service: Service
    prepare: Callable[[Supervision], bool]
    wake: Callable[[], Sequence[int]]


class ExecFailure(NamedTuple):
    """The inner's execve failed: `errno` and the program as given; `interpreter`, the
    `#!` interpreter of a script found, when that is what is missing."""

    errno: int
    program: str
    interpreter: str | None = None

    @property
    def status(self) -> int:
        if self.interpreter is not None:
            return 126  # the script is there, and cannot run
        return 127 if self.errno in (errno.ENOENT, errno.ENOTDIR) else 126


class Outcome(NamedTuple):
    """How a run ended: the exit status of the design and why, for the command line."""

    status: int
    exec_failure: ExecFailure | None = None
    problem: SandboxError | None = None
    timed_out: bool = False
    # bwrap failed before the sandbox existed (its own message is on the terminal): the
    # backend asks whether its user namespace was the cause (userns.py).
    setup_failed: bool = False


class Supervision:
    """One run's supervision state, shared by the control thread and the main thread."""

    def __init__(self, launched: Launched,
                 watch_factory: Callable[[int], ExecWatch] | None = None,
                 services: Sequence[Service] = (), timeout: float | None = None,
                 mounts: Mapping[str, str] | None = None):
        self.launched = launched
        self.deadline = Deadline(timeout)
        self.timed_out = False
        self.watch_factory = watch_factory
        self.services = tuple(services)
        self.problem: SandboxError | None = None
        self.watch: ExecWatch | None = None
        self.exec_failure: ExecFailure | None = None
        self.confinement_failure: str | None = None
        self.listeners: list[int] = []
        self.go_conditions: list[threading.Event] = []
        self.killed = False
        self.mounts = dict(mounts or {})  # watched mount points, with their reasons
        self.mount_watch: MountWatch | None = None
        self.mount_sources = identities(self.mounts) if self.mounts else {}
        self.went = False  # the go was given: the command may have run
        self.signals = SignalForwarding(launched.pid, self.kill, after_signal=self.poke)
        self._wake: int | None = None  # wait_sync's pipe: a signal handled wakes its wait
        self._wake_lock = threading.RLock()  # the handler's (main thread) and poke's
        self.prepare: Callable[[Supervision], bool] | None = None
        self.wake: Callable[[], Sequence[int]] | None = None
        self._control = threading.Thread(target=self._read_status, name="lnk-status",
                                         daemon=True)

    # -- the status socket ---------------------------------------------------------------

    def start(self) -> None:
        self.signals.install()
        self._control.start()

    def _read_status(self) -> None:
        if self.prepare is not None:
            try:
                if not self.prepare(self):
                    return  # the sandbox ended first: no go, ever
            except SandboxError as problem:
                self.fail(problem)
                return
            except Exception as err:  # a bug of lnk-sandbox's: the run ends, said
                self.fail(HelperError(f"the network's start failed: "
                                      f"{type(err).__name__}: {err}"))
                return
        sock = self.launched.status
        while True:
            try:
                message, ancillary, _, _ = sock.recvmsg(8192, _socket.CMSG_SPACE(4 * 4),
                                                        _socket.MSG_CMSG_CLOEXEC)
            except OSError:
                return
            if not message:
                return
            kind, body = message[:1], message[1:]
            if kind == protocol.WAITING:
                if self.mounts and self.mount_watch is None:
                    self.fail(ConfinementError(
                        "the sandbox's mount table was not handed over, so a protection "
                        "the host takes away while the run lasts would go unseen"))
                    return
                for condition in self.go_conditions:
                    condition.wait()
                if self.killed:
                    return  # a failed condition (the network helper): no go, ever
                try:
                    sock.send(protocol.GO)
                    self.went = True
                except OSError:
                    return
            elif kind == protocol.EXEC_FAILED:
                code, _, rest = body.decode("utf-8", "replace").partition(" ")
                program, nul, interpreter = rest.partition("\0")
                self.exec_failure = ExecFailure(int(code or 0), program,
                                                interpreter if nul else None)
            elif kind == protocol.NOTICE:
                if body == protocol.NO_LANDLOCK.encode():
                    say("this kernel has no Landlock: bubblewrap's mounts and the seccomp "
                         "filter alone hold the files and the network")
                elif body == protocol.NO_LISTENER.encode():
                    say("another seccomp listener holds this process, so there is no exec "
                         "watch: refused programs go unnamed and memory files are refused")
            elif kind == protocol.CONFINEMENT_FAILED:
                self.confinement_failure = body.decode("utf-8", "replace")
            elif kind == protocol.MOUNTS and self.mounts and self.mount_watch is None:
                table = _received_fds(ancillary)
                if table:
                    from .mount_watch import MountWatch

                    for extra in table[1:]:
                        os.close(extra)
                    self.mount_watch = MountWatch(table[0], self.mounts, self._mount_lost)
                    self.mount_watch.start()
            elif kind == protocol.LISTENER:
                self.listeners.extend(_received_fds(ancillary))
                if self.listeners and self.watch_factory is not None and self.watch is None:
                    # Started before the go: the target's first execve waits on it.
                    self.watch = self.watch_factory(self.listeners[0])
                    self.watch.on_failure = self.kill
                    self.watch.start()

    def _mount_lost(self, path: str, reason: str) -> None:
        """A protection inside a written folder is gone: the host replaced or removed
        what was there (mount_watch.py). The run ends before the command can use it."""
        hint = (f"check {path} before your tools use it (git diff, or its tool's own "
                "view), and run again once the change on the host is done")
        if reason == SOCKET_HIDDEN:
            hint = ("a program on the host listens there again, or will (an agent restarted): run "
                    "again, or name the socket in [network] unix if the sandbox may use it")
        self.fail(ConfinementError(
            f"{path} was replaced or removed on the host while the run lasted (or a "
            f"folder above it moved), which took off the mount that kept it from the "
            f"sandbox ({reason}); the run is ended, since from then the sandbox could "
            "reach it", hint=hint))

    # -- signals -------------------------------------------------------------------------

    def poke(self) -> None:
        """Wake wait_sync to look again (a signal handled, new fds for `wake`).

        Run by each signal handler after its forward: what that decided (a kill grace)
        is waited for from now, though the handler may run after wait_sync computed its
        timeout."""
        with self._wake_lock:
            if self._wake is not None:
                try:
                    os.write(self._wake, b"\0")
                except OSError:
                    pass  # full: it is awake already

    def kill(self) -> None:
        """End the whole tree: bwrap's pid 1 dies with bwrap, and the namespace with it."""
        self.killed = True
        try:
            os.killpg(self.launched.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.kill(self.launched.pid, signal.SIGKILL)
        except OSError:
            pass

    def time_out(self) -> None:
        """The run's deadline passed with bwrap still running: kill the whole tree (a
        program ignoring SIGTERM included) and release a go still waited for."""
        self.timed_out = True
        self.kill()
        for condition in self.go_conditions:
            condition.set()

    def fail(self, problem: SandboxError) -> None:
        """End the run for `problem` (status 125), releasing a go that waits."""
        if self.problem is None:
            self.problem = problem
        self.kill()
        for condition in self.go_conditions:
            condition.set()

    def overdue(self) -> bool:
        if not self.timed_out and self.deadline.passed():
            self.time_out()
            return True
        return self.signals.overdue()

    def time_left(self) -> float | None:
        """Seconds until the next thing to act on (a kill grace, the deadline), or None."""
        waits = [] if self.timed_out else [self.deadline.left()]
        waits.append(self.signals.grace_left())
        known = [w for w in waits if w is not None]
        return min(known) if known else None

    # -- waiting -------------------------------------------------------------------------

    def wait_sync(self) -> bool:
        """Wait without an event loop, acting on the deadline and the kill grace when
        they come, until bwrap ends (False) or one of `wake`'s fds is readable (True:
        the services are needed from now on).

        The kernel may give a signal to any thread (the status thread blocks in recvmsg),
        and Python runs its handler in the main thread only once that thread runs again:
        the wakeup fd, written by the C-level handler whichever thread it ran on, ends the
        select, and the handler's own write (poke, its after_signal) wakes it again after
        whatever the handler decided."""
        read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        with self._wake_lock:
            self._wake = write_end
        try:
            while True:
                self.overdue()
                woken = tuple(self.wake()) if self.wake is not None else ()
                readable, _, _ = select.select([self.launched.pidfd, read_end, *woken], [],
                                               [], self.time_left())
                if self.launched.pidfd in readable:
                    return False
                if any(fd in readable for fd in woken) and self.wake is not None and \
                        any(fd in readable for fd in self.wake()):
                    return True  # (asked again: the sandbox may have ended meanwhile)
                if read_end in readable:
                    try:
                        while os.read(read_end, 512):
                            pass
                    except BlockingIOError:
                        pass
        finally:
            with self._wake_lock:
                self._wake = None
            signal.set_wakeup_fd(previous)
            os.close(read_end)
            os.close(write_end)

    async def wait_async(self) -> None:
        import anyio

        async with anyio.create_task_group() as group:
            for service in self.services:
                group.start_soon(service, self)
            while True:
                self.overdue()
                wait = self.time_left()
                with anyio.move_on_after(3600 if wait is None else wait):
                    await anyio.wait_readable(self.launched.pidfd)
                    break
            group.cancel_scope.cancel()

    # -- the end -------------------------------------------------------------------------

    def finish(self) -> Outcome:
        """Reap bwrap, give the terminal back, and say how the run ended."""
        if self.launched.ended is not None:
            # What the sandbox left is ended before the command is reaped: its zombie
            # keeps its pid, the sandbox's group id, from any new process meanwhile.
            os.waitid(os.P_PIDFD, self.launched.pidfd, os.WEXITED | os.WNOWAIT)
            self.launched.ended()
        _, wait_status = os.waitpid(self.launched.pid, 0)
        self._control.join(timeout=5)
        if self.mount_watch is not None:
            self.mount_watch.stop()
        # A command that wrote a path in the moment between the host's replace and the
        # watch's end of the run may have ended by itself first: what the host replaced
        # is found by its identity all the same, and said.
        if self.problem is None and self.went and \
                (gone := replaced(self.mount_sources, self.mounts)) is not None:
            self._mount_lost(gone, self.mounts[gone])
        self.signals.restore()
        give_terminal(self.launched.terminal_fd, os.getpgrp())
        records = _read_json_records(self.launched.json_status)
        self.launched.close()
        watch_failure = None
        if self.watch is not None:
            self.watch.join(timeout=5)
            watch_failure = self.watch.failure
        for fd in self.listeners:
            os.close(fd)
        codes = [r["exit-code"] for r in records if isinstance(r.get("exit-code"), int)]
        exit_code: int | None = codes[0] if codes else None
        if self.problem is not None:
            return Outcome(125, problem=self.problem)
        if watch_failure is not None:
            return Outcome(125, problem=HelperError(
                f"the exec watch failed mid-run, so the sandbox was ended: {watch_failure}"))
        if self.confinement_failure is not None:
            return Outcome(125, problem=ConfinementError(
                f"the sandbox could not be confined: {self.confinement_failure}"))
        if self.timed_out:
            return Outcome(TIMEOUT_STATUS, timed_out=True)
        if self.exec_failure is not None:
            return Outcome(self.exec_failure.status, exec_failure=self.exec_failure)
        if self.launched.direct:  # the command itself was waited for (direct.py)
            if os.WIFSIGNALED(wait_status):
                return Outcome(128 + os.WTERMSIG(wait_status))
            return Outcome(os.waitstatus_to_exitcode(wait_status))
        if exit_code is not None:
            return Outcome(exit_code)
        if os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            if self.killed:
                return Outcome(128 + number)
            return Outcome(125, problem=HelperError(
                f"bubblewrap was killed by signal {number} before the command ended"))
        code = os.waitstatus_to_exitcode(wait_status)
        return Outcome(125, problem=LaunchError(
            f"bubblewrap could not set up the sandbox (exit status {code}; its own message "
            "is above)",
            hint="run `lnk sandbox plan` to see the mounts it was asked for",
        ), setup_failed=True)


def _read_json_records(fd: int) -> list[dict[str, Any]]:
    """bwrap's --json-status-fd output: one JSON object per line."""
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        except OSError as err:
            if err.errno == errno.EINTR:
                continue
            break
        if not chunk:
            break
        data += chunk
    records = []
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors a status message carried (SCM_RIGHTS)."""
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return list(fds)


def supervise(
    launched: Launched,
    *,
    watch_factory: Callable[[int], ExecWatch] | None = None,
    served: Sequence[Served] = (),
    timeout: float | None = None,
    mounts: Mapping[str, str] | None = None,
) -> Outcome:
    """Supervise until bwrap ends; under anyio only once a service of `served` is
    needed (one of its `wake` fds is readable).

    Each of `served` has its `prepare` run in the status thread before the go, and its
    service run in the loop beside the wait once needed; `timeout` (seconds, from now)
    kills the whole tree when it is up (status 124); `mounts`, the mount points that
    keep something of a written folder from the sandbox, by reason: the run ends (125)
    when one of them goes (mount_watch.py).
    """
    supervision = Supervision(launched, watch_factory, [s.service for s in served], timeout,
                              mounts)
    if served:
        supervision.prepare = lambda running: all(s.prepare(running) for s in served)
        supervision.wake = lambda: [fd for s in served for fd in s.wake()]
    supervision.start()
    try:
        if supervision.wait_sync():
            _run_loop(supervision)
    except BaseException:
        supervision.kill()
        supervision.finish()
        raise
    return supervision.finish()


def _run_loop(supervision: Supervision) -> None:
    import anyio

    backend_options: dict[str, object] = {}
    try:
        import uvloop  # noqa: F401

        backend_options["use_uvloop"] = True
    except ImportError:
        pass
    anyio.run(supervision.wait_async, backend="asyncio", backend_options=backend_options)
