"""The stages of a run, in the one direction data flows:

spec -> effective policy -> snapshot -> launch plan -> running tree -> outcome.

Each stage is a function the command line and the Python API both call; only the last
one starts anything.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .errors import SandboxError
from .grants import Snapshot
from .netpolicy import Decide
from .run_types import Ended, FileOp
from .system import traits

if TYPE_CHECKING:
    from .commit_check import CommitCheck


def require_caches_here(snapshot: Snapshot) -> None:
    """macOS has no mounts: Seatbelt can allow or deny a path, never show another
    folder at it, so a private cache cannot be where the tool looks for it."""
    if snapshot.caches and not traits().shows_elsewhere:
        from .errors import LaunchError

        raise LaunchError(
            "files.caches needs a folder shown at another path, which macOS's sandbox "
            "cannot do", hint="grant a folder of your own with files.write and point the "
            "tool at it (npm_config_cache, PIP_CACHE_DIR), or remove files.caches")


def require_working_directory(snapshot: Snapshot) -> None:
    """SpecError when the sandbox would not see the working directory: the command is
    never started elsewhere without a word (grants.working_directory_problem)."""
    from .grants import working_directory_problem
    from .policy import system_folders

    problem = working_directory_problem(snapshot, system_folders())
    if problem is not None:
        raise problem
    require_reachable(snapshot)


def _may(path: str, mode: int) -> bool | None:
    """Whether the sandbox's user may `mode` (os.R_OK, W_OK, X_OK) the folder `path`;
    None when it is gone. Run by anyone else the sandbox is this user, and the kernel's
    own answer (access(2), which reads ACLs too) is its answer. Run by root it is uid 0
    without a capability, which access(2) cannot be asked about: root's answer is always
    yes. The mode bits answer instead, as the kernel answers uid 0 without
    CAP_DAC_OVERRIDE (an ACL naming root is the rare case they miss)."""
    if os.geteuid() != 0:
        return os.access(path, mode) if os.path.exists(path) else None
    try:
        info = os.stat(path)
    except OSError:
        return None
    shift = 6 if info.st_uid == 0 else 3 if info.st_gid in (os.getegid(),
                                                             *os.getgroups()) else 0
    return info.st_mode >> shift & mode == mode


def require_reachable(snapshot: Snapshot) -> None:
    """The working directory one the sandbox can enter, and each folder the spec writes
    one this user can write: else the launch would fail half-way, with the kernel's bare
    errno (bubblewrap's chdir, the placeholders made in a written folder)."""
    import errno

    from .errors import LaunchError, SpecError

    if _may(snapshot.cwd, os.X_OK) is False:
        mode = _mode_of(snapshot.cwd)
        who = f"uid {os.geteuid()}" + ("" if os.geteuid() else ", without capabilities")
        raise LaunchError(
            f"the working directory {snapshot.cwd} cannot be entered by the sandbox's user "
            f"({who}; the folder's mode is {mode:03o})",
            hint=f"chmod u+x {snapshot.cwd} if it is yours, or start lnk-sandbox in a "
            "folder you may enter", errno=errno.EACCES)
    if os.geteuid() == 0:
        return  # root makes the placeholders; inside, the mode bits decide, as for anyone
    for grant in snapshot.grants:
        if grant.access == "write" and grant.key and grant.target and grant.is_dir and \
                _may(grant.target, os.W_OK | os.X_OK) is False:
            mode = _mode_of(grant.target)
            raise SpecError(
                f"{grant.name!r} resolves to {grant.target}, which this user (uid "
                f"{os.geteuid()}) cannot write (mode {mode:03o}), so neither could the "
                "sandbox, and what runs as you there could not be held for the run",
                file=snapshot.source, key=grant.key, line=grant.line,
                hint="grant it in files.read instead, or make it yours to write")


def _mode_of(folder: str) -> int:
    """The permission bits of a folder just found closed to the sandbox's user; a folder
    moved or removed since (another program renaming it meanwhile) is said as the
    launch's other checks say it, never as a bare errno."""
    import stat

    from .errors import LaunchError

    try:
        return stat.S_IMODE(os.stat(folder).st_mode)
    except FileNotFoundError:
        raise LaunchError(f"{folder} no longer exists: it was moved or removed while "
                          "lnk-sandbox was starting",
                          hint="run the command again") from None


def require_report_out_of_reach(snapshot: Snapshot, report: str) -> None:
    """LaunchError (125) for a report the sandbox could write: one inside a folder (or a
    file) it writes, or a private cache's store. The report is what a harness reads to
    learn what was refused; a sandbox that reaches it could add a refusal that never
    happened, or take one out (a link there is refused when it is opened: host_files).
    The harness API's reports are in `$LNK_HOME`, which no sandbox sees, and pass here
    too (child.py)."""
    from .errors import LaunchError
    from .grants import is_within

    folder, name = os.path.split(os.path.abspath(report))
    path = os.path.join(os.path.realpath(folder), name)
    reached = [(g.target, f"{g.key or g.reason}: {g.name}") for g in snapshot.grants
               if g.access == "write" and g.target]
    reached += [(c.store, f"{c.key}: {c.name}") for c in snapshot.caches]
    for target, why in reached:
        if is_within(path, target):
            raise LaunchError(
                f"--report {report} is inside {target}, which the sandbox writes ({why}): "
                "it could add refusals that never happened to the report, or take some out",
                hint="name a file outside every folder the sandbox writes, as in --report "
                "~/refusals.jsonl")


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
    if report is not None:
        require_report_out_of_reach(snapshot, report)
    # The caller's timeout and the spec's [limits] timeout: whichever comes first.
    timeout = earliest(check_timeout(timeout), snapshot.run_limits().timeout or None)
    if decide is not None:
        check_decide(decide, snapshot)
    if snapshot.written():
        from .events import say
        from .home_places import relative_gaps

        for gap in relative_gaps(snapshot.home):
            say(gap)
    from .terminal import kept_terminal

    # The terminal's modes and the standard files' flags, put back whatever the sandbox
    # did to them, before what is said after the run (terminal.py).
    with kept_terminal():
        check = check_commits(snapshot)
        try:
            from .backends import backend

            return backend().launch(snapshot, argv, report=report, decide=decide,
                                    timeout=timeout, cwd=cwd, tmp=tmp, file_op=file_op)
        finally:
            if check is not None:
                check.finish()


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
    if snapshot.settings.network_mode != "proxy":
        raise SandboxError(
            f"--decide-fd decides on destinations the proxy is asked for, and the spec's "
            f"network mode is {snapshot.settings.network_mode!r}",
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
    from .backends import backend
    from .terminal import kept_terminal

    with kept_terminal():
        check = check_commits(snapshot)
        try:
            return backend().learn(snapshot, argv)
        finally:
            if check is not None:
                check.finish()


def preflight(snapshot: Snapshot) -> None:
    """Check now what a launch of `snapshot` would check (SandboxError if it could not),
    without starting anything: for a command saved to run later."""
    require_working_directory(snapshot)
    require_caches_here(snapshot)
    from .backends import backend

    backend().preflight(snapshot)
