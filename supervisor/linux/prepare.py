"""What a Linux run of a spec gets on this machine, made before it starts: the plan, the
layers the kernel can enforce, the environment, the program list's files, the exec
watch, and the keeper's side of the run. Both launches share them: with bwrap
(backend.py) and without namespaces (direct.py), which is why they live apart from
either."""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from ..capabilities import CheckCache
from ..environment import build_environment
from ..errors import ConfinementError, SandboxError
from ..events import EventLog
from ..grants import Snapshot
from ..installation import inner_source, interpreter
from ..view import View, view_for
from .capabilities import landlock_abi, watch_reads, watch_support
from .confine import Layers
from .elf import interpreter_of
from .inner_program import COMPILED, choose
from .placement import place
from .plan import SYSTEM_FOLDERS, HostLayout, LaunchPlan, MountOp, before_remounts, build_plan

if TYPE_CHECKING:
    from .cgroups import RunCgroups
    from .keeper import Keeper
    from .watch import ExecWatch, Judge


class RunMounts(NamedTuple):
    """What one run adds to its spec's plan, all known before the plan is built (so
    that nothing edits the plan after: pinning turns its paths into descriptors, and
    that is all). `resolv_conf`: the file the proxy's resolv.conf is bound from (proxy
    mode), the run's own; a plan without a run names a stand-in. `relays`: run by root,
    the relay bound in place of each named socket. `git`: git's files of the run
    (gitrun.py). `cwd` and `tmp`: where a harness places the command (placement.py)."""

    resolv_conf: str | None = None
    relays: Mapping[str, str] = MappingProxyType({})
    git: tuple[MountOp, ...] = ()
    cwd: str | None = None
    tmp: str | None = None


def plan_for(snapshot: Snapshot, run: RunMounts | None = None, *,
             view: View | None = None, inner: str | None = None) -> LaunchPlan:
    """The plan for this machine: the view rendered as mounts (built once, or `view`,
    built already for the run), then the run's own mounts, each a stage before the plan
    is handed on. `inner`: which inner confiner it starts (inner_program.choose)."""
    run = run or RunMounts()
    python, prefix = interpreter()
    root_mode = os.geteuid() == 0
    layout = HostLayout.probe(inner_source(), python, prefix, snapshot, root_mode=root_mode,
                              compiled_inner=(inner or choose()) == COMPILED)
    plan = build_plan(view or view_for(snapshot, SYSTEM_FOLDERS), layout,
                      root_mode=root_mode)
    if snapshot.settings.network_mode == "proxy":
        from .network import PLAN_SOURCE, ResolvConfHost, with_resolv_conf

        plan = with_resolv_conf(plan, run.resolv_conf or PLAN_SOURCE,
                                ResolvConfHost.probe())
    # A named socket that is gone since the snapshot refuses the launch when pinned, but
    # an optional one is left out, as an optional grant is.
    sockets = tuple(s for s in snapshot.network.sockets()
                    if not s.optional or os.path.lexists(s.target or ""))
    if sockets:
        from .network import with_unix_sockets

        plan = with_unix_sockets(plan, sockets, run.relays)
    if run.git:
        plan = before_remounts(plan, run.git)
    return place(plan, cwd=run.cwd, tmp=run.tmp,
                 tmp_size_asked="tmp" in snapshot.run_limits().written)


def sandbox_environment(snapshot: Snapshot) -> dict[str, str]:
    extra = snapshot.network.environment()
    if snapshot.settings.network_mode == "proxy":
        from .network import proxy_environment

        extra.update(proxy_environment())
    settings = snapshot.settings
    return build_environment(os.environ, keep=settings.env_keep, assign=settings.env_assign,
                             extra=extra)


def decide_layers(snapshot: Snapshot, cache: CheckCache, *, learn: bool = False) -> Layers:
    """What this launch applies; refuses what the machine cannot enforce (fail closed).

    The exec watch runs under a program list (to name refusals and seal memory files)
    and for learn; without a listener a list still holds (Landlock) but its refusals go
    unnamed and memory files are refused with ENOSYS.
    """
    abi = landlock_abi(cache)
    if snapshot.programs is not None and abi == 0:
        raise ConfinementError(
            "the spec's program list ([commands] programs) is enforced by Landlock, and "
            "this kernel has no Landlock",
            hint="run on a kernel with Landlock (Linux 5.13+, with landlock in the lsm= "
            "list), or remove [commands] programs so that any program may run",
        )
    watched = learn or snapshot.programs is not None
    listener, sealed = watch_support(cache) if watched else (False, False)
    if learn and not listener:
        raise ConfinementError(
            "learn needs a seccomp listener (Linux 5.19+), which this kernel lacks",
            hint="`lnk sandbox check` says what this machine offers")
    if learn and not watch_reads(cache):
        raise ConfinementError(
            "learn reads each program's path from the process that runs it "
            "(process_vm_readv), which this machine refuses (Docker's default seccomp "
            "profile does, without CAP_SYS_PTRACE)",
            hint="run the container with --cap-add SYS_PTRACE, or learn outside it")
    memfd = "allow"
    if snapshot.programs is not None:
        memfd = "notify" if listener and sealed else "enosys"
    return Layers(landlock_abi=abi, memfd=memfd, exec_notify=watched and listener,
                  listener=watched and listener, listener_required=learn)


