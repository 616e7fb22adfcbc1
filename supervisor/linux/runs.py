"""The runs of one `$LNK_HOME`, so that a run whose supervisor was killed leaves nothing.

bwrap sets its parent-death signal only once it runs: a supervisor killed in the first
milliseconds of a start can leave bwrap's first child, pid 1 of the sandbox's namespace,
waiting for ever on a parent that is gone (seen here: 19 of 120 kills, 0 to 4 ms after
bwrap appeared). A cgroup of the run's own (cgroups.py) ends such a run at the next
start where lnk-sandbox may make one; where it may not (a person with no delegated
cgroup), this does:

- each run is listed in `$LNK_HOME/runs` by its supervisor's pid and start time (a token
  that names one process for the boot) before bwrap starts, and unlisted at the end;
- bwrap's command line carries the token (`--unsetenv LNK_SANDBOX_RUN_PID_START`, which
  unsets a variable no one sets), and every process bwrap forks keeps that command line;
- a start that finds a listed run whose supervisor is gone kills every process whose
  command line carries its token, then unlists it. /proc is read only then.
"""

from __future__ import annotations

import os
import signal

from ..host_files import PrivateFolder
from ..state import private_folder
from .cgroups import alive

RUNS = "runs"
TAG = "LNK_SANDBOX_RUN_"


def this_token() -> str:
    """`pid-start` of this process (the start time, field 22 of /proc/PID/stat)."""
    pid = os.getpid()
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return f"{pid}-{data[data.rfind(b')') + 2:].split()[19].decode()}"


def tag(token: str) -> list[str]:
    """What bwrap's command line carries: harmless, and found by the next start."""
    return ["--unsetenv", TAG + token.replace("-", "_")]


class RunList:
    """This run's entry in `$LNK_HOME/runs`, made after ending what killed runs left."""

    def __init__(self, lnk_home: str, token: str) -> None:
        self.token = token
        self.folder = private_folder(lnk_home, RUNS)
        try:
            end_killed_runs(self.folder)
            os.close(self.folder.open(token, os.O_WRONLY | os.O_CREAT))
        except BaseException:
            self.folder.close()
            raise

    def close(self) -> None:
        try:
            self.folder.unlink(self.token)
        except OSError:
            pass
        self.folder.close()


def end_killed_runs(folder: PrivateFolder) -> None:
    """Kill what listed runs whose supervisor is gone left running, and unlist them."""
    try:
        tokens = [t for t in folder.names() if t.count("-") == 1]
    except OSError:
        return
    dead = [t for t in tokens if not alive(t)]
    if not dead:
        return
    # Whole arguments: the NUL after each keeps 12_3 from matching 12_34.
    marks = {(TAG + t.replace("-", "_")).encode() + b"\0": t for t in dead}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read()
        except OSError:
            continue
        if any(mark in line for mark in marks):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                continue
    for token in dead:
        try:
            folder.unlink(token)
        except OSError:
            continue
