"""The runs of one `$LNK_HOME`, so that a run whose supervisor was killed leaves nothing.

bwrap sets its parent-death signal only once it runs: a supervisor killed in the first
milliseconds of a start can leave bwrap's first child, pid 1 of the sandbox's namespace,
waiting for ever on a parent that is gone (seen here: 19 of 120 kills, 0 to 4 ms after
bwrap appeared). The run's keeper (keeper.py) ends such a run at once; what it could not
end (it was killed too, or could not start) a cgroup of the run's own (cgroups.py) ends
at the next start where lnk-sandbox may make one, and where it may not (a person with no
delegated cgroup), this does:

- each run is listed in `$LNK_HOME/runs` by its supervisor's pid and start time (a token
  that names one process for the boot) before bwrap starts, and unlisted at the end;
- bwrap's command line carries the token (`--unsetenv LNK_SANDBOX_RUN_PID_START`, which
  unsets a variable no one sets), and every process bwrap forks keeps that command line;
- a start that finds a listed run whose supervisor is gone kills every process whose
  command line carries its token (keeper.kill_marked, as the keeper does), then unlists
  it. /proc is read only then.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator

from ..host_files import PrivateFolder
from ..state import private_folder
from .cgroups import TOKEN
from .keeper import TAG, kill_marked, mark
from .proc_stat import process_start

RUNS = "runs"


def this_token() -> str:
    """`pid-start-random`: this process's pid and start time (field 22 of its stat),
    and a random part, since the same pid and start may be another process's in another
    pid namespace that shares $LNK_HOME or the cgroups."""
    pid = os.getpid()
    return f"{pid}-{process_start(pid)}-{os.urandom(4).hex()}"  # not secrets: it imports hmac, 5 ms


def tag(token: str) -> list[str]:
    """What bwrap's command line carries: harmless, and found by the next start."""
    return ["--unsetenv", TAG + token.replace("-", "_")]


class RunList:
    """This run's entry in `$LNK_HOME/runs`, locked while this process lives (the kernel
    drops the lock when it dies, however it dies), made after ending what killed runs
    left. A lock, not a pid, says a run is alive: a pid read from another pid namespace
    sharing $LNK_HOME names another process, or none."""

    def __init__(self, lnk_home: str, token: str) -> None:
        self.token = token
        self.folder = private_folder(lnk_home, RUNS)
        self.fd = -1
        try:
            with _locked(self.folder):
                end_killed_runs(self.folder)
                self.fd = self.folder.open(token, os.O_RDONLY | os.O_CREAT | os.O_EXCL)
                fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            if self.fd >= 0:
                os.close(self.fd)
            self.folder.close()
            raise

    def close(self) -> None:
        try:
            self.folder.unlink(self.token)
        except OSError:
            pass
        os.close(self.fd)
        self.folder.close()


@contextlib.contextmanager
def _locked(folder: PrivateFolder) -> Iterator[None]:
    """The runs folder, locked while an entry is made and locked or the dead ones ended:
    a start never sees another's new entry before it is locked."""
    # A new open file description: a lock belongs to one, and a dup of the folder's fd
    # (held for the whole run) would keep the folder locked until the run ends.
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder.fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _dead(folder: PrivateFolder, token: str) -> bool:
    """Whether the entry's lock is free: its supervisor is gone."""
    try:
        fd = os.open(token, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK,
                     dir_fd=folder.fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def end_killed_runs(folder: PrivateFolder) -> None:
    """Kill what listed runs whose supervisor is gone left running, and unlist them.
    Called with the folder locked."""
    try:
        tokens = [t for t in folder.names() if TOKEN.match(t)]
    except OSError:
        return
    dead = [t for t in tokens if _dead(folder, t)]
    if not dead:
        return
    kill_marked([mark(t) for t in dead])
    for token in dead:
        try:
            folder.unlink(token)
        except OSError:
            continue

