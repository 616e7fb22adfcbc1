"""Faults: the supervisor killed at random points of many launches, and a $LNK_HOME that
is full or read-only. Afterwards: no process of the tree, no placeholder, no mount, no
stale lock, no half-written state, and the next start succeeds."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

LAUNCHES = int(os.environ.get("LNK_FAULT_LAUNCHES", "200"))


def _alive_with(marker: str, *, exclude: set[int] = frozenset()) -> set[int]:
    """Processes of the host (not zombies) whose command line holds `marker`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def _bwrap_child_of(pid: int) -> bool:
    """Whether bwrap is running as a child of `pid` (the supervisor spawned it)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.find("(") + 1:stat.rfind(")")]
        if comm == "bwrap" and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            return True
    return False


def _host_mounts() -> int:
    """The mounts of the host's namespace (init's), not the test's own view."""
    return len(Path("/proc/1/mountinfo").read_text().splitlines())


def _run_cgroups() -> list[str]:
    """The runs' cgroups left on the host (root mode makes them under lnk-sandbox)."""
    left = []
    for base in Path("/sys/fs/cgroup").glob("**/lnk-sandbox"):
        left += [str(p) for p in base.iterdir() if p.is_dir()]
    return left


@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
def test_sigkill_of_the_supervisor_at_random_points(sandbox: Sandbox) -> None:
    """Before bwrap, in bwrap's first milliseconds, during its mounts, while the watch
    holds a notification, during cleanup: wherever the kill lands, the next start ends
    what it left, and then no process, mount, cgroup, placeholder or listed run is left.

    Counted on the host: every process whose command line names this test's folder (bwrap
    names the project in its binds, the command carries it too), the host namespace's
    mounts, the runs' cgroups. Half the kills come 0 to 4 ms after bwrap appears, where
    bwrap has not yet asked for its parent-death signal."""
    spec = sandbox.write_spec(
        '[files]\nwrite = ["./work"]\n[commands]\nprograms = ["sh", "true"]\n')
    (sandbox.project / "work").mkdir()
    sandbox.chown()
    marker = str(sandbox.project)
    mounts = _host_mounts()
    cgroups_before = _run_cgroups()
    rng = random.Random(1234)
    command = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes",
               "--", "/bin/sh", "-c", f"while :; do true; done # {marker}"]
    for launch in range(LAUNCHES):
        process = subprocess.Popen(command, cwd=sandbox.project, env=sandbox.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        supervisor = process.pid  # setpriv (the test user) execs lnk in place: its pid
        if launch % 2:
            deadline = time.monotonic() + 5
            while not _bwrap_child_of(supervisor) and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.004))
        else:
            time.sleep(rng.uniform(0, 0.12))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    # The next start ends what the killed runs left, and prunes what they held.
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec=spec.read_text(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "STARTED\n"
    deadline = time.monotonic() + 20
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker) == set()
    assert _host_mounts() == mounts
    assert _run_cgroups() == cgroups_before
    work = sandbox.project / "work"
    assert sorted(p.name for p in work.iterdir()) == []  # no placeholder (.git, ...) left
    assert list(sandbox.lnk_home.rglob("*.tmp")) == []
    assert list((sandbox.lnk_home / "runs").iterdir()) == []  # no run still listed
    from supervisor.placeholders import Placeholders

    assert Placeholders(str(sandbox.lnk_home)).entries() == {}  # no run holds anything


def _in_private_mounts(sandbox: Sandbox, setup: str, *lnk_args: str
                       ) -> subprocess.CompletedProcess[str]:
    """Run `lnk` as root in a mount namespace of its own, after `setup` (a shell line)."""
    script = f"{setup} && exec \"$@\""
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           "sh", LNK, "sandbox", *lnk_args],
                          cwd=sandbox.project, env=sandbox.env(), capture_output=True,
                          text=True, timeout=60)


@pytest.mark.requires_root
def test_a_full_lnk_home_is_a_clear_error_with_nothing_half_written(root_sandbox: Sandbox
                                                                     ) -> None:
    sandbox = root_sandbox
    home = sandbox.lnk_home
    home.mkdir()
    spec = sandbox.write_spec('files.write = ["."]\n')
    setup = (f"mount -t tmpfs -o size=64k none {home} && "
             f"(dd if=/dev/zero of={home}/filler bs=1k count=200 2>/dev/null; true)")
    done = _in_private_mounts(sandbox, setup, "wrap", "--spec", str(spec), "--yes", "--",
                              "/bin/true")
    assert done.returncode == 125
    assert "No space left" in done.stderr
    assert "Traceback" not in done.stderr
    # The tmpfs went with the namespace; nothing was written on the real $LNK_HOME.
    assert list(home.iterdir()) == []


def test_a_read_only_lnk_home_is_a_clear_error(sandbox: Sandbox) -> None:
    spec = 'files.write = ["."]\n'
    sandbox.lnk_home.mkdir(mode=0o700)
    sandbox.chown()
    if sandbox.who.is_root:
        setup = f"mount --bind -o ro {sandbox.lnk_home} {sandbox.lnk_home}"
        done = _in_private_mounts(sandbox, setup, "wrap", "--spec",
                                  str(sandbox.write_spec(spec)), "--yes", "--", "/bin/true")
    else:
        sandbox.lnk_home.chmod(0o500)
        done = sandbox.lnk("wrap", "--", "/bin/true", spec=spec)
    assert done.returncode == 125, done.stdout
    assert "Read-only file system" in done.stderr or "Permission denied" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(sandbox.lnk_home.rglob("*.tmp")) == []
