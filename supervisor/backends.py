"""The backend that serves each command: one object per OS (launch, learn, preflight,
check, plan), chosen once from `system.SYSTEM`, in place of an `if macOS` in each
command. The one module of the shared hall that imports `supervisor/linux/` or
`supervisor/macos/` (tests/unit/test_layers.py); only the doors (the command line, the
API's child, run.py) import it, so no arrow runs from a lower module up to it.

Each backend imports its OS's modules when a command first needs them, never at import
time: the command line's start pays only for the OS it runs on, and only for what it
runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TextIO

from .system import SYSTEM, System

if TYPE_CHECKING:
    from .check import Report
    from .grants import Snapshot
    from .netpolicy import Decide
    from .run_types import Ended, FileOp


class Backend(Protocol):
    """What a command asks of the OS it runs on."""

    name: System

    def launch(self, snapshot: Snapshot, argv: list[str], *, report: str | None,
               decide: Decide | None, timeout: float | None, cwd: str | None,
               tmp: str | None, file_op: FileOp | None) -> Ended:
        """Launch and supervise one run (run.launch_snapshot has checked it)."""

    def learn(self, snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
        """Run once with every program open; the status and the `[commands]` lines."""

    def preflight(self, snapshot: Snapshot) -> None:
        """What a launch would check, without starting anything."""

    def check(self, spec_path: str | None) -> Report:
        """Probe this machine and judge the spec against it."""

    def render_check(self, report: Report) -> str:
        """The report as a person reads it, in the words of the OS that made it."""

    def print_plan(self, snapshot: Snapshot, command: list[str], out: TextIO) -> int:
        """The plan (mounts, or a profile) this OS would run `command` with: a pure
        compiler, so either OS's prints on any OS (`plan --os`)."""

    def without_namespaces(self, snapshot: Snapshot) -> list[str] | None:
        """What holds of `snapshot` where this OS's sandbox runs without namespaces
        (what refuses the launch, what is narrower, what does not hold); None where it
        has them."""


class _Linux:
    name: System = "linux"

    def launch(self, snapshot: Snapshot, argv: list[str], *, report: str | None,
               decide: Decide | None, timeout: float | None, cwd: str | None,
               tmp: str | None, file_op: FileOp | None) -> Ended:
        from .linux.backend import launch_linux

        return launch_linux(snapshot, argv, report=report, decide=decide, timeout=timeout,
                            cwd=cwd, tmp=tmp, file_op=file_op)

    def learn(self, snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
        from .linux.backend import learn_linux

        return learn_linux(snapshot, argv)

    def preflight(self, snapshot: Snapshot) -> None:
        from .linux.backend import preflight_linux

        preflight_linux(snapshot)

    def check(self, spec_path: str | None) -> Report:
        """With bwrap, or as a run without namespaces would hold the spec here."""
        from .linux.check_direct import check_here

        return check_here(spec_path)

    def render_check(self, report: Report) -> str:
        from .linux.check import render_linux

        return render_linux(report)

    def print_plan(self, snapshot: Snapshot, command: list[str], out: TextIO) -> int:
        from .linux.backend import print_plan

        return print_plan(snapshot, command, out)

    def without_namespaces(self, snapshot: Snapshot) -> list[str] | None:
        """Where no user namespace can be made (or LNK_NAMESPACES=off): linux/direct.py."""
        from .linux.direct import describe_lines

        return describe_lines(snapshot)


class _Mac:
    name: System = "macos"

    def launch(self, snapshot: Snapshot, argv: list[str], *, report: str | None,
               decide: Decide | None, timeout: float | None, cwd: str | None,
               tmp: str | None, file_op: FileOp | None) -> Ended:
        from .macos.backend import launch_macos

        return launch_macos(snapshot, argv, report=report, decide=decide, timeout=timeout,
                            cwd=cwd, tmp=tmp, file_op=file_op)

    def learn(self, snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
        from .macos.backend import learn_macos

        return learn_macos(snapshot, argv)

    def preflight(self, snapshot: Snapshot) -> None:
        from .macos.backend import preflight_macos

        preflight_macos(snapshot)

    def check(self, spec_path: str | None) -> Report:
        """On a Mac the Mac is asked: no Linux interface is touched there."""
        from .macos.check import check_macos

        return check_macos(spec_path)

    def render_check(self, report: Report) -> str:
        from .macos.check import render_macos

        return render_macos(report)

    def print_plan(self, snapshot: Snapshot, command: list[str], out: TextIO) -> int:
        from .macos.backend import print_plan

        return print_plan(snapshot, command, out)

    def without_namespaces(self, snapshot: Snapshot) -> list[str] | None:
        """A Mac has no namespaces to lose."""
        return None


BACKENDS: dict[System, Backend] = {"linux": _Linux(), "macos": _Mac()}


def backend(system: System | None = None) -> Backend:
    """This OS's backend (read at each call: a test's flip of `SYSTEM` holds), or the
    one of `system`."""
    from . import system as chosen

    return BACKENDS[system or chosen.SYSTEM]


def render_check(report: Report) -> str:
    """A report in the words of the OS whose machine it describes (a Mac's facts are
    another type than Linux's)."""
    from .linux.check import Machine

    return backend("linux" if isinstance(report.machine, Machine) else "macos"
                   ).render_check(report)


__all__ = ["BACKENDS", "SYSTEM", "Backend", "backend", "render_check"]
