"""A cgroup of the run's own: its processes and memory bounded, and every process of it
killed at the end, or by the run's keeper (keeper.py) and again at the next start when
the supervisor was killed first.

Facts (Linux 6.18; Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/*.rst; seen here):
- A process is moved by writing its pid to a cgroup's `cgroup.procs`; what it forks
  after is born there. The supervisor moves itself into the run's cgroup before it
  spawns bwrap, so nothing of the run exists outside it at any instant, however early a
  kill lands (bwrap sets its parent-death signal only after it starts: killed in the
  first milliseconds, bwrap's first child was seen left blocked for ever in read()).
- cgroup v2 (`cgroup2` in mountinfo) has `cgroup.kill` (5.14) in every cgroup but the
  root, with or without controllers: writing 1 kills every process in it and below.
  `pids.max` and `memory.max` need their controllers enabled in the parent's
  `cgroup.subtree_control`, and a cgroup with processes (the root aside) cannot enable
  them for its children (EBUSY: no internal processes). So run by root the runs' cgroups
  are made under `lnk-sandbox` at the top of the hierarchy, which holds no process.
- On a hybrid system (this one) the pids and memory controllers are bound to cgroup v1
  hierarchies, and v2 has none of them: there the limits go to v1's `pids.max` and
  `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`, swap included) and the
  kill to v2's controller-less cgroup.
- A person may make cgroups only in a subtree delegated to them (systemd's user@.service
  gives one: its folders are theirs); lnk-sandbox then makes the run's cgroup in the
  cgroup it is in when that folder is its own, for the kill; limits need controllers the
  parent already enables, else the inner's rlimits and the tmpfs sizes hold alone
  (`check` says which).
- A cgroup is removed with rmdir once empty; the kill is asynchronous: the processes go
  within milliseconds, and rmdir answers EBUSY until they are reaped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ..limits import RunLimits

BASE = "lnk-sandbox"
TOKEN = re.compile(r"^[0-9]+-[0-9]+-[0-9a-f]{8}$")  # runs.this_token's: pid-start-random
LEGACY_TOKEN = re.compile(r"^[0-9]+-[0-9]+$")  # before 0.1's runs locked their cgroups
_MOUNTINFO = "/proc/self/mountinfo"


class Hierarchy(NamedTuple):
    """A mounted cgroup hierarchy: where it is, v1 or v2, and (v1) its controllers."""

    path: str
    version: int
    controllers: frozenset[str]


def hierarchies() -> list[Hierarchy]:
    found = []
    try:
        with open(_MOUNTINFO) as table:
            lines = table.read().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        options = set(tail[2].split(","))
        controllers = frozenset(options & {"pids", "memory"})
        found.append(Hierarchy(fields[4], 2 if tail[0] == "cgroup2" else 1, controllers))
    return found


def own_cgroup(version: int, controller: str = "") -> str | None:
    """This process's cgroup (a path within its hierarchy) in v2, or v1's `controller`."""
    try:
        with open("/proc/self/cgroup") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    for line in lines:
        number, names, path = line.split(":", 2)
        if version == 2 and number == "0" and names == "":
            return path
        if version == 1 and controller in names.split(","):
            return path
    return None


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


class Held(NamedTuple):
    """What a run's cgroups hold, for `check` and the note: "pids" and "memory" (by v1 or
    v2) and "kill" (a v2 cgroup of the run's own)."""

    pids: bool
    memory: bool
    kill: bool


class RunCgroups:
    """The cgroups of one run (one per hierarchy it may use), and the ones it came from."""

    def __init__(self, token: str, limits: RunLimits) -> None:
        self.token = token
        self.made: list[str] = []  # the run's cgroup folders, v2 first
        self.kept: list[str] = []  # folders end() left: this process could not leave them
        self.killable: list[str] = []  # those with cgroup.kill
        self.home: list[str] = []  # the cgroups.procs this process was in, to go back to
        self.limits = limits
        self.pids = self.memory = self.kill = False
        self.moving: threading.Thread | None = None  # entering or leaving, in the back
        self.failure: BaseException | None = None
        self.away = False  # this process is in (some of) the run's cgroups
        self.locks: list[int] = []  # each cgroup's folder, locked while this run lives

    @staticmethod
    def entering(token: str, limits: RunLimits, *,
                 first: Callable[[], None] | None = None) -> RunCgroups:
        """Make the run's cgroups and move this process into them, in a thread: each
        move waits for an RCU grace period in the kernel (2-5 ms a hierarchy, measured),
        which the start's other work hides. `entered()` waits for it before the spawn.
        `first` runs in that thread before the move: what this process starts that must
        be born outside the run's cgroups (the keeper)."""
        run = RunCgroups(token, limits)

        def enter() -> None:
            try:
                if first is not None:
                    first()
                run._open()
                run.enter()
            except BaseException as err:  # handed to entered(), in the launching thread
                run.failure = err

        run.moving = threading.Thread(target=enter, name="lnk-cgroups", daemon=True)
        run.moving.start()
        return run

    def entered(self) -> None:
        """Wait until this process is in the run's cgroups (or say why it is not)."""
        self._settle()
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def leave_soon(self) -> None:
        """Move this process back home in a thread, while the run goes on: bwrap is born
        in the run's cgroups, and nothing needs this process out of them before `end`."""
        self._settle()
        self.moving = threading.Thread(target=self.go_home, name="lnk-cgroups", daemon=True)
        self.moving.start()

    def _settle(self) -> None:
        if self.moving is not None:
            self.moving.join()
            self.moving = None

    @staticmethod
    def open(token: str, limits: RunLimits) -> RunCgroups:
        """Make the run's cgroups where this process may, with the limits they can hold.
        Never raises: what cannot be made is left out, and said by `held`."""
        run = RunCgroups(token, limits)
        run._open()
        return run

    def _open(self) -> None:
        root = os.geteuid() == 0
        for hierarchy in hierarchies():
            try:
                self._make(hierarchy, root=root)
            except OSError:
                continue

    def _make(self, hierarchy: Hierarchy, *, root: bool) -> None:
        own = own_cgroup(hierarchy.version, next(iter(hierarchy.controllers), ""))
        if own is None or (hierarchy.version == 1 and not hierarchy.controllers):
            return
        mine = os.path.join(hierarchy.path, own.lstrip("/"))
        if hierarchy.version == 1:
            if not root:
                return  # v1 is never delegated to a person
            # Below its own cgroup: v1 has no rule against processes beside children,
            # and the run stays in what holds this process (a container's memory).
            parent = os.path.join(mine, BASE)
        elif root:
            # Below the deepest cgroup above its own that holds no process: there the
            # controllers may be enabled for children (v2's rule), and the run stays
            # inside every limit of the slices above it (not the top: a container's
            # or a unit's limits would not hold it).
            parent = os.path.join(empty_ancestor(hierarchy.path, mine), BASE)
        else:
            parent = mine
            if not os.access(os.path.join(parent, "cgroup.procs"), os.W_OK):
                return
        if parent != mine:
            os.makedirs(parent, exist_ok=True)
        if hierarchy.version == 2 and root:
            _enable(hierarchy.path, parent)
        folder = os.path.join(parent, self.token if parent != mine else f"{BASE}-{self.token}")
        with _locked(parent):
            prune(parent)
            os.mkdir(folder, 0o755)
            self.locks.append(_lock(folder))
        self.made.append(folder)
        self.home.append(os.path.join(mine, "cgroup.procs"))
        limits = self.limits
        if hierarchy.version == 2:
            if os.path.exists(os.path.join(folder, "cgroup.kill")):
                self.killable.append(folder)
                self.kill = True
            available = set(_read(os.path.join(folder, "cgroup.controllers")).split())
            if limits.pids and "pids" in available and not self.pids:
                _write(os.path.join(folder, "pids.max"), str(limits.pids))
                self.pids = True
            if limits.memory and "memory" in available and not self.memory:
                _write(os.path.join(folder, "memory.max"), str(limits.memory))
                try:
                    _write(os.path.join(folder, "memory.swap.max"), "0")
                except OSError:
                    pass  # no swap accounting: swap is not there to escape into
                self.memory = True
        elif "pids" in hierarchy.controllers and limits.pids and not self.pids:
            _write(os.path.join(folder, "pids.max"), str(limits.pids))
            self.pids = True
        elif "memory" in hierarchy.controllers and limits.memory and not self.memory:
            _write(os.path.join(folder, "memory.limit_in_bytes"), str(limits.memory))
            try:
                _write(os.path.join(folder, "memory.memsw.limit_in_bytes"),
                       str(limits.memory))
            except OSError:
                pass  # no swap accounting here
            try:
                # v1 charges sockets' buffers only once a TCP limit is set (v2 always):
                # then a run past it is held back under memory pressure, though not
                # stopped as anonymous memory is (the gap `check` states).
                _write(os.path.join(folder, "memory.kmem.tcp.limit_in_bytes"),
                       str(limits.memory))
            except OSError:
                pass  # a kernel without kmem accounting in v1
            self.memory = True

    @property
    def held(self) -> Held:
        return Held(self.pids, self.memory, self.kill)

    def enter(self) -> None:
        """Move this process into every cgroup of the run: what it spawns is born there."""
        from ..errors import LaunchError

        for folder in self.made:
            try:
                self.away = True
                _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))
            except OSError as err:
                self.go_home()
                raise LaunchError(f"cannot enter the run's cgroup {folder}: {err.strerror}",
                                  errno=err.errno) from None

    def go_home(self) -> None:
        """Move this process back where it came from (what it spawned stays). Only when
        it left: a move costs the same when it goes nowhere."""
        if not self.away:
            return
        self.away = False
        for home in self.home:
            try:
                _write(home, str(os.getpid()))
            except OSError:
                continue

    def end(self) -> None:
        """End what is left of the run and remove its cgroups."""
        self._settle()
        self.failure = None
        self.go_home()
        for folder in self.made:
            # Never with this process inside: a move home the kernel refused (EBUSY where
            # another run enabled a controller meanwhile) would have cgroup.kill end the
            # supervisor itself. Left then to the next start, which finds it unlocked.
            if _holds(folder, os.getpid()):
                self.kept.append(folder)
            else:
                empty(folder)
        for fd in self.locks:
            os.close(fd)
        self.locks = []

    def cpu_seconds(self) -> float | None:
        """The CPU time the run's processes used between them, from a v2 cgroup of its
        own (cpu.stat's usage_usec, there whatever controllers are on); None without."""
        for folder in self.made:
            try:
                text = _read(os.path.join(folder, "cpu.stat"))
            except OSError:
                continue
            for line in text.splitlines():
                field, _, value = line.partition(" ")
                if field == "usage_usec" and value.strip().isdigit():
                    return int(value) / 1e6
        return None

    def limit_hit(self) -> list[str]:
        """Which of the run's limits the kernel applied (its events), for the message."""
        hit = []
        for folder in self.made:
            for name, file, key in (("processes", "pids.events", "max"),
                                    ("memory", "memory.events", "oom_kill"),
                                    ("memory", "memory.oom_control", "oom_kill")):
                try:
                    text = _read(os.path.join(folder, file))
                except OSError:
                    continue
                for line in text.splitlines():
                    field, _, value = line.partition(" ")
                    if field == key and value.strip() not in ("", "0") and name not in hit:
                        hit.append(name)
        return hit