def program_loaders(snapshot: Snapshot) -> dict[str, str | None]:
    """The dynamic loader of each listed program, resolved to its own file."""
    loaders: dict[str, str | None] = {}
    for program in snapshot.programs or ():
        loader = interpreter_of(program.target)
        loaders[program.target] = os.path.realpath(loader) if loader else None
    return loaders


def allowed_files(snapshot: Snapshot, loaders: dict[str, str | None]) -> frozenset[
        tuple[int, int]] | None:
    """The list Landlock enforces, as (device, inode): what the watch judges against."""
    if snapshot.programs is None:
        return None
    files = {p.target for p in snapshot.programs} | {x for x in loaders.values() if x}
    identities = set()
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue
        identities.add((info.st_dev, info.st_ino))
    return frozenset(identities)


def watch_receivers() -> int:
    """How many receiver threads the exec watch runs (LNK_EXEC_WATCH_RECEIVERS, for
    benchmarks/exec_watch.py; the default is what measured best there). The tests also
    run the pure-Python watch, the fallback where nothing compiled it, with
    LNK_EXEC_WATCH=python."""
    text = os.environ.get("LNK_EXEC_WATCH_RECEIVERS", "")
    from .watch import RECEIVERS

    return int(text) if text.isdigit() and 0 < int(text) <= 64 else RECEIVERS


class WatchFactory:
    """Makes the exec watch when the inner hands its listener over: the watch (and
    ctypes) load only for a run that is watched. `judge` is learn's (it records), or
    one made here from the spec's list."""

    def __init__(self, snapshot: Snapshot, loaders: dict[str, str | None], layers: Layers,
                 events: EventLog, judge: Judge | None, *, learn: bool) -> None:
        self.snapshot, self.loaders, self.layers = snapshot, loaders, layers
        self.events, self.judge, self.learn = events, judge, learn

    def __call__(self, listener: int) -> ExecWatch:
        from inner.syscalls import number

        from .watch import ExecWatch, Judge

        judge = self.judge or Judge(
            allowed_files(self.snapshot, self.loaders),
            listed=frozenset(p.target for p in self.snapshot.programs or ()))
        judge.record = self.learn
        numbers = {name: number(name) for name in ("execve", "execveat", "memfd_create")}
        return ExecWatch(listener, numbers=numbers, judge=judge, events=self.events,
                         seal_memfd=self.layers.memfd == "notify",
                         receivers=watch_receivers(),
                         compiled=os.environ.get("LNK_EXEC_WATCH") != "python")


class KeptRun:
    """The keeper's side of one run, entered first on the run's stack so that it exits
    last, after the cgroups' thread (which starts the keeper) is joined: the keeper is
    told the run ended when nothing of it can be left (no sandbox, or one ended by
    itself) and the cgroups were left, else its pipe is closed and it ends what is left.
    A cgroup this process could not leave is never the keeper's to kill: its
    cgroup.kill would end the supervisor (a harness's, for the API)."""

    def __init__(self, keeper: Keeper) -> None:
        self.keeper = keeper
        self.clean = True  # what the run's body says as it goes
        self.cgroups: RunCgroups | None = None

    def __enter__(self) -> KeptRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.clean or (self.cgroups is not None and self.cgroups.kept):
            self.keeper.ended()
        else:
            self.keeper.close()


def refuse_unheld_limits(snapshot: Snapshot, cgroups: RunCgroups) -> None:
    """A memory limit the spec sets, and no cgroup here can hold, refuses the launch: the
    default one only shows as not held in `check` (a person's own cgroups are seldom
    delegated, and refusing every run there would leave no sandbox at all)."""
    limits = snapshot.run_limits()
    if "memory" in limits.written and limits.memory and not cgroups.held.memory:
        raise SandboxError(
            f"{snapshot.source}: limits.memory: the spec sets a memory limit, and no "
            "cgroup with the memory controller may be made here for the run",
            hint="run it as root, or in a delegated cgroup (systemd-run --user --scope -p "
                 "Delegate=yes lnk sandbox run ...), or remove limits.memory")
