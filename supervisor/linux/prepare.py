"""What a Linux run of a spec gets on this machine, made before it starts: the plan, the
layers the kernel can enforce, the environment, the program list's files, the exec
watch, and the keeper's side of the run. Both launches share them: with bwrap
(backend.py) and without namespaces (direct.py), which is why they live apart from
either."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..capabilities import CheckCache
from ..environment import build_environment
from ..errors import ConfinementError, SandboxError
from ..events import EventLog, say
from ..grants import Snapshot
from ..installation import inner_source, interpreter
from ..view import View, view_for
from .capabilities import landlock_abi, watch_reads, watch_support
from .confine import Layers
from .elf import interpreter_of
from .inner_program import COMPILED, choose
from .placement import confirm_working_directory
from .plan import SYSTEM_FOLDERS, HostLayout, LaunchPlan, RunMounts, build_plan

# RunMounts (run_mounts.py) is what a run hands plan_for: importable from here too.
__all__ = ["KeptRun", "RunMounts", "WatchFactory", "allowed_files", "decide_layers",
           "plan_for", "program_loaders", "refuse_unheld_limits", "sandbox_environment",
           "watch_receivers"]

if TYPE_CHECKING:
    from collections.abc import Callable

    from .cgroups import RunCgroups
    from .keeper import Keeper
    from .notify import Notification
    from .watch import ExecWatch, Judge


def plan_for(snapshot: Snapshot, run: RunMounts | None = None, *,
             view: View | None = None, inner: str | None = None) -> LaunchPlan:
    """The plan for this machine, built once from every input: the view (built once, or
    `view`, built already for the run), this host's facts, and the run's own mounts
    (`run`; none for a plan printed or checked). `inner`: which inner confiner it starts
    (inner_program.choose). The working directory a harness asks for is then looked for
    on the host (placement.py): the plan itself is pure."""
    run = run or RunMounts()
    python, prefix = interpreter()
    root_mode = os.geteuid() == 0
    layout = HostLayout.probe(inner_source(), python, prefix, snapshot, root_mode=root_mode,
                              compiled_inner=(inner or choose()) == COMPILED)
    plan = build_plan(view or view_for(snapshot, SYSTEM_FOLDERS), layout, run,
                      root_mode=root_mode)
    if run.cwd is not None:
        confirm_working_directory(plan)
    return plan


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
                 events: EventLog, judge: Judge | None, *, learn: bool,
                 handlers: Callable[[int], dict[int, Callable[[Notification], None]]]
                 | None = None) -> None:
        self.snapshot, self.loaders, self.layers = snapshot, loaders, layers
        self.events, self.judge, self.learn = events, judge, learn
        self.handlers = handlers  # a run without namespaces' own (direct_metadata.py)

    def __call__(self, listener: int) -> ExecWatch:
        from inner.syscalls import number

        from ..learn import written_folders
        from .watch import ExecWatch, Judge

        judge = self.judge or Judge(
            allowed_files(self.snapshot, self.loaders),
            listed=frozenset(p.target for p in self.snapshot.programs or ()),
            written=written_folders(self.snapshot))
        judge.record = self.learn
        numbers = {name: number(name) for name in ("execve", "execveat", "memfd_create")}
        return ExecWatch(listener, numbers=numbers, judge=judge, events=self.events,
                         seal_memfd=self.layers.memfd == "notify",
                         receivers=watch_receivers(),
                         compiled=os.environ.get("LNK_EXEC_WATCH") != "python",
                         handlers=self.handlers)


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


def say_limits_hit(snapshot: Snapshot, cgroups: RunCgroups, status: int) -> None:
    """After the run: each limit the kernel applied, one line each, as both launches
    say them; and a CPU limit's kill, which no cgroup event records (cpu_limit_note)."""
    hit = cgroups.limit_hit()
    for limit in hit:
        say(f"the run reached its {limit} limit ([limits] in the spec; "
            "`lnk sandbox describe` shows them)")
    cpu = cpu_limit_note(snapshot.run_limits().cpu, status, cgroups.cpu_seconds())
    if cpu is not None and not hit:
        say(cpu)


def cpu_limit_note(limit: int, status: int, used: float | None) -> str | None:
    """What to say when the command died as the CPU limit ends one: RLIMIT_CPU, set
    soft and hard alike (confine.rlimits), is the kernel's SIGKILL (137; SIGXCPU, 152,
    where a limit was lowered to a soft one). The kernel says nothing else of why, so
    the run's own count decides, where a v2 cgroup of its own keeps one (`used`: its
    processes' CPU seconds between them, at least the limit of one): then it is said as
    the memory limit's is. Without a count it is said as what it may be."""
    if not limit or status not in (128 + 9, 128 + 24):
        return None
    shown = f"[limits] cpu = {limit} s of CPU time per process"
    if used is not None:
        # The cgroup's count and the limit's are taken apart (the rlimit's by the
        # scheduler's ticks, the cgroup's flushed lazily): 0.88 s were counted here for a
        # process the 1 s limit killed. A run killed otherwise reads the same only
        # after using half its limit of CPU.
        if used < limit / 2:
            return None
        return (f"the run reached its CPU time limit ({shown}; `lnk sandbox describe` "
                "shows the limits)")
    return (f"the command was killed (signal {status - 128}) with {shown} set, which is "
            "how that limit ends a process (this machine gives lnk-sandbox no count of "
            "the run's CPU time to be sure)")
