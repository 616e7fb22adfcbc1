"""The terminal, handed to the sandbox's process group as a shell hands it to a job.

The same on both OSes: the command runs in a process group of its own (bwrap's or
sandbox-exec's), made the terminal's foreground group while it runs, so it reads the
terminal and gets Ctrl-C itself; the supervisor takes the terminal back at the end.
"""

from __future__ import annotations

import os
import signal


def standard_streams() -> None:
    """Descriptors 0, 1 and 2 open, each that was closed (a harness may start lnk with
    `2>&-`) opened on /dev/null, and Python's stream for it made again.

    A closed one is taken by the next file lnk opens: the report, a file of `$LNK_HOME`
    being written, a folder; its notices would then be written into that file, and its
    children (the keeper, bwrap, the sandbox) would be handed it as their stdin, stdout
    or stderr (Python itself refuses to start on a folder there). /dev/null is what a
    closed stream means to them: nothing to read, nothing kept. Called first, before
    anything is opened."""
    import sys

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: `fd` itself
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        os.set_inheritable(fd, True)
        name = ("stdin", "stdout", "stderr")[fd]
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


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
