"""A run on Linux: the plan for this machine, the launch, the supervision."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack, closing
from typing import TYPE_CHECKING, NamedTuple, TextIO

from ..capabilities import CheckCache
from ..deadline import TIMEOUT_STATUS, timed_out_message
from ..errors import SandboxError
from ..events import EventLog, say
from ..grants import Snapshot
from ..host_files import open_report
from ..netpolicy import UNIX_SOCKETS_ABI, Decide, needs_helper, unix_sockets_gap
from ..run_types import Ended, FileOp
from ..view import view_for
from .capabilities import bwrap_info, without_namespaces
from .cgroups import RunCgroups
from .confine import Layers, inner_config
from .gitrun import GitRun
from .inner_program import choose
from .keeper import Keeper
from .launch import spawn
from .mount_watch import watched_mounts
from .placeholders import Placeholders
from .plan import SYSTEM_FOLDERS, LaunchPlan
from .prepare import (
    KeptRun,
    RunMounts,
    WatchFactory,
    decide_layers,
    plan_for,
    program_loaders,
    refuse_unheld_limits,
    sandbox_environment,
    say_limits_hit,
)
from .runs import RunList, tag, this_token
from .supervise import Outcome, supervise

if TYPE_CHECKING:
    from inner.config import Config

    from ..proxy.runfolder import RunFolder
    from .bwrap import BwrapInfo
    from .network import NetworkRun
    from .socket_relay import SocketRelay
    from .watch import ExecWatch, Judge


def preflight_linux(snapshot: Snapshot) -> None:
    """Everything a launch checks before starting bwrap, without starting it."""
    cache = CheckCache(snapshot.lnk_home)
    if without_namespaces(cache):
        from .direct import preflight_direct

        preflight_direct(snapshot, cache)
        return
    bwrap_info(cache)
    layers = decide_layers(snapshot, cache)
    plan = plan_for(snapshot)
    inner_config(plan, snapshot, layers, program_loaders(snapshot))


class _Prepared(NamedTuple):
    """A run made ready to spawn: what bwrap is given, and how the run is watched."""

    plan: LaunchPlan
    config: Config
    env: dict[str, str]
    layers: Layers
    info: BwrapInfo
    watch_factory: Callable[[int], ExecWatch] | None
    network: NetworkRun | None


def _prepare(stack: ExitStack, snapshot: Snapshot, *, report: str | None, learn: bool,
             judge: Judge | None, decide: Decide | None, cwd: str | None, tmp: str | None,
             file_op: FileOp | None) -> _Prepared:
    """Everything of a run before bwrap: each resource it makes entered on `stack`, in
    the order below, so that they go in the reverse order on every way out."""
    cache = CheckCache(snapshot.lnk_home)
    info = bwrap_info(cache)
    if learn:
        snapshot = snapshot._replace(programs=None)
    layers = decide_layers(snapshot, cache, learn=learn)
    events = stack.enter_context(closing(EventLog(open_report(report) if report else None)))
    if snapshot.network.unix is not None and layers.landlock_abi < UNIX_SOCKETS_ABI:
        say(unix_sockets_gap(layers.landlock_abi))
    # The run's folder (proxy mode: the plan binds its resolv.conf) and exposed ports
    # exist before the plan is built, the helper's job after bwrap has started.
    network = None
    if needs_helper(snapshot.settings.network_mode, snapshot.network):  # loaded only when used
        from .network import NetworkRun

        network = stack.enter_context(closing(NetworkRun.open(snapshot, events, decide)))
    # git's files (identity, excludes, trace) and the named sockets' relays are made
    # before the plan, which binds them (Landlock's rules are made from it).
    view = view_for(snapshot, SYSTEM_FOLDERS)
    git = GitRun.prepare(view)
    if git is not None:
        stack.callback(git.finish)
    relay = _relay_named_sockets(snapshot)
    if relay is not None:
        stack.enter_context(closing(relay[1]))  # the relay's folder goes after the relay
        stack.enter_context(closing(relay[0]))
    plan = plan_for(snapshot, RunMounts(
        resolv_conf=network.resolv_conf() if network is not None else None,
        relays=relay[0].relays() if relay is not None else {},
        git=git.ops if git is not None else (), cwd=cwd, tmp=tmp), view=view,
        inner=choose(file_op=file_op is not None))  # a file operation: Python's
    loaders = program_loaders(snapshot)
    config = inner_config(plan, snapshot, layers, loaders)
    if file_op is not None:
        from inner.config import FileOp as InnerFileOp

        config = config.replace(file=InnerFileOp(file_op.op, file_op.path, file_op.limit))
    for note in plan.notes:  # what the plan could not do, said as macOS says its own
        say(note)
    env = sandbox_environment(snapshot)
    env.update(git.env if git is not None else {})
    factory = WatchFactory(snapshot, loaders, layers, events, judge, learn=learn)
    return _Prepared(plan, config, env, layers, info,
                     factory if layers.listener else None, network)


def launch_and_supervise(
    snapshot: Snapshot,
    argv: list[str],
    *,
    report: str | None = None,
    learn: bool = False,
    judge: Judge | None = None,
    decide: Decide | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
    tmp: str | None = None,
    file_op: FileOp | None = None,
) -> Outcome:
    """Launch and supervise one run. `learn` opens every program and records in `judge`;
    `timeout` kills the tree when up (deadline.py); `cwd` and `tmp` place the command
    inside (placement.py); `file_op` has the inner read or write a file instead of
    running `argv` (inner/fileop.py).

    Each resource of the run is entered on one stack, in this order, and so released in
    the reverse one on every way out: the keeper's side (last out: told the run ended,
    or left to end it), the run's listing, its cgroups (whose thread starts the keeper,
    joined on the way out), then what `_prepare` makes (the report, the network, git's
    files, the sockets' relay), then the placeholders (first out, once bwrap ended).

    Where no user namespace can be made, there is no bwrap: the run without namespaces
    (direct.py, on a stack of its own in the same order; nonamespace.py says what holds
    there, and refuses what cannot)."""
    if without_namespaces(CheckCache(snapshot.lnk_home)):
        from .direct import launch_direct

        return launch_direct(snapshot, argv, report=report, learn=learn, judge=judge,
                             decide=decide, timeout=timeout, cwd=cwd, tmp=tmp,
                             file_op=file_op)
    with ExitStack() as stack:
        # Listed, kept, and given cgroups of its own, before anything of the run exists:
        # whenever this process is killed from here on, its keeper ends what the run left
        # at once (keeper.py), and the next start what the keeper could not (runs.py). The
        # keeper starts in the cgroups' thread, before it moves this process: it is never
        # in them. $LNK_HOME is made by then, before the plan, which hides it (and holds
        # the folders above it, when it is inside a folder the sandbox writes).
        token = this_token()
        kept = stack.enter_context(KeptRun(Keeper(token)))
        stack.enter_context(closing(RunList(snapshot.lnk_home, token)))
        cgroups = RunCgroups.entering(token, snapshot.run_limits(), first=kept.keeper.start)
        kept.cgroups = cgroups
        stack.callback(cgroups.end)
        run = _prepare(stack, snapshot, report=report, learn=learn, judge=judge,
                       decide=decide, cwd=cwd, tmp=tmp, file_op=file_op)
        # Missing dot files are made before the sources are pinned, and released on every
        # way out, after bwrap has ended; a supervisor killed meanwhile leaves them to the
        # next start, which prunes runs no longer alive.
        stack.callback(Placeholders(snapshot.lnk_home).hold(list(run.plan.holds)).release)
        return _spawn_and_supervise(run, kept, cgroups, snapshot, argv, timeout=timeout)
    raise AssertionError("unreachable")  # ExitStack swallows nothing here


def _spawn_and_supervise(run: _Prepared, kept: KeptRun, cgroups: RunCgroups,
                         snapshot: Snapshot, argv: list[str], *,
                         timeout: float | None) -> Outcome:
    """Spawn bwrap in the run's cgroups and supervise it to its end."""
    cgroups.entered()
    _keep(kept.keeper, cgroups)
    refuse_unheld_limits(snapshot, cgroups)
    kept.clean = False
    launched = spawn(run.plan, run.info, argv=argv, env=run.env, inner_config=run.config,
                     mark=tuple(tag(kept.keeper.token)), cgroups=cgroups)
    outcome = supervise(launched, watch_factory=run.watch_factory, timeout=timeout,
                        mounts=watched_mounts(run.plan),
                        served=(run.network.served(),) if run.network is not None else ())
    # A run this process killed (a timeout, a failure, a second SIGTERM) may have been
    # killed in bwrap's first milliseconds, as a killed supervisor's is: its keeper
    # looks too (status 137 is also a command killed by the kernel).
    kept.clean = outcome.status not in (TIMEOUT_STATUS, 125, 128 + 9)
    if outcome.setup_failed:
        outcome = _explain_setup_failure(outcome, run.info, run.plan)
    say_limits_hit(snapshot, cgroups, outcome.status)
    return outcome


def _explain_setup_failure(outcome: Outcome, info: BwrapInfo, plan: LaunchPlan) -> Outcome:
    """bwrap failed before the sandbox existed, its words on the person's terminal: if a
    trial of it with the same namespaces and uid fails on its user namespace (Ubuntu's
    AppArmor restriction above all, where unshare succeeds and every check passed), say
    that and the remedies instead of "its own message is above" alone."""
    from .userns import diagnose

    problem = diagnose(info.path, root_mode=plan.root_mode, share_net=plan.share_net)
    return outcome if problem is None else outcome._replace(problem=problem)


def _keep(keeper: Keeper, cgroups: RunCgroups) -> None:
    """Give the keeper the run's cgroups to kill, or say it could not start: then a
    lnk-sandbox killed early leaves its run to the next start (runs.py)."""
    if keeper.failure is not None:
        say(f"could not start the run's keeper ({keeper.failure.strerror}): if lnk-sandbox "
            "is killed, what its sandbox leaves is ended at the next start")
        return
    keeper.kill_also(cgroups.killable)


def _relay_named_sockets(snapshot: Snapshot) -> tuple[SocketRelay, RunFolder] | None:
    """Run by root, the sockets [network] unix names, relayed as root (socket_relay)."""
    if os.geteuid() != 0:
        return None
    targets = [s.target for s in snapshot.network.sockets() if s.target is not None
               and os.path.lexists(s.target)]
    if not targets:
        return None
    from ..proxy.runfolder import RunFolder
    from .socket_relay import SocketRelay

    folder = RunFolder.open(snapshot.lnk_home)
    try:
        return SocketRelay(folder.folder, targets), folder
    except BaseException:
        folder.close()
        raise


def run_linux(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
              decide: Decide | None = None, timeout: float | None = None,
              cwd: str | None = None, tmp: str | None = None,
              file_op: FileOp | None = None) -> Outcome:
    """One run, said as a person reads it; its Outcome (SandboxError for lnk-sandbox's
    own failures)."""
    outcome = launch_and_supervise(snapshot, argv, report=report, decide=decide,
                                   timeout=timeout, cwd=cwd, tmp=tmp, file_op=file_op)
    if outcome.problem is not None:
        raise outcome.problem
    if outcome.timed_out and timeout is not None:
        say(timed_out_message(timeout))
    if outcome.exec_failure is not None and file_op is None:  # the caller says a file's
        failure = outcome.exec_failure
        reason = os.strerror(failure.errno) if failure.errno else "failed"
        if failure.interpreter is not None:
            reason = (f"its interpreter {failure.interpreter} (its #! line) is not found in "
                      "the sandbox")
        elif failure.status == 127:
            reason = "not found in the sandbox"
        say(f"cannot run {failure.program}: {reason}")
    return outcome


def launch_linux(snapshot: Snapshot, argv: list[str], *, report: str | None,
                 decide: Decide | None, timeout: float | None, cwd: str | None,
                 tmp: str | None, file_op: FileOp | None) -> Ended:
    """One run, said as the hall's launch says it (run.launch_snapshot)."""
    outcome = run_linux(snapshot, argv, report=report, decide=decide, timeout=timeout,
                        cwd=cwd, tmp=tmp, file_op=file_op)
    failure = outcome.exec_failure
    return Ended(outcome.status, outcome.timed_out,
                 failure.errno if failure is not None else None)


def learn_linux(snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
    """Run once with every program open and the watch recording; the status and the
    `[commands]` lines for what ran."""
    from ..learn import render, summarize
    from .watch import Judge

    judge = Judge(None, record=True)
    outcome = launch_and_supervise(snapshot, argv, learn=True, judge=judge)
    if outcome.problem is not None:
        raise outcome.problem
    learned, left = summarize(judge.seen, snapshot)
    return outcome.status, render(learned, left, argv)


def print_plan(snapshot: Snapshot, command: list[str], out: TextIO) -> int:
    """`lnk sandbox plan`: the mount plan and bwrap's arguments, every source as the
    path it is pinned from at launch. A path may be a name a run chose (a repository
    made in a written folder, a socket): each field is written `shown` (or as a shell
    word), so no name starts a line of its own or reaches the terminal raw."""
    from ..terminal import shell_line, shown
    from .bwrap import BwrapInfo, bwrap_args

    plan = plan_for(snapshot)
    out.write(f"# spec: {shown(snapshot.source)}\n# mounts, in order:\n")
    for op in plan.ops:
        source = f" <- {shown(op.source)}" if op.source and op.source != op.dest else ""
        out.write(f"{op.kind:<10} {shown(op.dest)}{source}    # {shown(op.reason)}\n")
    info = BwrapInfo("bwrap", "?", True, True)
    args = bwrap_args(plan, info, fd_of=lambda op: f"FD<{op.source}>", json_status_fd="FD",
                      config_fd="FD")
    out.write("# bwrap's arguments (FD<path>: that path, opened without following links):\n")
    out.write(shell_line(args) + "\n")
    out.write(f"# command: {shell_line(command)}\n")
    out.writelines(f"# note: {shown(note)}\n" for note in plan.notes)
    return 0


__all__ = ["SandboxError", "launch_and_supervise", "launch_linux", "learn_linux", "plan_for",
           "print_plan", "run_linux"]
