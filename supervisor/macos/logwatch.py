"""Seatbelt's reports read while the sandbox runs: `log stream` beside sandbox-exec.

Nothing on a Mac sees an exec without privileges a person's lnk lacks, but Seatbelt
writes a line to the system log for each program it refuses (and, under a `(with
report)` rule, each it allows). So the supervisor starts `log stream` before
sandbox-exec, proves it is attached with a probe whose report it waits for (backend.py),
reads its lines while the program runs and a little after, and turns the reports naming
this run's processes into events. Naming is advice: Seatbelt alone decided what ran.

Facts (the project's Seatbelt reference and docs/macos.md; not run on a Mac here):
- `log` refuses to run inside a sandbox ("Cannot run while sandboxed", exit 64): it runs
  outside, as the supervisor's child, in a process group of its own so that a Ctrl-C
  meant for the sandboxed program does not end it.
- macOS runs `log stream` only for members of the admin group: others get `log: Must be
  admin to run 'stream' command`, exit 77 (briefcase#2086, rookery). Its stderr is read,
  so the person is told that, and the fix.
- The stream attaches asynchronously: it sees only what is logged after, and its
  `Filtering the log data using ...` line is no proof (rookery). So readiness is a
  probe's own report, seen. Reports also arrive a little after the event, so reading
  goes on until the stream has been quiet for a while after the program ended.
- Kernel Sandbox reports are `Error` records, which the stream shows at its default
  level: no `--level debug`, which would make every process on the machine send its
  debug messages while the stream runs.
- A report names a process (`comm(pid)`), not a sandbox. One whose process is still
  there and not of this run is left out; one that is gone cannot be told apart, so
  another sandbox's refusal at the same moment may be named too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
import time
from collections.abc import Callable, Sequence

import anyio

from inner.syscalls import libc

from ..events import BUILT_INSIDE, EventLog, Executed
from ..grants import is_within
from .logparse import Report, parse_record

LOG = "/usr/bin/log"
# The kernel's Sandbox reports of execs only: every other deny of the profile is
# Seatbelt's business alone. A first sieve: logparse trusts a record only when the
# fields the logging system stamps say the kernel's Sandbox extension logged it.
PREDICATE = (
    '(processID == 0) AND (senderImagePath CONTAINS "/Sandbox") '
    'AND (eventMessage CONTAINS "process-exec")'
)
MAX_LINE = 64 * 1024
MAX_ERRORS = 16 * 1024
NOT_ADMIN_STATUS = 77
_LINEAGE_DEPTH = 128


def log_stream_argv(log: str = LOG) -> list[str]:
    return [log, "stream", "--style", "ndjson", "--predicate", PREDICATE]


def why_log_failed(status: int | None, errors: str, log: str = LOG) -> tuple[str, str]:
    """(what happened, what to do) when `log stream` ended or could not attach."""
    said = errors.strip().splitlines()[-1] if errors.strip() else ""
    if status == NOT_ADMIN_STATUS or "Must be admin" in errors:
        return (f"macOS runs `{log} stream` only for members of the admin group, and this "
                f"account is not one ({said or f'exit {status}'})",
                "run it from an administrator's account, or add this one to the admin "
                "group (sudo dseditgroup -o edit -a \"$USER\" -t user admin, then log in "
                "again)")
    if "sandboxed" in errors.lower():
        return (f"`{log}` refuses to run inside a sandbox, and lnk-sandbox runs inside one "
                f"({said})", "run lnk-sandbox outside any other sandbox")
    if status is None:
        return (f"`{log} stream` showed no report of the readiness probe in time",
                "run `lnk sandbox check`; if it says the stream is allowed, the system "
                "log is slow or busy: try again")
    return (f"`{log} stream` ended ({said or f'exit {status}'})",
            "run `lnk sandbox check` to see what this Mac allows")


# -- which processes are this run's ---------------------------------------------------------


def process_facts(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of a process that is there, or None when it is gone."""
    if sys.platform == "darwin":
        return _darwin_facts(pid)
    return _proc_facts(pid)