def _enable(root: str, parent: str) -> None:
    """pids and memory for the runs' cgroups under `parent`, where v2 offers them: in
    every cgroup from the top down to `parent` (each holds no process, or is the top)."""
    offered = set(_read(os.path.join(root, "cgroup.controllers")).split())
    wanted = [name for name in ("pids", "memory") if name in offered]
    path = [root]
    for part in os.path.relpath(parent, root).split(os.sep):
        path.append(os.path.join(path[-1], part))
    for folder in path:
        enabled = set(_read(os.path.join(folder, "cgroup.subtree_control")).split())
        missing = [name for name in wanted if name not in enabled]
        if missing:
            try:
                _write(os.path.join(folder, "cgroup.subtree_control"),
                       " ".join(f"+{name}" for name in missing))
            except OSError:
                return


def empty_ancestor(root: str, mine: str) -> str:
    """The deepest cgroup above `mine` (a folder of the hierarchy at `root`) that holds
    no process itself, or the top."""
    folder = os.path.dirname(mine)
    while len(folder) > len(root):
        try:
            if not _read(os.path.join(folder, "cgroup.procs")).strip():
                return folder
        except OSError:
            pass
        folder = os.path.dirname(folder)
    return root


def _lock(folder: str, *, wait: bool = True) -> int:
    """An fd of `folder`, flock'ed: a run's cgroup is locked while its supervisor lives
    (the kernel drops the lock when it dies, however), which any start can test from
    any pid namespace, where a pid would be judged in the wrong one."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def _locked(parent: str) -> Iterator[None]:
    """The runs' parent, locked while a run's cgroup is made and locked, or the dead ones
    pruned: a start never sees another's new cgroup before it is locked."""
    fd = _lock(parent)
    try:
        yield
    finally:
        os.close(fd)


