"""Seatbelt's reports in the system log, parsed: who was refused (or, under learn,
allowed) what. Pure and total: any line gives a Report or None, never an exception.

Facts (from the project's Seatbelt reference, quoting real records; not run here):
- The reporter is the kernel: `processID` 0, `senderImagePath` ending in
  `Sandbox.kext/Contents/MacOS/Sandbox`. The offender is named only inside the message:
  `Sandbox: <comm>(<pid>) deny(1) <operation> <target>`; `(with report)` rules give
  `Sandbox: <comm>(<pid>) allow <operation> <target>`.
- Repeats are coalesced as `N duplicate reports for Sandbox: ...` (Codex's parser,
  anchored at `Sandbox:`, misses these; nono's handles them).
- For an exec, `comm` is the name of the process that called exec (the parent's image,
  `sandbox-exec` for the command itself) and the target is the file's path.
- `--style ndjson` gives one JSON record per line (the message in `eventMessage`);
  `--style compact` and `log show`'s default give `... kernel[0:...] (Sandbox) Sandbox:
  ...` / `... kernel: (Sandbox) Sandbox: ...`. A message may run on over more lines
  (sandbox-runtime's tag); only its first line is read.
- `Sandbox apply: sandbox-exec[38493] ...` (a Debug record) and `System Policy: ...`
  (TCC) are not reports and are ignored. `log stream` says `Filtering the log data
  using ...` once it is attached: before that line, reports are lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

READY_PREFIX = "Filtering the log data using "

_REPORT = re.compile(
    r"^(?:(?P<dups>\d{1,9}) duplicate reports? for )?Sandbox: (?P<comm>.+?)\((?P<pid>\d{1,9})\)"
    r" (?P<verdict>deny|allow)(?:\(\d{1,9}\))? (?P<op>[a-z][a-z0-9*-]*)(?: (?P<target>.*))?$"
)
# compact and `log show`'s default: time and type columns, then the kernel as the process
# (`kernel[0:1fa47b2]` or `kernel:`) with the Sandbox sender, then the message. The
# columns before it hold no brackets and none ends in ':', so a process of any other
# name, logging text that looks like this, is not taken for the kernel.
_EMBEDDED = re.compile(
    r"^(?:[^\s\[\]()]*[^\s\[\]():]\s+){1,10}kernel(?:\[[0-9a-fx:]*\]|:) \(Sandbox\) "
    r"(?P<message>.*)$"
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


def is_ready(line: str) -> bool:
    """`log stream`'s first line, printed once its predicate is in place."""
    return line.startswith(READY_PREFIX)


def parse_line(line: str) -> Report | None:
    """A report from one line of `log stream` output, ndjson or compact; None for
    anything else (the ready line, other records, malformed or cut-off lines)."""
    text = line.strip("\r\n")
    if text.startswith("{"):
        return _parse_record(text)
    match = _EMBEDDED.match(text)
    if match is None:
        return None
    return parse_message(match["message"])


def _parse_record(text: str) -> Report | None:
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    message = record.get("eventMessage")
    if not isinstance(message, str):
        return None
    # The predicate asks for the kernel's reports; a record naming another sender (a
    # process logging text that looks like one) is not Seatbelt's.
    pid = record.get("processID", 0)
    if pid != 0 and record.get("subsystem") != "com.apple.sandbox.reporting":
        return None
    return parse_message(message)
