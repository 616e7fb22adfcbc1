"""The terminal, handed to the sandbox's process group as a shell hands it to a job.

The same on both OSes: the command runs in a process group of its own (bwrap's or
sandbox-exec's), made the terminal's foreground group while it runs, so it reads the
terminal and gets Ctrl-C itself; the supervisor takes the terminal back at the end.
"""

from __future__ import annotations

import os
import signal


def foreground_terminal() -> int | None:
    """The terminal on stdin when this process is in its foreground group, else None."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def give_terminal(fd: int | None, pgid: int) -> None:
    """Make `pgid` the terminal's foreground group. A background process asking for the
    terminal gets SIGTTOU, so it is ignored while asking."""
    if fd is None:
        return
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, previous)


def standard_flags() -> dict[int, int]:
    """The file status flags of stdin, stdout and stderr, as they are before a run.

    The sandbox shares these open files with the shell or harness that started it, and
    fcntl(F_SETFL) changes the open file itself: a program that leaves O_NONBLOCK set
    on the terminal breaks the shell's next read (EAGAIN) after the run."""
    import fcntl

    flags = {}
    for fd in (0, 1, 2):
        try:
            flags[fd] = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
    return flags


def restore_flags(flags: dict[int, int]) -> None:
    """Put back what a run changed of `standard_flags()` (O_NONBLOCK, O_APPEND...)."""
    import fcntl

    for fd, value in flags.items():
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) != value:
                fcntl.fcntl(fd, fcntl.F_SETFL, value)
        except OSError:
            continue