def _proc_facts(pid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data.rpartition(b")")[2].split()  # after the name, which may hold anything
    try:
        return int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


# libproc's PROC_PIDTBSDINFO: struct proc_bsdinfo (sys/proc_info.h), 136 bytes: twelve
# 32-bit fields (pbi_ppid at 16), pbi_comm[16], pbi_name[32], then pbi_nfiles and pbi_pgid
# (at 100) [U: the layout read from the header, not run here].
_PROC_PIDTBSDINFO = 3
_BSDINFO_SIZE = 136


def _darwin_facts(pid: int) -> tuple[int, int] | None:
    buffer = ctypes.create_string_buffer(_BSDINFO_SIZE)
    size = libc().proc_pidinfo(ctypes.c_int(pid), ctypes.c_int(_PROC_PIDTBSDINFO),
                              ctypes.c_uint64(0), buffer, ctypes.c_int(_BSDINFO_SIZE))
    if size != _BSDINFO_SIZE:
        return None
    (ppid,) = struct.unpack_from("=I", buffer, 16)
    (pgid,) = struct.unpack_from("=I", buffer, 100)
    return ppid, pgid


class Lineage:
    """Whether a process named by a report is of this run: sandbox-exec's pid (the
    command, after its exec), its process group, or a descendant."""

    def __init__(self, root: int,
                 facts: Callable[[int], tuple[int, int] | None] = process_facts):
        self.root = root
        self.facts = facts
        self.ours: set[int] = {root}

    def foreign(self, pid: int) -> bool:
        """True only for a process that is there and not of this run."""
        if pid in self.ours:
            return False
        current = pid
        for _ in range(_LINEAGE_DEPTH):
            facts = self.facts(current)
            if facts is None:
                # The reported process is gone (it cannot be told apart: kept), or an
                # ancestor went while walking up: the process is there, but not ours.
                return current != pid
            parent, group = facts
            if self.root in (group, parent):
                self.ours.add(pid)
                return False
            if parent <= 1 or parent == current:
                return True
            current = parent
        return True


class Namer:
    """Reports to events (a run) or to programs run (learn), for this run's processes."""

    def __init__(self, events: EventLog | None, *, learn: bool,
                 written: tuple[str, ...] = ()):
        self.events = events
        self.learn = learn
        self.written = written  # folders the sandbox writes: a program there is its own
        self.lineage: Lineage | None = None
        self.seen: list[Executed] = []
        self.root_refused = False
        self.probes: set[int] = set()  # the readiness probes' pids: never the run's
        self.probes_seen: set[int] = set()
        self.probe_program = ""

    def __call__(self, report: Report) -> None:
        program = report.program
        if report.pid in self.probes:
            if report.verdict == "allow" and program == self.probe_program:
                self.probes_seen.add(report.pid)
            return
        if program is None or self.lineage is None:
            return  # not an exec, or before this run's sandbox existed: not ours
        if report.verdict != ("allow" if self.learn else "deny"):
            return
        if self.lineage.foreign(report.pid):
            return
        if self.learn:
            self.seen.append(Executed(program, program))
            return
        if report.pid == self.lineage.root and report.comm == "sandbox-exec":
            # Before its exec the command's process is still sandbox-exec: the command
            # itself was refused. (After it, the same pid is the command's, refused a
            # program it tried to run in its own process, as `sh -c` does last.)
            self.root_refused = True
        if self.events is not None:
            built = any(is_within(program, folder) for folder in self.written)
            self.events.add("program", program, program, "commands.programs", report.pid,
                            reason=BUILT_INSIDE if built else "")


# -- the stream ------------------------------------------------------------------------------


class LogStream:
    """`log stream` as the supervisor's child, its output read line by line.

    `start` spawns it (OSError when it cannot); `read` runs as a task until the stream
    ends; `failure` says why it ended or never showed a report; `stop` ends and reaps
    it, and may be called any number of times. Only ndjson records are read (the live
    stream asks for them); its stderr is kept for the reason it gives.
    """

    def __init__(self, argv: Sequence[str], on_report: Callable[[Report], None]):
        self.argv = list(argv)
        self.on_report = on_report
        self.pid: int | None = None
        self.fd: int | None = None
        self.errors_fd: int | None = None
        self.errors = b""
        self.status: int | None = None
        self.ended = False
        self.last_line = 0.0
        self._skipping = False

    def start(self) -> None:
        read_end, write_end = os.pipe()
        errors_read, errors_write = os.pipe()
        try:
            self.pid = os.posix_spawn(
                self.argv[0], self.argv, dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, write_end, 1),
                    (os.POSIX_SPAWN_DUP2, errors_write, 2),
                ],
                setpgroup=0,
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
            )
        except BaseException:
            os.close(read_end)
            os.close(errors_read)
            raise
        finally:
            os.close(write_end)
            os.close(errors_write)
        os.set_blocking(read_end, False)
        os.set_blocking(errors_read, False)
        self.fd = read_end
        self.errors_fd = errors_read

    def _drain_errors(self) -> None:
        """What `log` said on stderr so far, kept up to MAX_ERRORS bytes."""
        while self.errors_fd is not None:
            try:
                chunk = os.read(self.errors_fd, 4096)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                os.close(self.errors_fd)
                self.errors_fd = None
                return
            self.errors = (self.errors + chunk)[-MAX_ERRORS:]

    def _reap(self, wait: float) -> None:
        """Note `log`'s exit status once it has ended, waiting at most `wait` seconds."""
        deadline = time.monotonic() + wait
        while self.pid is not None and self.status is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                self.pid = None
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(0.005)

    def failure(self) -> tuple[str, str]:
        """Why the stream cannot name programs: (what happened, what to do)."""
        if self.ended:
            self._reap(1.0)
        self._drain_errors()
        return why_log_failed(self.status if self.ended else None,
                              self.errors.decode("utf-8", "replace"), self.argv[0])

    async def read(self) -> None:
        """Read until the stream ends, each whole line parsed (the banner and anything
        else not an ndjson record are not reports)."""
        assert self.fd is not None
        buffer = b""
        try:
            while True:
                await anyio.wait_readable(self.fd)
                try:
                    chunk = os.read(self.fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                self.last_line = time.monotonic()
                *lines, buffer = (buffer + chunk).split(b"\n")
                for raw in lines:
                    if self._skipping:  # the rest of a line too long to be a report
                        self._skipping = False
                        continue
                    self._line(raw.decode("utf-8", "replace"))
                if len(buffer) > MAX_LINE:
                    buffer = b""
                    self._skipping = True
        finally:
            self.ended = True

    def _line(self, text: str) -> None:
        report = parse_record(text) if text.startswith("{") else None
        if report is not None:
            self.on_report(report)

    async def settle(self, *, quiet: float, limit: float) -> None:
        """After the program ended: read on until no line came for `quiet` seconds, at
        most `limit` seconds, since reports reach the stream a little late."""
        start = time.monotonic()
        while not self.ended:
            now = time.monotonic()
            if now - start >= limit or now - max(self.last_line, start) >= quiet:
                return
            await anyio.sleep(min(quiet / 4, 0.05))

    def stop(self, grace: float = 1.0) -> None:
        """End `log stream` (SIGTERM, then SIGKILL after `grace`) and reap it."""
        if self.pid is not None:
            pid, self.pid = self.pid, None
            status = _end(pid, grace)
            if status is not None:
                self.status = os.waitstatus_to_exitcode(status)
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
        if self.errors_fd is not None:
            self._drain_errors()
            if self.errors_fd is not None:
                os.close(self.errors_fd)
                self.errors_fd = None


def _end(pid: int, grace: float) -> int | None:
    """End and reap `pid` (SIGTERM, then SIGKILL after `grace`); its wait status, or None
    when it was reaped already."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return os.waitpid(pid, 0)[1]
        time.sleep(0.005)
