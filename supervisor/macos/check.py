"""`lnk sandbox check` on a Mac: what this Mac enforces for a spec, asked of the Mac.

Nothing here touches a Linux interface (no bubblewrap, no seccomp or Landlock probe, no
Linux system-call number through libc). It asks, each time (a person asking wants
today's answer):
- whether this process is sandboxed already (sandbox_check): sandboxes do not nest;
- whether /usr/bin/sandbox-exec is there and accepts this spec's own profile, applied
  for real on /usr/bin/true (the readiness probe of a launch, probe.py);
- whether `log stream` runs for this account (macOS runs it for the admin group only),
  which naming refused programs and `learn` need.
Each failure comes with its fix. The report is the same plain data as on Linux.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import SandboxError
from ..grants import Snapshot
from .host import sandboxed
from .logparse import READY_PREFIX
from .logwatch import LOG, why_log_failed
from .probe import run_probe
from .profile import SANDBOX_EXEC
from .programs import Toolchain

if TYPE_CHECKING:
    from ..check import Report

GAP_GROUP = (
    "a process that leaves the command's process group (setsid), or outlives a "
    "lnk-sandbox killed with SIGKILL, is not ended: macOS has no parent-death signal"
)
GAP_DYLD = (
    "a program can set DYLD_INSERT_LIBRARIES again for a child that is not a platform "
    "binary: it is cleared only when the sandbox starts"
)
GAP_PROCESSES = (
    "every process's name and pid can be listed (ps, pgrep); not its arguments, "
    "environment, path, working folder or open files"
)
GAP_INTERFACES = "the Mac's network interfaces and their addresses can be listed"
GAP_HARD_LINKS = (
    "a hard link made before the run, to a file in a hidden folder, reads that file "
    "through the link: Seatbelt matches paths, not files (the sandbox cannot make one)"
)
GAP_TERMINAL = "TIOCSTI on the command's own terminal is not closed"
GAP_NAMING = (
    "naming refused programs is advice read from the system log: another sandbox's "
    "refusal at the same moment may be named too; Seatbelt alone decides"
)
GAP_UNVERIFIED = (
    "not yet run on a real Mac: tools/macos_probe.py checks each of these rules there "
    "(the README's macOS section says how)"
)


@dataclass
class MacMachine:
    """What this Mac offers; each value asked of it."""

    os: str
    version: str
    sandbox_exec: str | None = None
    profile_accepted: bool | None = None  # None: not tried
    sandboxed: bool = False
    log_stream: str = "not asked"


@dataclass(frozen=True)
class MacTools:
    """Where the programs asked are; other values are for tests alone."""

    sandbox_exec: str = SANDBOX_EXEC
    log: str = LOG
    toolchain: Toolchain = field(default_factory=Toolchain)
    nested: Callable[[], bool] = sandboxed
    log_wait: float = 5.0


DEFAULT_TOOLS = MacTools()


def ask_log(log: str, wait: float) -> tuple[bool, str]:
    """Whether `log stream` runs for this account: (allowed, what it said). It is
    started, and ended as soon as it says it is filtering, or has ended itself."""
    import subprocess

    try:
        stream = subprocess.Popen(
            [log, "stream", "--style", "ndjson", "--predicate",
             'processID == 0 AND eventMessage == "lnk-sandbox check"'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
    except OSError as err:
        return False, f"cannot start {log}: {err.strerror}"
    assert stream.stdout is not None and stream.stderr is not None
    said = b""
    deadline = time.monotonic() + wait
    try:
        for pipe in (stream.stdout, stream.stderr):
            os.set_blocking(pipe.fileno(), False)
        while time.monotonic() < deadline:
            for pipe in (stream.stdout, stream.stderr):
                try:
                    said += pipe.read() or b""
                except BlockingIOError:
                    pass
            if READY_PREFIX.encode() in said:
                return True, "allowed for this account"
            if stream.poll() is not None:
                for pipe in (stream.stdout, stream.stderr):
                    said += pipe.read() or b""
                what, _ = why_log_failed(stream.returncode, said.decode("utf-8", "replace"),
                                         log)
                return False, what
            time.sleep(0.02)
        return False, f"`{log} stream` said nothing within {wait:g} s"
    finally:
        if stream.poll() is None:
            stream.kill()
        stream.wait()
        stream.stdout.close()
        stream.stderr.close()


def check_macos(spec_path: str | None, *, tools: MacTools | None = None) -> Report:
    """Ask this Mac, and judge the spec's effective policy against it."""
    from ..check import GAP_SOCKETS, Problem, Report, home_lines
    from ..policy import Context
    from ..stages import snapshot_for
    from .backend import NESTED, prepare

    tools = tools or DEFAULT_TOOLS
    version = platform.mac_ver()[0] or platform.release()
    machine = MacMachine(os="macOS", version=f"{version} {platform.machine()}")
    report = Report(machine, spec_path or "<default spec>", can_launch=True)
    try:
        snapshot = snapshot_for(spec_path, Context.current())
    except SandboxError as err:
        report.problems.append(Problem.of(err))
        report.can_launch = False
        return report
    machine.sandboxed = tools.nested()
    if machine.sandboxed:
        report.problems.append(Problem.of(NESTED))
    if os.access(tools.sandbox_exec, os.X_OK):
        machine.sandbox_exec = tools.sandbox_exec
        temp = os.path.realpath(tempfile.mkdtemp(prefix="lnk-sandbox-check-"))
        try:
            prepared = prepare(snapshot, temp=temp, toolchain=tools.toolchain)
            result = run_probe(tools.sandbox_exec, prepared.profile, prepared.env)
        except SandboxError as err:
            report.problems.append(Problem.of(err))
        else:
            machine.profile_accepted = result.ok
            if not result.ok:
                report.problems.append(Problem.of(result.problem(tools.sandbox_exec)))
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    else:
        report.problems.append(Problem(
            f"{tools.sandbox_exec} is missing: it ships with every macOS, so this is not "
            "a Mac, or its system is damaged", hint="run lnk-sandbox on macOS 13 or newer"))
    allowed, machine.log_stream = ask_log(tools.log, tools.log_wait)
    report.layers += _layers(snapshot, allowed)
    report.home = home_lines(snapshot)
    if not allowed:
        _, fix = why_log_failed(77 if "admin group" in machine.log_stream else None,
                                machine.log_stream, tools.log)
        report.gaps.append(f"{machine.log_stream}: refused programs go unnamed and learn "
                           f"cannot run (fix: {fix})")
    report.gaps += [GAP_GROUP, GAP_DYLD, GAP_PROCESSES, GAP_INTERFACES, GAP_HARD_LINKS,
                    GAP_TERMINAL, GAP_NAMING, GAP_UNVERIFIED]
    if snapshot.written():
        from ..home_places import relative_gaps

        report.gaps += relative_gaps()
    assert GAP_SOCKETS not in report.gaps  # a read grant reaches no socket on macOS
    report.can_launch = not report.problems
    return report


