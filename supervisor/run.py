"""The stages of a run, in the one direction data flows:

spec -> effective policy -> snapshot -> launch plan -> running tree -> outcome.

Each stage is a function the command line and the Python API both call; only the last
one starts anything.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from .errors import SandboxError
from .grants import Snapshot, resolve
from .netpolicy import Decide
from .policy import Context, Policy, effective_policy
from .spec import Spec, load_spec
from .state import ensure_private_dir

if TYPE_CHECKING:
    from .commit_check import CommitCheck


def interpreter() -> tuple[str, str]:
    """The real base interpreter (never a venv link or a shim) and its prefix."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base), os.path.realpath(sys.base_prefix)


def inner_source() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "inner")


def policy_for(spec: Spec, context: Context | None = None) -> Policy:
    return effective_policy(spec, context or Context.current())


def snapshot_for(spec_path: str | None, context: Context | None = None) -> Snapshot:
    """Load, validate and resolve a spec: the snapshot a launch and a description use."""
    context = context or Context.current()
    spec = load_spec(spec_path)
    policy = effective_policy(spec, context)
    if spec.agent:
        ensure_private_dir(os.path.join(context.lnk_home, "agents", spec.agent))
    if spec.session:
        ensure_private_dir(os.path.join(context.lnk_home, "sessions", spec.session))
    return resolve(policy, context)


def run_snapshot(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
                 decide: Decide | None = None) -> int:
    """Launch `argv` confined by `snapshot` and supervise it; the exit status.

    `report` names a file that gets every refusal as a JSON line; `decide` the run's
    decider for destinations no list names (proxy mode).
    """
    if decide is not None:
        check_decide(decide, snapshot)
    from .terminal import restore_flags, standard_flags

    flags = standard_flags()
    check = check_commits(snapshot)
    try:
        if sys.platform == "darwin":
            from .macos.run import run_macos

            return run_macos(snapshot, argv, report=report, decide=decide)
        from .linux.run import run_linux

        return run_linux(snapshot, argv, report=report, decide=decide)
    finally:
        if check is not None:
            check.finish()
        restore_flags(flags)


def check_commits(snapshot: Snapshot) -> CommitCheck | None:
    """The record of the repositories files.commit opens, to check after the run what
    it left there (commit_check.py), and the checks of killed runs done first. The
    module is loaded only where there is something to check."""
    if not any(g.commit for g in snapshot.grants) and not os.path.isdir(
            os.path.join(snapshot.lnk_home, "commit-checks")):
        return None
    from .commit_check import begin

    return begin(snapshot)


def check_decide(decide: Decide, snapshot: Snapshot) -> None:
    """The decider's descriptor is open, kept from every process started from here on,
    and meaningful (proxy mode); SandboxError otherwise."""
    if snapshot.network_mode != "proxy":
        raise SandboxError(
            f"--decide-fd decides on destinations the proxy is asked for, and the spec's "
            f"network mode is {snapshot.network_mode!r}",
            hint='set [network] mode = "proxy", or leave out --decide-fd')
    if not decide.timeout > 0:
        raise SandboxError(f"--decide-timeout {decide.timeout:g}: must be more than 0 "
                           "seconds")
    try:
        os.fstat(decide.fd)
        os.set_inheritable(decide.fd, False)  # never bwrap's, the helper's or the sandbox's
    except OSError as err:
        raise SandboxError(f"--decide-fd {decide.fd}: {err.strerror}",
                           hint="pass a descriptor open in lnk-sandbox: one end of a "
                           "socket whose other end the harness holds") from None


def learn_snapshot(snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
    """Run once with every program open; the status and the `[commands]` lines to add."""
    if sys.platform == "darwin":
        from .macos.run import learn_macos

        return learn_macos(snapshot, argv)
    from .learn import render, summarize
    from .linux.run import launch_and_supervise
    from .linux.watch import Judge

    judge = Judge(None, record=True)
    check = check_commits(snapshot)
    try:
        outcome = launch_and_supervise(snapshot, argv, learn=True, judge=judge)
    finally:
        if check is not None:
            check.finish()
    if outcome.problem is not None:
        raise outcome.problem
    learned, left = summarize(judge.seen, snapshot)
    return outcome.status, render(learned, left, argv)


def preflight(snapshot: Snapshot) -> None:
    """Check now what a launch of `snapshot` would check (SandboxError if it could not),
    without starting anything: for a command saved to run later."""
    if sys.platform == "darwin":
        from .macos.run import preflight_macos

        preflight_macos(snapshot)
        return
    from .linux.run import preflight_linux

    preflight_linux(snapshot)
