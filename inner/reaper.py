"""The reaper a run without namespaces leaves in the sandbox's Landlock domain.

With no pid namespace to end, what the sandbox starts is ended by the supervisor (a
subreaper, at the run's end) or, when the supervisor is killed, by its keeper, which
kills the sandbox's process group: a process that left the group (setsid, setpgid)
ran on after a killed lnk-sandbox (red team, issue 30). Landlock's signal scope (ABI 6)
gives a process a way to reach exactly the sandbox: kill(-1) from inside a domain
signals only the processes of that domain and of the domains nested in it.

So the inner, once Landlock is applied (domain D1), leaves a reaper behind: a grandchild
(its parent exits at once, so that the command inherits no child it did not make, and
the supervisor, the subreaper, becomes its parent) that closes every fd but a pipe only
the supervisor writes, ignores the terminal's signals, leaves the sandbox's process
group and wipes the run's mark from its command line (the keeper kills both at the same
moment), and blocks reading it. The inner
then restricts itself once more, with the scopes alone (D2, nested in D1): the command
and everything it starts can neither signal the reaper nor ptrace it (Landlock refuses
both toward an enclosing domain). When the supervisor is gone, however it ended, the
pipe reads EOF and the reaper sends SIGKILL to every process it may signal: the
sandbox's, wherever they moved. At a run's normal end the supervisor closes the pipe
too, and waits for the reaper before it reaps the rest (direct_spawn.end_leftovers):
its one kill(-1) ends what no round of single kills could catch (a daemon forking and
exiting in a loop). Below ABI 6 no reaper is left: kill(-1) would reach every process
of the uid.

The compiled inner (confine.c) does the same, in the same order.
"""

from __future__ import annotations

import os

from . import landlock

# The terminal's signals, which reach the process group the reaper is in.
_IGNORED = (1, 2, 3, 15, 20, 21, 22)  # SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN,
#                                       SIGTTOU


def leave(fd: int, abis: tuple[tuple[int, int, int, int], ...]) -> bool:
    """Leave the reaper on `fd` and nest this process in a scoped domain of its own;
    False (fd closed, nothing left) where the domain applied (its row of `abis`, the
    record's table) does not scope signals: kill(-1) would reach every process of the
    uid."""
    abi = landlock.abi_version()
    row = abis[min(abi, len(abis)) - 1] if abi > 0 and abis else None
    if abi < landlock.SCOPES_ABI or row is None or not row[2] & landlock.SCOPE_SIGNAL:
        os.close(fd)
        return False
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                _reap(fd)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    os.close(fd)
    landlock.restrict_scoped()
    return True


def _unmark() -> None:
    """The run's mark wiped from this process's command line (its own memory): the
    keeper kills every process that bears it (supervisor/linux/keeper.py), which would
    end the reaper before it ends the rest."""
    import ctypes

    with open("/proc/self/stat", "rb") as handle:
        fields = handle.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
    first = ctypes.string_at(start, end - start).find(b"\0") + 1
    if 0 < first < end - start:
        ctypes.memset(start + first, 0, end - start - first)


def _reap(fd: int) -> None:
    import _signal  # type: ignore[import-not-found]  # no stub: the C half of signal

    for number in _IGNORED:
        _signal.signal(number, _signal.SIG_IGN)
    os.setpgid(0, 0)  # out of the group the keeper kills, lest it end the reaper first
    _unmark()
    os.dup2(fd, 0)  # the pipe as fd 0, every other closed (the status socket, stdout)
    os.closerange(1, 1 << 20)
    while True:
        try:
            if not os.read(0, 64):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    try:
        os.kill(-1, 9)
    except OSError:
        pass
    os._exit(0)
