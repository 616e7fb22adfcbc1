"""A run without namespaces (direct mode): the inner started by the supervisor itself.

Where no user namespace can be made (nonamespace.py says where, and what holds), bwrap
cannot start. The supervisor then spawns the inner confiner itself and stays its
parent: the inner (its step 0, asked by `Config.parent`) asks for its parent-death
signal, sets no_new_privs, drops every capability, installs the seccomp filter (with
the listener, handed over as ever), applies Landlock from rules the plan compiles to
(direct_rules.py: the host's own paths, no mount), its rlimits, and execs the command
in its own pid: the supervisor waits for the command itself. Everything else is the
run bwrap's has, reused: the keeper, the run's cgroups, the exec watch, the events,
supervise.py's signals, terminal and timeout.

Order of a launch, each step's reason beside it in `launch_direct` and `_prepare`, each
resource entered on one ExitStack as a run with bwrap's are (backend.py), so that they
go in the reverse order on every way out:
1. the run listed, its keeper started and its cgroups entered, as with bwrap;
2. what holds judged (nonamespace.judge): a promise that cannot hold refuses the launch
   before anything is made; the mode said once on stderr, with what is narrower;
3. the run's own files: a private folder for TMPDIR in `$LNK_HOME/run`, git's identity
   and trace, seen at their own paths;
4. the plan, compiled to the inner's rules; /etc's root-only files hidden from root;
5. a memory limit no cgroup holds refused, as with bwrap; this process made a
   subreaper (an orphan of the sandbox comes back to it, not to the machine's init),
   the inner (compiled where it can run: inner_program.choose) spawned from the main
   thread (the parent-death signal follows the thread that forked), its process group
   given to the keeper;
6. supervised; then every process the sandbox left is killed and reaped, as the end of
   bwrap's pid namespace would.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from typing import TYPE_CHECKING, NamedTuple

from inner.config import Config, Landlock
from inner.config import FileOp as InnerFileOp

from ..capabilities import CheckCache
from ..errors import LaunchError
from ..events import EventLog, say
from ..grants import Snapshot, is_within
from ..host_files import open_report
from ..netpolicy import UNIX_SOCKETS_ABI
from ..nonamespace import ANNOUNCEMENT, FORCED, SCOPES_ABI, Facts, forced_off
from ..nonamespace import judge as judge_spec
from ..run_types import FileOp
from ..view import view_for
from .capabilities import landlock_abi, watch_reads, watch_support, without_namespaces
from .cgroups import RunCgroups
from .confine import Layers, filters, limit_records
from .direct_metadata import MetadataGuard
from .direct_rules import NONE, Rights, filter_rules, landlock_config
from .direct_spawn import Leftovers, ReaperPipe, spawn_inner, subreaper
from .inner_program import COMPILED
from .keeper import Keeper
from .plan import SYSTEM_FOLDERS, LaunchPlan
from .runs import RunList, tag, this_token
from .supervise import Outcome, supervise

if TYPE_CHECKING:
    from inner.seccomp import Rule

    from ..netpolicy import Decide
    from ..view import View
    from .gitrun import GitRun
    from .watch import ExecWatch, Judge

# The variables that name a temp folder, each set to the run's private one.
TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
RUN = "run"
ETC_BOUND = 8192  # entries of /etc walked for root-only files; past it, /etc is refused


def facts(snapshot: Snapshot, cache: CheckCache, cgroups: RunCgroups | None) -> Facts:
    return Facts(landlock_abi(cache), os.geteuid() == 0,
                 cgroups is not None and cgroups.held.pids, metadata_listener(cache))


def metadata_listener(cache: CheckCache) -> bool:
    """Whether a run here has the listener that does a file's mode, owner, times and
    watches (direct_metadata.py): a seccomp listener (the caller's memory is read by
    process_vm_readv, else /proc/PID/mem, which Docker's default profile leaves)."""
    return watch_support(cache)[0]


def launch_direct(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
                  learn: bool = False, judge: Judge | None = None,
                  decide: Decide | None = None, timeout: float | None = None,
                  cwd: str | None = None, tmp: str | None = None,
                  file_op: FileOp | None = None) -> Outcome:
    """One run without namespaces, as backend.launch_and_supervise runs one with bwrap
    (the same arguments; `decide` has no proxy to serve here, which judge refuses).

    Each resource of the run is entered on one stack, as with bwrap, and so released in
    the reverse order on every way out: the keeper's side (last out), the run's listing,
    its cgroups, then what `_prepare` makes (the report, git's files, the private temp
    folder), then this process as a subreaper and what the sandbox left, killed and
    reaped (first out, once the command ended)."""
    from .prepare import KeptRun, refuse_unheld_limits, say_limits_hit

    with ExitStack() as stack:
        # 1. Listed, kept and given cgroups of its own before anything of the run exists
        # (backend.launch_and_supervise says why, in this order).
        token = this_token()
        kept = stack.enter_context(KeptRun(Keeper(token)))
        stack.enter_context(closing(RunList(snapshot.lnk_home, token)))
        cgroups = RunCgroups.entering(token, snapshot.run_limits(), first=kept.keeper.start)
        kept.cgroups = cgroups
        stack.callback(cgroups.end)
        run = _prepare(stack, snapshot, cgroups, report=report, learn=learn, judge=judge,
                       cwd=cwd, tmp=tmp, file_op=file_op)
        # 5. and 6.
        _keep(kept.keeper, cgroups)
        refuse_unheld_limits(snapshot, cgroups)
        kept.clean = False
        stack.enter_context(subreaper())
        reaper, pipe = _reaper_pipe(stack, run.config)
        launched = spawn_inner(argv, env=run.env, cwd=run.cwd, config=run.config,
                               mark=tuple(tag(token)), cgroups=cgroups, reaper=reaper)
        launched.ended = Leftovers(launched, keep=kept.keeper.pid, reaper=pipe)
        stack.callback(launched.ended)
        kept.keeper.kill_group(launched.pid)
        outcome = supervise(launched, watch_factory=run.watch_factory, timeout=timeout)
        # Whatever the command left is killed and reaped on the way out (end_leftovers),
        # as the end of bwrap's pid namespace would: nothing of the run is left after.
        kept.clean = True
        say_limits_hit(snapshot, cgroups, outcome.status)
        return outcome
    raise AssertionError("unreachable")  # ExitStack swallows nothing here


class _Prepared(NamedTuple):
    """A run without namespaces made ready to spawn."""

    config: Config
    env: dict[str, str]
    cwd: str
    watch_factory: Callable[[int], ExecWatch] | None


def _prepare(stack: ExitStack, snapshot: Snapshot, cgroups: RunCgroups, *,
             report: str | None, learn: bool, judge: Judge | None, cwd: str | None,
             tmp: str | None, file_op: FileOp | None) -> _Prepared:
    """Everything of a run before the inner starts, each resource it makes entered on
    `stack`, in the order below."""
    from .prepare import (
        RunMounts,
        WatchFactory,
        decide_layers,
        plan_for,
        program_loaders,
        sandbox_environment,
    )

    cache = CheckCache(snapshot.lnk_home)
    if learn:
        snapshot = snapshot._replace(programs=None)
    layers = decide_layers(snapshot, cache, learn=learn)
    if not layers.listener and metadata_listener(cache):
        # A file's mode and times are done by the listener (direct_metadata.py): a run
        # without namespaces has one wherever the machine offers it, list or not.
        layers = layers._replace(listener=True)
    cgroups.entered()  # what holds depends on whether a cgroup counts the processes
    # 2. What holds, judged before anything is made; said once.
    judgement = judge_spec(snapshot, facts(snapshot, cache, cgroups))
    refusal = judgement.error(snapshot.source)
    if refusal is not None:
        raise refusal
    say(FORCED if forced_off(os.environ) else ANNOUNCEMENT)
    if snapshot.programs is not None and layers.listener and not watch_reads(cache):
        say("the exec watch cannot read a program's path here (process_vm_readv is "
            "refused): refused programs go unnamed; the list still holds")
    for note in judgement.narrower:
        say(note)
    events = stack.enter_context(closing(EventLog(open_report(report) if report else None)))
    # 3. The run's own files, seen at their own paths.
    view = view_for(snapshot, SYSTEM_FOLDERS)
    shown: dict[str, Rights] = {}
    env = sandbox_environment(snapshot)
    git = _git(view, shown, env)
    if git is not None:
        stack.callback(git.finish)
    folder = tmp if tmp is not None else stack.enter_context(_private_tmp(snapshot))
    if folder is not None:
        env.update(dict.fromkeys(TEMP_VARIABLES, folder))
    # 4. The plan, and what the inner applies. Nothing is mounted: the inner, either
    # one, runs from the host's own files before Landlock, so the plan shows nothing of
    # its own (no interpreter's folder becomes a rule).
    plan = plan_for(snapshot, RunMounts(cwd=cwd), view=view, inner=COMPILED)
    for note in plan.notes:
        say(note)
    check_sources(plan)
    if os.geteuid() == 0:
        shown.update(dict.fromkeys(root_only("/etc"), NONE))
    loaders = program_loaders(snapshot)
    config = inner_config(landlock_config(
        plan, snapshot, loaders, abi=layers.landlock_abi, tmp=folder,
        terminals=terminals(), shown=shown), snapshot=snapshot, layers=layers)
    if file_op is not None:
        config = config.replace(file=InnerFileOp(file_op.op, file_op.path, file_op.limit))
    handlers = MetadataGuard(config.landlock.rules).handlers if config.landlock else None
    factory = WatchFactory(snapshot, loaders, layers, events, judge, learn=learn,
                           handlers=handlers)
    return _Prepared(config, env, plan.chdir, factory if layers.listener else None)


def describe_lines(snapshot: Snapshot) -> list[str] | None:
    """What the question asked says of a run without namespaces (None: with them):
    what refuses the launch, what is narrower, what does not hold."""
    cache = CheckCache(snapshot.lnk_home)
    if not without_namespaces(cache):
        return None
    cgroups = RunCgroups.open(this_token(), snapshot.run_limits())
    try:
        judgement = judge_spec(snapshot, facts(snapshot, cache, cgroups))
    finally:
        cgroups.end()
    return ([f"refused: {r.key}: {r.what}" for r in judgement.refused]
            + [f"narrower: {line}" for line in judgement.narrower]
            + [f"does not hold: {line}" for line in judgement.lost])


def preflight_direct(snapshot: Snapshot, cache: CheckCache) -> None:
    """What a launch without namespaces checks before starting anything (preflight)."""
    from .prepare import RunMounts, decide_layers, plan_for, program_loaders

    layers = decide_layers(snapshot, cache)
    cgroups = RunCgroups.open(this_token(), snapshot.run_limits())
    try:
        refusal = judge_spec(snapshot, facts(snapshot, cache, cgroups)).error(snapshot.source)
    finally:
        cgroups.end()
    if refusal is not None:
        raise refusal
    plan = plan_for(snapshot, RunMounts(), inner=COMPILED)
    landlock_config(plan, snapshot, program_loaders(snapshot), abi=layers.landlock_abi,
                    tmp=None, terminals=(), listing=lambda _: [])


def _reaper_pipe(stack: ExitStack, config: Config) -> tuple[int | None, ReaperPipe | None]:
    """The pipe the inner's reaper watches (inner/reaper.py): its read end, handed to
    the inner, and its write end, held by this process alone (close-on-exec) and closed
    at the command's end, which wakes the reaper to end the whole sandbox before the
    rest is reaped (direct_spawn.end_leftovers); when this process is killed, the kernel
    closes it and the reaper ends the sandbox, every process of it, wherever it moved.
    Nones below Landlock ABI 6 (the kernel's own answer; the inner asks again), where
    kill(-1) is not scoped."""
    from inner import landlock

    try:
        abi = landlock.abi_version()
    except OSError:
        abi = 0
    if config.landlock is None or abi < SCOPES_ABI:
        return None, None
    read, write = os.pipe2(os.O_CLOEXEC)
    pipe = ReaperPipe(write)
    stack.callback(pipe.close)
    return read, pipe


def _keep(keeper: Keeper, cgroups: RunCgroups) -> None:
    if keeper.failure is not None:
        say(f"could not start the run's keeper ({keeper.failure.strerror}): if lnk-sandbox "
            "is killed, what its sandbox leaves may run on")
        return
    keeper.kill_also(cgroups.killable)


def inner_config(rules: Landlock, *, snapshot: Snapshot, layers: Layers) -> Config:
    """The inner's configuration without namespaces: step 0 (this process its parent),
    the filter with the rules a run without namespaces adds (direct_rules.filter_rules:
    unix sockets below Landlock ABI 9, other families in network "none", System V and
    POSIX IPC, other processes' limits and scheduling, a file's metadata: to the
    listener where the filter has one, refused in the one without), `rules`, the
    limits. The spawn adds the command and the status socket."""
    unix = layers.landlock_abi >= UNIX_SOCKETS_ABI

    def extra(listener: bool) -> tuple[Rule, ...]:
        return filter_rules(network_mode=snapshot.settings.network_mode, unix=unix,
                            abi=layers.landlock_abi, listener=listener)

    return Config(-1, (), parent=os.getpid(),
                  seccomp=filters(layers, extra(layers.listener), extra(False)),
                  landlock=rules, rlimits=limit_records(snapshot))


def _git(view: View, shown: dict[str, Rights], env: dict[str, str]) -> GitRun | None:
    """git's identity and trace, seen at their own paths (gitrun.py makes them)."""
    from .confine import READ, WRITE
    from .gitrun import GitRun

    git = GitRun.prepare(view, relative=True)
    if git is None:
        return None
    moved = {}
    for op in git.ops:
        if op.source is None or op.dest == op.source:
            continue
        if op.kind == "ro-bind" and os.path.basename(op.dest) != "exclude":
            shown[op.source] = frozenset(READ)
            moved[op.dest] = op.source
        elif op.kind == "bind":
            shown[op.source] = frozenset(WRITE)
            moved[op.dest] = op.source
        # An info/exclude with placeholders added: there are none without mounts.
    for name, value in git.env.items():
        seen = value
        for inside, source in moved.items():
            if value == inside or value.startswith(inside + "/"):
                seen = source + value[len(inside):]
        env[name] = seen
    return git


@contextmanager
def _private_tmp(snapshot: Snapshot) -> Iterator[str | None]:
    """The run's private temp folder (TMPDIR), in `$LNK_HOME/run`, removed after the run
    (a killed supervisor's by the next start); None where the spec grants /tmp itself."""
    if any(g.target == "/tmp" for g in snapshot.visible()):
        yield None
        return
    from ..proxy.runfolder import remove_stale
    from ..state import existing_folder, private_folder

    with private_folder(snapshot.lnk_home, RUN) as base:
        remove_stale(base, "tmp")
        name = base.make_unique_folder(f"tmp-{os.getpid()}-")
        real = os.path.join(os.path.realpath(base.path), name)
    try:
        yield real
    finally:
        base_again = existing_folder(snapshot.lnk_home, RUN)
        if base_again is not None:
            with base_again:
                base_again.remove_tree(name)


def check_sources(plan: LaunchPlan) -> None:
    """Every path the plan shows as itself found there now, no link on the way (as
    bwrap's sources are pinned: pinning.py), a missing dot file excepted (held by
    rights without mounts). The inner then opens each without following a link, and
    one changed since is in no rule: fail closed."""
    from .pinning import pin

    held = {wanted.path for wanted in plan.holds}
    for op in plan.ops:
        if op.kind not in ("ro-bind", "bind") or op.source != op.dest or op.source is None:
            continue
        try:
            os.close(pin(op.source).fd)
        except FileNotFoundError:
            if op.dest in held:
                continue
            raise LaunchError(f"{op.source} ({op.reason}) no longer exists",
                              hint="create it again, or mark the grant optional") from None


def root_only(top: str, bound: int = ETC_BOUND) -> list[str]:
    """The entries below `top` that only their owner (root) may read: a file without
    the other-read bit, a folder without other-read or other-search (hidden whole).
    Run by root without namespaces the sandbox is uid 0, the owner: these are what an
    unprivileged user would not read. LaunchError past `bound` entries (fail closed)."""
    found: list[str] = []
    seen = 0
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            found.append(folder)
            continue
        for entry in entries:
            seen += 1
            if seen > bound:
                raise LaunchError(
                    f"{top} holds more than {bound} entries, and run by root without "
                    "namespaces each is looked at for what only root may read",
                    hint="run lnk-sandbox as a user other than root")
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            if stat.S_ISDIR(mode):
                if mode & 0o005 != 0o005:
                    found.append(entry.path)
                else:
                    pending.append(entry.path)
            elif not mode & 0o004:
                found.append(entry.path)
    return sorted(found)


def terminals() -> list[str]:
    """The terminal the command was given (its stdin, stdout or stderr), by its path."""
    found = []
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                name = os.ttyname(fd)
                if is_within(name, "/dev/pts") or is_within(name, "/dev"):
                    found.append(name)
        except OSError:
            continue
    return sorted(set(found))
