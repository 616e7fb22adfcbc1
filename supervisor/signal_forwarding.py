"""Signals sent to lnk-sandbox, passed on to the sandbox's process group (both OSes).

Neither bwrap nor sandbox-exec forwards a signal, and one that killed either would end
the command with no say of its own (bwrap's die-with-parent). So the supervisor takes
SIGINT, SIGTERM, SIGHUP and SIGQUIT and sends each to the sandbox's group, where the
command's own handler runs. SIGTERM and SIGHUP ask for an end: the same one twice, or
`KILL_GRACE` seconds of the command outliving it, kills the whole tree, so a program that
ignores them still ends when asked.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
KILL_GRACE = 10.0
_ENDING = (signal.SIGTERM, signal.SIGHUP)


class SignalForwarding:
    """The handlers of one run: `install` when the group exists, `restore` once it is
    reaped; `overdue` tells the waiting loop when the grace is up (it kills then).

    `after_signal`, when given, runs in each handler after the forward, whatever it
    decided (the group gone included): a loop that computed its timeout before the
    handler ran is woken by it to wait for the grace from now (Linux's wait_sync)."""

    def __init__(self, group: int, kill: Callable[[], None], *,
                 after_signal: Callable[[], None] | None = None):
        self.group = group
        self.kill = kill
        self.after_signal = after_signal
        self.kill_deadline: float | None = None
        self._asked: set[int] = set()
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in FORWARDED:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        self.forward(sig)
        if self.after_signal is not None:
            self.after_signal()

    def forward(self, sig: int) -> None:
        """Send `sig` to the group; an end asked twice, or not met in time, kills it."""
        try:
            os.killpg(self.group, sig)
        except OSError:
            return  # the group is gone: nothing is left to end
        if sig in _ENDING:
            if sig in self._asked:
                self.kill()
            self._asked.add(sig)
            self.kill_deadline = time.monotonic() + KILL_GRACE

    def overdue(self) -> bool:
        """Whether the grace after an asked end ran out; the tree is killed then."""
        if self.kill_deadline is not None and time.monotonic() >= self.kill_deadline:
            self.kill_deadline = None
            self.kill()
            return True
        return False

    def grace_left(self) -> float | None:
        """Seconds until the grace runs out, or None when no end was asked."""
        if self.kill_deadline is None:
            return None
        return max(0.0, self.kill_deadline - time.monotonic())
