"""A run's wall-clock timeout: when it is up, the whole sandbox tree is killed.

One parameter, `timeout` (seconds, a float, or None for none), carries it from every
caller (`lnk sandbox run --timeout`, the Python API, a spec's `[limits] timeout`: the
earliest wins) through `run.launch_snapshot` to the launcher of each OS, which asks its
`Deadline` and kills its tree when it has passed. Exit status 124 then, as timeout(1)
gives, said once on stderr.

Why a kill and not SIGTERM first: a program that ignores SIGTERM (or whose handler
waits) would outlive its timeout, and a harness that gave it one wants the time back.
On Linux killing bwrap ends its PID namespace, so every process the command started
dies with it, those that left its process group included; on macOS the command's
process group is killed (a process that called setsid is the stated gap of macOS).
"""

from __future__ import annotations

import math
import time

from .errors import SpecError

TIMEOUT_STATUS = 124


def check_timeout(timeout: float | None, *, where: str = "timeout") -> float | None:
    """`timeout` as a launcher takes it: None, or a finite number of seconds above 0.

    TypeError or ValueError (naming `where`) otherwise, as for any argument of the
    wrong kind or value: the spec is not at fault, and a harness's mistake is an error,
    not a run without the limit it asked for.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"{where}: {timeout!r} is not a number of seconds (a float, or "
                        "None for no timeout)")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"{where}: {timeout:g}: a timeout must be more than 0 seconds "
                         "(None for no timeout)")
    return float(timeout)


def parse_timeout(text: str, *, where: str = "--timeout") -> float:
    """A command line's `SECONDS` (e.g. "30", "2.5"); SpecError naming the option."""
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"{text!r} is not a number of seconds", file=where) from None
    if not math.isfinite(value) or value <= 0:
        raise SpecError(f"{value:g}: a timeout must be more than 0 seconds", file=where,
                        hint="leave it out for no timeout")
    return value


def earliest(*timeouts: float | None) -> float | None:
    """The shortest of the timeouts given (None: none of them set one)."""
    given = [t for t in timeouts if t is not None]
    return min(given) if given else None


class Deadline:
    """When a run's time is up, on the monotonic clock; never up without a timeout."""

    def __init__(self, timeout: float | None, *, start: float | None = None):
        self.timeout = timeout
        began = time.monotonic() if start is None else start
        self.at = None if timeout is None else began + timeout

    def left(self) -> float | None:
        """Seconds until the deadline (0 once passed), or None without one."""
        if self.at is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


def timed_out_message(timeout: float) -> str:
    """What stderr says when a run was killed at its deadline."""
    return (f"timed out after {timeout:g} s: the command and everything it started were "
            f"killed (exit status {TIMEOUT_STATUS})")