def _processes(folder: str) -> list[int]:
    pids: list[int] = []
    for current, _, _ in os.walk(folder):
        try:
            pids += [int(p) for p in _read(os.path.join(current, "cgroup.procs")).split()]
        except OSError:
            continue
    return pids


def _holds(folder: str, pid: int) -> bool:
    """Whether `pid` is in the cgroup `folder` itself (an unreadable one is taken to)."""
    try:
        return str(pid) in _read(os.path.join(folder, "cgroup.procs")).split()
    except FileNotFoundError:
        return False
    except OSError:
        return True


def empty(folder: str, *, wait: float = 5.0) -> bool:
    """Kill every process in `folder` (cgroup.kill, else one by one), then remove it and
    what is below it; True when it is gone."""
    kill = os.path.join(folder, "cgroup.kill")
    deadline = time.monotonic() + wait
    while True:
        if os.path.exists(kill):
            try:
                _write(kill, "1")
            except OSError:
                pass
        else:
            for pid in _processes(folder):
                try:
                    os.kill(pid, 9)
                except OSError:
                    continue
        for current, _, _ in sorted(os.walk(folder), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(current)
            except OSError as err:
                if err.errno not in (errno.EBUSY, errno.ENOENT, errno.ENOTEMPTY):
                    return False
        if not os.path.exists(folder):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def prune(parent: str) -> None:
    """Empty and remove the cgroups of runs whose supervisor is gone (it was killed):
    the ones whose lock is free. Called with the parent locked."""
    for token, folder in _runs(parent):
        if LEGACY_TOKEN.match(token) and _legacy_alive(token):
            continue  # an older lnk-sandbox's run, which locks nothing: judged by its pid
        try:
            fd = _lock(folder, wait=False)
        except OSError:
            continue  # alive (locked), or gone meanwhile
        try:
            empty(folder, wait=1.0)
        finally:
            os.close(fd)


def _runs(parent: str) -> Iterator[tuple[str, str]]:
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        token = name.removeprefix(f"{BASE}-")
        if TOKEN.match(token) or LEGACY_TOKEN.match(token):
            yield token, os.path.join(parent, name)


def _legacy_alive(token: str) -> bool:
    """Whether the supervisor `pid-start` names is still the process it was."""
    from .proc_stat import process_start

    pid, _, start = token.partition("-")
    return pid.isdigit() and process_start(int(pid)) == start
