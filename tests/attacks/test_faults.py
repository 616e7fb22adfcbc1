"""Faults: the supervisor killed at random points of many launches, and a $LNK_HOME that
is full or read-only. Afterwards: no process of the tree, no placeholder, no mount, no
stale lock, no half-written state, and the next start succeeds."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from supervisor.linux.proc_stat import process_start
from support.processes import alive, command_lines, descendants
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

LAUNCHES = int(os.environ.get("LNK_FAULT_LAUNCHES", "200"))


def _alive_with(marker: str, *, exclude: frozenset[int] = frozenset()) -> set[int]:
    """Processes of the host (not zombies) whose command line holds `marker`."""
    return alive({pid for pid, line in command_lines().items()
                  if marker.encode() in line and pid not in exclude})


def _keeper_of(supervisor: int) -> set[int]:
    """The keeper of the run whose supervisor had pid `supervisor` (keeper.py: its
    command line ends with the run's token, `pid-start-random`)."""
    return {pid for pid, line in command_lines().items()
            if b"/keeper.py\0" in line
            and line.split(b"\0")[-2].startswith(f"{supervisor}-".encode())}


def _left_after(marker: str, supervisor: int, wait: float = 2.0) -> set[int]:
    """What the killed run left (its processes, its keeper) once `wait` seconds passed
    with no other start: the keeper's sweep, not the next start, must end them."""
    deadline = time.monotonic() + wait
    while True:
        left = _alive_with(marker) | _keeper_of(supervisor)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def _bwrap_child_of(pid: int) -> bool:
    """Whether bwrap runs below `pid` (the supervisor spawned it)."""
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "bwrap":
                return True
        except OSError:
            continue
    return False


def _host_mounts(folder: Path) -> list[str]:
    """The mounts of the host's namespace (init's, not the test's own view) at or below
    `folder`, this test's own: what a killed run could leave on the host is a mount where
    it bound something, and other work on the machine mounts and unmounts meanwhile
    (counting the whole table once failed `23 == 20` on a busy machine)."""
    inside = []
    for line in Path("/proc/1/mountinfo").read_text().splitlines():
        point = line.split(" ")[4].encode().decode("unicode_escape")
        if point == str(folder) or point.startswith(f"{folder}/"):
            inside.append(point)
    return inside


def _run_cgroups(uid: int, runs: set[str]) -> list[str]:
    """The cgroups of `uid`'s runs whose supervisor is gone, left on the host (root mode
    makes them under lnk-sandbox; a person's start can prune only its own, so another
    user's, root's from other tests, are not this test's). A run's supervisor holds a
    lock on each of its cgroups while it lives; the kernel drops it when it dies. Other
    runs on the machine (another checkout's tests, say) hold theirs, and are not
    counted; an older lnk-sandbox's,
    which lock nothing, are judged by their supervisor's pid. Only this test's own runs
    count (`runs`: each supervisor's `PID-START-`, how its run's token begins): another
    test run on the machine (another checkout's suite) leaves its killed runs' cgroups
    for its own next start to prune."""
    left = []
    # This test's runs make theirs below the test's own cgroups (v1), or at a top.
    own = [line.split(":", 2)[2].rstrip("/") for line in
           Path("/proc/self/cgroup").read_text().splitlines()]
    tops = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
    for base in Path("/sys/fs/cgroup").glob("**/lnk-sandbox"):
        if not (base.parent in tops or base.parent.parent in tops
                or any(path and str(base.parent).endswith(path) for path in own)):
            continue  # another session's
        for folder in base.iterdir():
            if not folder.is_dir() or folder.stat().st_uid != uid:
                continue
            if not any(folder.name.startswith(run) for run in runs):
                continue
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live run's
            finally:
                os.close(fd)
            legacy = folder.name.count("-") == 1
            if legacy and Path(f"/proc/{folder.name.split('-')[0]}").exists():
                continue  # an older lnk-sandbox's run, perhaps alive
            left.append(str(folder))
    return left


@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
@pytest.mark.timeout(1200)  # 200 starts killed, each waited for, on a loaded machine
def test_sigkill_of_the_supervisor_at_random_points(sandbox: Sandbox) -> None:
    """Before bwrap, in bwrap's first milliseconds, during its mounts, while the watch
    holds a notification, during cleanup: wherever the kill lands, no process of the run
    is left 2 seconds later, before any other start (its keeper ended them); the next
    start removes what it left on disk, and then no process, mount, cgroup, placeholder
    or listed run is left.

    Counted on the host: every process whose command line names this test's folder (bwrap
    names the project in its binds, the command carries it too), the host namespace's
    mounts, the runs' cgroups. Half the kills come 0 to 4 ms after bwrap appears, where
    bwrap has not yet asked for its parent-death signal."""
    spec = sandbox.write_spec(
        '[files]\nread = ["."]\nwrite = ["./work"]\n[commands]\nprograms = ["sh", "true"]\n')
    (sandbox.project / "work").mkdir()
    sandbox.chown()
    marker = str(sandbox.project)
    mounts = _host_mounts(sandbox.base)
    rng = random.Random(1234)
    command = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes",
               "--", "/bin/sh", "-c", f"while :; do true; done # {marker}"]
    leftovers: list[tuple[int, list[int]]] = []
    runs: set[str] = set()
    for launch in range(LAUNCHES):
        process = subprocess.Popen(command, cwd=sandbox.project, env=sandbox.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        supervisor = process.pid  # setpriv (the test user) execs lnk in place: its pid
        runs.add(f"{supervisor}-{process_start(supervisor)}-")
        if launch % 2:
            deadline = time.monotonic() + 5
            while not _bwrap_child_of(supervisor) and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.004))
        else:
            time.sleep(rng.uniform(0, 0.12))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        left = _left_after(marker, supervisor)
        if left:
            leftovers.append((launch, sorted(left)))
            for pid in left:  # each kill counted alone: the next start would end them
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    assert leftovers == [], f"{len(leftovers)} of {LAUNCHES} kills left processes"
    # The next start ends what the killed runs left, and prunes what they held.
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec=spec.read_text(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "STARTED\n"
    deadline = time.monotonic() + 20
    while _alive_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive_with(marker) == set()
    assert _host_mounts(sandbox.base) == mounts
    assert _run_cgroups(sandbox.who.uid, runs) == []
    work = sandbox.project / "work"
    # No placeholder (.git, ...) left but the last run's settings folders, lingering for
    # the next run to join (each checked empty by Sandbox.listing).
    assert sandbox.listing(work) == []
    assert list(sandbox.lnk_home.rglob("*.tmp")) == []
    assert list((sandbox.lnk_home / "runs").iterdir()) == []  # no run still listed
    from supervisor.linux.placeholders import Placeholders

    held = Placeholders(str(sandbox.lnk_home)).entries()
    assert all(all(h.startswith("~") for h in holders)  # no run holds anything
               for _, _, _, holders in held.values()), held


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
    assert any(text in done.stderr for text in (
        "Read-only file system", "read-only", "Permission denied", "may not write")), done.stderr
    assert "Traceback" not in done.stderr
    assert list(sandbox.lnk_home.rglob("*.tmp")) == []


@pytest.mark.requires_root
def test_a_start_in_another_pid_namespace_leaves_live_runs_alone(
        root_sandbox: Sandbox) -> None:
    """A run started in a pid namespace of its own (a container or an `unshare -p` job
    sharing the cgroups and $LNK_HOME) has a pid that names another process, or none,
    outside it: a start outside must not take it for a killed run and end it."""
    inside = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", LNK, "sandbox", "run", "--",
         "/bin/sh", "-c", "echo STARTED; sleep 4; echo LIVED"],
        cwd=root_sandbox.project, env=root_sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert inside.stdout is not None
        assert inside.stdout.readline().strip() == "STARTED"
        for _ in range(3):  # starts outside, each pruning what it takes for dead
            assert root_sandbox.run("/bin/true").returncode == 0
        out, err = inside.communicate(timeout=30)
    finally:
        inside.kill()
    assert inside.returncode == 0, err
    assert out.strip() == "LIVED"
