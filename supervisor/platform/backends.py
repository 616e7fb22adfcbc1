"""The backend that serves each command on this OS: the one module of the shared hall
that imports `supervisor/linux/` or `supervisor/macos/` (tests/unit/test_layers.py).

Each backend is imported when a command first needs it, never at import time: the
command line's start pays only for the OS it runs on, and only for what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from . import System, is_macos

if TYPE_CHECKING:
    from ..check import Report
    from ..grants import Snapshot
    from ..netpolicy import Decide
    from ..run_types import Ended, FileOp


def launch(snapshot: Snapshot, argv: list[str], *, report: str | None, decide: Decide | None,
           timeout: float | None, cwd: str | None, tmp: str | None,
           file_op: FileOp | None) -> Ended:
    """Launch and supervise one run (run.launch_snapshot has checked it)."""
    if is_macos():
        from ..macos.backend import launch_macos

        return launch_macos(snapshot, argv, report=report, decide=decide, timeout=timeout,
                            cwd=cwd, tmp=tmp, file_op=file_op)
    from ..linux.backend import launch_linux

    return launch_linux(snapshot, argv, report=report, decide=decide, timeout=timeout,
                        cwd=cwd, tmp=tmp, file_op=file_op)


def learn(snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
    """Run once with every program open; the status and the `[commands]` lines."""
    if is_macos():
        from ..macos.backend import learn_macos

        return learn_macos(snapshot, argv)
    from ..linux.backend import learn_linux

    return learn_linux(snapshot, argv)


def preflight(snapshot: Snapshot) -> None:
    """What a launch would check, without starting anything."""
    if is_macos():
        from ..macos.backend import preflight_macos

        preflight_macos(snapshot)
        return
    from ..linux.backend import preflight_linux

    preflight_linux(snapshot)


def without_namespaces(snapshot: Snapshot) -> list[str] | None:
    """What holds of `snapshot` where this OS's sandbox would run without namespaces
    (Linux, where none can be made: linux/direct.py); None where it has them (and on
    macOS, which has no namespaces to lose)."""
    if is_macos():
        return None
    from ..linux.direct import describe_lines

    return describe_lines(snapshot)


def check(spec_path: str | None) -> Report:
    """Probe this machine and judge the spec against it. On a Mac the Mac is asked: no
    Linux interface is touched there."""
    if is_macos():
        from ..macos.check import check_macos

        return check_macos(spec_path)
    from ..linux.check_direct import check_here

    return check_here(spec_path)


def render_check(report: Report) -> str:
    """The report as a person reads it, in the words of the OS that made it."""
    from ..linux.check import Machine, render_linux

    if isinstance(report.machine, Machine):
        return render_linux(report)
    from ..macos.check import render_macos

    return render_macos(report)


def print_plan(target_os: System, snapshot: Snapshot, command: list[str], out: TextIO
               ) -> int:
    """Either OS's plan, on any OS: what `plan --os` prints (pure compilers both)."""
    if target_os == "macos":
        from ..macos.backend import print_plan as print_macos

        return print_macos(snapshot, command, out)
    from ..linux.backend import print_plan as print_linux

    return print_linux(snapshot, command, out)
