"""Refusals as structured events: one type, a bounded store, said once, written as JSON.

Events come from the exec watch (a program the list refused) and the network (a name or
address refused, and the use of a forwarded or exposed port, which is reported too);
they are known from the mechanism that saw them, never guessed from output.
Each refused thing is said once per run on stderr; each refusal (a thing refused to one
process) is one line of the report file a harness asked for (`--report FILE`, JSON
lines), up to a bound that keeps a program refusing in a loop from filling the disk.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import NamedTuple


class Executed(NamedTuple):
    """One exec a backend saw (Linux's exec watch, Seatbelt's reports on macOS): the
    path as asked, and the file it resolved to inside (its path, device and inode; None
    where it could not be resolved). What learn turns into `[commands]` lines."""

    asked: str
    path: str | None
    device: int = 0
    inode: int = 0
    interpreter_of: str | None = None


MAX_EVENTS = 10_000

# Why a program the list refused is not on it, where it was made in a folder the sandbox
# writes (a build's own output): learn never offers one there (learn.py), and the person
# reading the refusal is told why, and the two ways on.
BUILT_INSIDE = ("built inside a folder the sandbox writes, so never listed by learn; run "
                "it outside or list it by path")


def say(text: str) -> None:
    """One line of lnk-sandbox's own on stderr, written whole (several threads say), and
    begun on a line of its own where stderr shows that the sandbox left one unfinished.

    The sandbox writes to the same stderr, so the line is whole only if nothing the
    sandbox wrote is half a line when it is written: the exec watch says a refusal
    before the refused exec goes on (watch.py), so the shell's own words on that failure
    come after it. What was written before (`printf partial >&2; ls`) is known only
    where stderr keeps it, a regular file, whose last byte is read; a terminal or a pipe
    does not say, and lnk never stands between the sandbox and its stderr to see. A
    stderr that is gone (closed, its reader ended) loses the line, never the run. What
    the sandbox chose in it (a path, a name) is shown escaped, on this one line,
    whatever it holds: every message said is, by being said here (terminal.shown)."""
    from .terminal import shown

    say_shown(shown(text))


def say_shown(text: str) -> None:
    """`say` for text shown already, line by line (SandboxError.render's message, then
    its hint on a line of its own): written as it is, on a fresh line."""
    try:
        os.write(2, _fresh_line() + f"lnk-sandbox: {text}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _fresh_line() -> bytes:
    """A newline when stderr is a regular file whose last byte written is not one."""
    import stat

    try:
        info = os.fstat(2)
        if not stat.S_ISREG(info.st_mode) or not info.st_size:
            return b""
        import fcntl

        appends = fcntl.fcntl(2, fcntl.F_GETFL) & os.O_APPEND
        end = info.st_size if appends else os.lseek(2, 0, os.SEEK_CUR)
        if end <= 0:
            return b""
        # stderr is mostly opened to write only (`2>file`): the same file, opened again
        # through its descriptor, read where the last write ended.
        fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
                     | os.O_CLOEXEC)
        try:
            again = os.fstat(fd)
            if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
                return b""
            return b"\n" if os.pread(fd, 1, min(end, again.st_size) - 1) not in (
                b"\n", b"") else b""
        finally:
            os.close(fd)
    except OSError:
        return b""



def report_line(record: dict[str, object]) -> bytes:
    """One JSON line of the report, inert if a shell ever reads it (`. report.jsonl`,
    a file named like a script): a refused program's path is the sandbox's to choose,
    and in a JSON string, which a shell reads as a double-quoted word, `$(...)` and
    backquotes would run. `$` and the backquote are written as the JSON escapes \\u0024
    and \\u0060, which every JSON reader decodes to the same text; JSON's own escapes for
    `"` and `\\` are a shell's too, and non-ASCII is escaped (ensure_ascii), so nothing
    else in a line is a shell's to expand."""
    text = json.dumps(record, ensure_ascii=True)
    return (text.replace("$", "\\u0024").replace("`", "\\u0060") + "\n").encode()


class Event(NamedTuple):
    """One refusal.

    kind: "program", "network", or "forward" / "expose" (a port used, not refused);
    `subject` what was asked (the path given to execve, the host:port), `resolved` what
    it was judged as (the file, the name or the address found), `rule` the spec's key
    that decided, `pid` the caller as the supervisor sees it (0: unknown), `reason` why,
    where the rule alone does not say (the address's kind, the decider's answer).
    """

    kind: str
    subject: str
    resolved: str
    rule: str
    pid: int
    time: float
    reason: str = ""

    def message(self) -> str:
        if self.kind == "program":
            if self.reason == BUILT_INSIDE:
                return f"refused {self.resolved} (not in [commands]): {self.reason}"
            return f"refused {self.resolved} ({self.reason or 'not in [commands]'})"
        if self.kind == "forward":
            return f"the sandbox reached the host's {self.subject} ([network] forward)"
        if self.kind == "expose":
            return f"the host reached the sandbox's {self.subject} ([network] expose)"
        if self.rule == "network.deny":
            return f"refused {self.subject} (in [network] deny)"
        if self.reason:
            return f"refused {self.subject}: {self.reason}"
        return f"refused {self.subject} (not in [network] allow)"


class EventLog:
    """Events of one run; thread-safe, since the watch's receivers add to it."""

    def __init__(self, report_fd: int | None = None, *, quiet: bool = False):
        """`report_fd`: where to write every event as a JSON line (host_files.open_report
        opens it), owned by the log from here on."""
        self._lock = threading.Lock()
        self._said: set[tuple[str, str, str]] = set()
        self._refusals: set[tuple[str, str, str, int, str]] = set()
        self.events: list[Event] = []
        self.dropped = 0
        self._quiet = quiet
        self._report = report_fd

    def add(self, kind: str, subject: str, resolved: str, rule: str, pid: int, *,
            reason: str = "") -> None:
        event = Event(kind, subject, resolved, rule, pid, time.time(), reason)
        with self._lock:
            if kind in ("program", "network"):
                # One refusal, one record: a shell trying each folder of PATH, a
                # resolver asking A then AAAA, a client retrying, are the same process
                # refused the same thing (each use of a forwarded port stays a record).
                refusal = (kind, resolved, rule, pid, reason)
                if refusal in self._refusals:
                    return
                self._refusals.add(refusal)
            if len(self.events) >= MAX_EVENTS:
                self.dropped += 1
                return
            self.events.append(event)
            # Once per thing refused, and per reason where there is one (a decider's
            # answer differs from one port of a name to another).
            said = (kind, resolved, reason)
            first = said not in self._said
            self._said.add(said)
            if self._report is not None:
                record = event._asdict()
                if not event.reason:
                    del record["reason"]  # a program's refusal reads as it always did
                self._write_report(report_line(record))
        if first and not self._quiet:
            say(event.message())

    def _write_report(self, line: bytes) -> None:
        """Append one line; a report that cannot be written any more (a full disk) is
        said once and given up, so the run goes on and its refusals still reach stderr."""
        assert self._report is not None
        try:
            os.write(self._report, line)
        except OSError as err:
            os.close(self._report)
            self._report = None
            say(f"cannot write the report any more ({err.strerror}): the refusals from "
                "here on are only said here")

    def close(self) -> None:
        """Close the report; say once how many refusals went past the bound, which are
        neither kept nor in the report, so whoever reads it knows it is not whole."""
        with self._lock:
            if self._report is not None:
                os.close(self._report)
                self._report = None
            dropped, self.dropped = self.dropped, 0
        if dropped and not self._quiet:
            say(f"{dropped} more refusals were not kept or reported (at most {MAX_EVENTS} "
                "a run)")
