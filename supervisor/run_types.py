"""What a run is asked besides its command, and how it ended: the values the hall's
stages (`run.py`) and both backends share, in a module that imports neither."""

from __future__ import annotations

from typing import Literal, NamedTuple


class FileOp(NamedTuple):
    """One file read (to stdout) or written (from stdin) as the sandbox would, instead of
    a command: inner/fileop.py. `path` as the sandbox sees it (relative: to the working
    directory); `limit`, for a read, the most bytes it may hold (more: EFBIG)."""

    op: Literal["read", "write"]
    path: str
    limit: int | None = None


class Ended(NamedTuple):
    """How a run ended: its exit status (the design's), whether its timeout killed it,
    and, where the OS reports it (Linux), the errno the command itself could not be run
    with (an execve that failed inside; 126 or 127)."""

    status: int
    timed_out: bool = False
    exec_errno: int | None = None
