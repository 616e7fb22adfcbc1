"""The stages of a run, in the one direction data flows:

spec -> effective policy -> snapshot -> launch plan -> running tree -> outcome.

Each stage is a function the command line and the Python API both call; only the last
one starts anything.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Literal, NamedTuple

from .errors import SandboxError
from .grants import Snapshot, resolve
from .netpolicy import Decide
from .policy import Context, effective_policy
from .spec import Spec, load_spec
from .state import private_folder

if TYPE_CHECKING:
    from .commit_check import CommitCheck


def interpreter() -> tuple[str, str]:
    """The real base interpreter (never a venv link or a shim) and its prefix."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base), os.path.realpath(sys.base_prefix)


def inner_source() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "inner")


def snapshot_for(spec_path: str | Spec | None, context: Context | None = None) -> Snapshot:
    """Load, validate and resolve a spec (a file's path, or one validated already): the
    snapshot a launch and a description use."""
    context = context or Context.current()
    spec = spec_path if isinstance(spec_path, Spec) else load_spec(spec_path)
    policy = effective_policy(spec, context)
    if spec.agent:
        private_folder(context.lnk_home, f"agents/{spec.agent}").close()
    if spec.session:
        private_folder(context.lnk_home, f"sessions/{spec.session}").close()
    snapshot = resolve(policy, context)
    for cache in snapshot.caches:  # made now, as an agent's folder is: they are bound
        private_folder(context.lnk_home,
                       os.path.relpath(cache.store, context.lnk_home)).close()
    return snapshot


def require_caches_here(snapshot: Snapshot) -> None:
    """macOS has no mounts: Seatbelt can allow or deny a path, never show another
    folder at it, so a private cache cannot be where the tool looks for it."""
    if snapshot.caches and sys.platform == "darwin":
        from .errors import LaunchError

        raise LaunchError(
            "files.caches needs a folder shown at another path, which macOS's sandbox "
            "cannot do", hint="grant a folder of your own with files.write and point the "
            "tool at it (npm_config_cache, PIP_CACHE_DIR), or remove files.caches")


def require_working_directory(snapshot: Snapshot) -> None:
    """SpecError when the sandbox would not see the working directory: the command is
    never started elsewhere without a word (grants.working_directory_problem)."""
    from .grants import working_directory_problem
    from .policy import LINUX_SYSTEM_FOLDERS, MACOS_SYSTEM_FOLDERS

    system = MACOS_SYSTEM_FOLDERS if sys.platform == "darwin" else LINUX_SYSTEM_FOLDERS
    problem = working_directory_problem(snapshot, system)
    if problem is not None:
        raise problem


class FileOp(NamedTuple):
    """One file read (to stdout) or written (from stdin) as the sandbox would, instead of
    a command: inner/fileop.py. `path` as the sandbox sees it (relative: to the working
    directory); `limit`, for a read, the most bytes it may hold (more: EFBIG)."""

    op: Literal["read", "write"]
    path: str
    limit: int | None = None


class Ended(NamedTuple):
    """How a run ended: its exit status (the design's), whether its timeout killed it,
    and, where the OS reports it (Linux), the errno the command itself could not be run
    with (an execve that failed inside; 126 or 127)."""

    status: int
    timed_out: bool = False
    exec_errno: int | None = None


def run_snapshot(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
                 decide: Decide | None = None, timeout: float | None = None) -> int:
    """Launch `argv` confined by `snapshot` and supervise it; the exit status.

    `report` names a file that gets every refusal as a JSON line; `decide` the run's
    decider for destinations no list names (proxy mode); `timeout` the seconds after
    which the whole tree is killed (status 124; deadline.py).
    """
    return launch_snapshot(snapshot, argv, report=report, decide=decide,
                           timeout=timeout).status


def launch_snapshot(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
                    decide: Decide | None = None, timeout: float | None = None,
                    cwd: str | None = None, tmp: str | None = None,
                    file_op: FileOp | None = None) -> Ended:
    """`run_snapshot`, saying more of how the run ended, for the Python API's child.

    `cwd`: the working directory inside (a folder the sandbox sees; the snapshot's own
    otherwise); `tmp`: a session's folder for the sandbox's /tmp (Linux; TMPDIR on
    macOS), kept between its runs (linux/placement.py); `file_op`: read or write one
    file in place of running `argv` (its errno is `exec_errno`).
    """
    from .deadline import check_timeout, earliest

    if cwd is None:  # a cwd given is placed, and refused if unseen, by placement.py
        require_working_directory(snapshot)
    require_caches_here(snapshot)
    if report is not None and not report:
        raise SandboxError("--report names no file",
                           hint="give it a path, as in --report /tmp/refusals.jsonl")
    # The caller's timeout and the spec's [limits] timeout: whichever comes first.
    timeout = earliest(check_timeout(timeout), snapshot.run_limits().timeout or None)
    if decide is not None:
        check_decide(decide, snapshot)
    if snapshot.written():
        from .home_places import relative_path_gap

        gap = relative_path_gap(os.environ.get("PATH", ""))
        if gap is not None:
            from .events import say

            say(gap)
    from .terminal import restore_flags, standard_flags

    flags = standard_flags()
    check = check_commits(snapshot)
    try:
        if sys.platform == "darwin":
            from .macos.run import run_macos

            if cwd is not None:
                os.chdir(cwd)  # sandbox-exec starts where its parent is
            if file_op is not None:
                argv = mac_file_op_argv(file_op)
            mac = run_macos(snapshot, argv, report=report, decide=decide, timeout=timeout,
                            tmp=tmp)
            # The file operation's command exits with its errno (inner/fileop.py).
            failed = file_op is not None and 0 < mac.status < 124
            return Ended(mac.status, mac.timed_out, mac.status if failed else None)
        from .linux.run import run_linux

        outcome = run_linux(snapshot, argv, report=report, decide=decide, timeout=timeout,
                            cwd=cwd, tmp=tmp, file_op=file_op)
        failure = outcome.exec_failure
        return Ended(outcome.status, outcome.timed_out,
                     failure.errno if failure is not None else None)
    finally:
        if check is not None:
            check.finish()
        restore_flags(flags)


def mac_file_op_argv(file_op: FileOp) -> list[str]:
    """macOS has no inner: the file operation runs as the command, inner/fileop.py's own
    source under this interpreter (which the profile must let run)."""
    with open(os.path.join(inner_source(), "fileop.py"), encoding="utf-8") as handle:
        source = handle.read()
    code = source + "\nimport sys\nsys.exit(standalone(sys.argv[1:]))\n"
    limit = "" if file_op.limit is None else str(file_op.limit)
    return [interpreter()[0], "-I", "-S", "-c", code, file_op.op, file_op.path, limit]


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
    require_working_directory(snapshot)
    require_caches_here(snapshot)
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
    require_working_directory(snapshot)
    require_caches_here(snapshot)
    if sys.platform == "darwin":
        from .macos.run import preflight_macos

        preflight_macos(snapshot)
        return
    from .linux.run import preflight_linux

    preflight_linux(snapshot)