def _layers(snapshot: Snapshot, log_allowed: bool) -> list[str]:
    layers = [
        "Seatbelt (sandbox-exec): deny by default; only the granted folders and the system "
        "folders are seen; hidden folders and dot files closed in any letter case",
        "the Keychain closed (no securityd or secd lookup, ~/Library/Keychains unread); "
        "POSIX shared memory closed; semaphores only the sandbox's own",
        "sockets reached only in write grants; other processes' details, NVRAM and the "
        "IORegistry closed",
    ]
    if snapshot.settings.network_mode == "host":
        layers.append("network: the host's")
    elif snapshot.settings.network_mode == "proxy":
        layers.append("network: proxy mode has no proxy on macOS yet, so none at all")
    else:
        layers.append("network: none at all (no loopback of the sandbox's own)")
    if snapshot.programs is None:
        layers.append("programs: any program the sandbox sees")
    else:
        names = ", ".join(p.name for p in snapshot.programs) or "none"
        layers.append(f"programs: only {names} (and what stubs among them run), by "
                      "Seatbelt's check of each file executed")
        if log_allowed:
            layers.append("refused programs named from Seatbelt's reports (log stream)")
    layers.append(
        "nested sandboxes: Seatbelt sandboxes do not nest, so Chromium's, Electron's and "
        "Playwright's own sandbox of each renderer fails inside; run them with "
        "--no-sandbox (Electron: ELECTRON_DISABLE_SANDBOX=1), safe only because "
        "lnk-sandbox is then the sandbox: a page that takes over a renderer gets what the "
        "browser has, this spec's grants and its own profile, and no more")
    return layers


def render_macos(report: Report) -> str:
    from ..check import spec_lines

    m = report.machine
    assert isinstance(m, MacMachine)
    yes = {True: "yes", False: "no", None: "not tried"}
    lines = [
        f"machine: {m.os} {m.version}",
        f"  sandbox-exec        {m.sandbox_exec or 'missing'}"
        + (f", accepts this spec's profile: {yes[m.profile_accepted]}"
           if m.sandbox_exec else ""),
        f"  already sandboxed   {yes[m.sandboxed]}",
        f"  log stream          {m.log_stream}",
        *spec_lines(report),
    ]
    from ..terminal import shown_lines

    return shown_lines(lines)
