"""Seatbelt's reports in the system log, parsed: who was refused (or, under learn,
allowed) what. Pure and total: any line gives a Report or None, never an exception.

Facts (from the project's Seatbelt reference, quoting real records; not run here):
- The reporter is the kernel: `processID` 0, `userID` 0, `processImagePath` `/kernel`,
  `senderImagePath` `/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox`.
  The logging system stamps those from the emitter's identity, never from what it
  logged, and os_log is open to any process, the sandboxed one too: a record missing
  any of the four, or with another value, is someone's imitation and never a report
  (rookery's TestOnlyKernelEmittedReportsAreAccepted, whose forgery was shown end to
  end). Nothing else is trusted: not a `com.apple.sandbox.reporting` subsystem, which
  any process may log under. The offender is named only inside the message:
  `Sandbox: <comm>(<pid>) deny(1) <operation> <target>`; `(with report)` rules give
  `Sandbox: <comm>(<pid>) allow <operation> <target>`.
- Repeats are coalesced as `N duplicate reports for Sandbox: ...` (Codex's parser,
  anchored at `Sandbox:`, misses these; nono's handles them).
- For an exec, `comm` is the name of the process that called exec (the parent's image,
  `sandbox-exec` for the command itself) and the target is the file's path.
- `--style ndjson` gives one JSON record per line (the message in `eventMessage`): what
  the live stream reads, and all it trusts. `--style compact` and `log show`'s default
  give `... kernel[0:...] (Sandbox) Sandbox: ...` / `... 0  0  kernel: (Sandbox) Sandbox:
  ...`, where the 0 is the emitter's pid, which the logging system stamps; they are read
  for fixtures and `log show` output. A message may run on over more lines
  (sandbox-runtime's tag); only its first line is read.
- `Sandbox apply: sandbox-exec[38493] ...` (a Debug record) and `System Policy: ...`
  (TCC) are not reports and are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

# `log stream`'s first line: it runs (for this account), not proof it sees reports yet.
READY_PREFIX = "Filtering the log data using "
KERNEL_IMAGE = "/kernel"
SANDBOX_SENDER = "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox"

_REPORT = re.compile(
    r"^(?:(?P<dups>\d{1,9}) duplicate reports? for )?Sandbox: (?P<comm>.+?)\((?P<pid>\d{1,9})\)"
    r" (?P<verdict>deny|allow)(?:\(\d{1,9}\))? (?P<op>[a-z][a-z0-9*-]*)(?: (?P<target>.*))?$"
)
# compact: date, time, type, then the emitter as `kernel[PID:THREAD]`; `log show`'s
# default: date, time, thread, type, activity, PID, TTL, then `kernel:`. The pid must
# be 0, the kernel's: a program named `kernel` has a pid of its own there.
_COMPACT = re.compile(
    r"^\S+ \S+ +\S+ +kernel\[(?P<pid>[0-9]{1,9}):[0-9a-fx]{1,20}\] \(Sandbox\) "
    r"(?P<message>.*)$"
)
_DEFAULT = re.compile(
    r"^\S+ \S+ +0x[0-9a-f]{1,20} +\S+ +0x[0-9a-f]{1,20} +(?P<pid>[0-9]{1,9}) +[0-9]{1,9} +"
    r"kernel: \(Sandbox\) (?P<message>.*)$"
)


@dataclass(frozen=True)
class Report:
    """One Seatbelt report: the process (name and pid) and what it was refused or, for a
    `(with report)` rule, allowed; `repeats` is N for an `N duplicate reports` line."""

    comm: str
    pid: int
    verdict: Literal["deny", "allow"]
    operation: str
    target: str
    repeats: int = 1

    @property
    def program(self) -> str | None:
        """The file an exec asked for, for a process-exec report with a path."""
        if self.operation.startswith("process-exec") and self.target.startswith("/"):
            return self.target
        return None


def parse_message(message: str) -> Report | None:
    """A report from a log message's text (only its first line counts)."""
    first = message.split("\n", 1)[0].rstrip("\r")
    match = _REPORT.match(first)
    if match is None:
        return None
    verdict: Literal["deny", "allow"] = "deny" if match["verdict"] == "deny" else "allow"
    return Report(
        comm=match["comm"],
        pid=int(match["pid"]),
        verdict=verdict,
        operation=match["op"],
        target=match["target"] or "",
        repeats=int(match["dups"]) if match["dups"] else 1,
    )


def parse_line(line: str) -> Report | None:
    """A report from one line of `log stream` or `log show` output, ndjson, compact or
    the default style; None for anything else (the ready line, other records, malformed
    or cut-off lines, anything not the kernel's own)."""
    text = line.strip("\r\n")
    if text.startswith("{"):
        return parse_record(text)
    for pattern in (_COMPACT, _DEFAULT):
        match = pattern.match(text)
        if match is not None:
            return parse_message(match["message"]) if int(match["pid"]) == 0 else None
    return None


def parse_record(text: str) -> Report | None:
    """A report from one ndjson record, only when the kernel's Sandbox extension logged
    it (see the module docstring); None for anything else."""
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    message = record.get("eventMessage")
    if not isinstance(message, str):
        return None
    for key, wanted in (("processID", 0), ("userID", 0)):
        value = record.get(key)
        if type(value) is not int or value != wanted:  # JSON false is no 0 here
            return None
    if record.get("processImagePath") != KERNEL_IMAGE or \
            record.get("senderImagePath") != SANDBOX_SENDER:
        return None
    return parse_message(message)
