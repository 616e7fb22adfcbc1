"""`lnk sandbox check` where the sandbox runs without namespaces (direct.py): what holds
of the spec there, what is narrower, what refuses the launch (nonamespace.py judges)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..check import (
    GAP_LOADER,
    GAP_PRELOAD,
    GAP_SHARED_COUNTS,
    Problem,
    Report,
    exposed_credentials,
)
from ..errors import SandboxError
from ..nonamespace import SCOPES_ABI, UNIX_SOCKETS_ABI, Facts, judge
from ..spec import key_line

if TYPE_CHECKING:
    from ..policy import Context
    from .check import Machine

GAP_DISK_DIRECT = (
    "a write grant's file system, and the one holding the run's TMPDIR folder, can be "
    "filled (no quota is set, and without namespaces there is no tmpfs of the run's own)")


def check_here(spec_path: str | None) -> Report:
    """`lnk sandbox check` on Linux: the machine probed, and the spec judged as a run
    here would hold it, with bwrap or without namespaces."""
    from ..policy import Context
    from .check import judge_linux, probe_machine

    context = Context.current()
    machine = probe_machine(context.lnk_home)
    if machine.namespaces == "namespaces":
        return judge_linux(machine, spec_path, context)
    return check_direct(machine, Report(machine, spec_path or "<default spec>",
                                        can_launch=True), spec_path, context)


def check_direct(machine: Machine, report: Report, spec_path: str | None,
                 context: Context) -> Report:
    """Judge the spec's effective policy as a run without namespaces would hold it."""
    from ..grants import working_directory_problem
    from ..stages import snapshot_for
    from .cgroups import RunCgroups
    from .check import limit_layers, memory_files, watch_layer
    from .runs import this_token

    why = ("LNK_NAMESPACES=off asks for it" if machine.namespaces == "off" else
           "no user namespace can be made here")
    report.layers.append(
        f"no namespaces ({why}): no bwrap; the inner confiner is started by lnk-sandbox "
        "and confines itself: no_new_privs, every capability dropped (the bounding set "
        "emptied, securebits locked), the seccomp filter, Landlock, rlimits")
    try:
        snapshot = snapshot_for(spec_path, context)
    except SandboxError as err:
        report.problems.append(Problem.of(err))
        report.can_launch = False
        return report
    cwd_problem = working_directory_problem(snapshot, context.system_folders)
    if cwd_problem is not None:
        report.problems.append(Problem.of(cwd_problem))
    probe = RunCgroups.open(this_token(), snapshot.run_limits())
    pids = probe.held.pids
    probe.end()
    abi = machine.landlock_abi
    listener = bool(getattr(machine, "seccomp_listener", False)
                    and not getattr(machine, "listener_taken", False))
    judgement = judge(snapshot, Facts(abi, os.geteuid() == 0, pids, listener))
    report.problems += [Problem(f"{r.what} (this sandbox runs without namespaces)",
                                file=snapshot.source, key=r.key, hint=r.hint,
                                line=key_line(snapshot.source, r.key))
                        for r in judgement.refused]
    report.layers.append(
        "seccomp filter: the calls a sandboxed program does not need are refused with "
        "an errno; TIOCSTI and fexecve closed; and without namespaces: no System V IPC "
        "or POSIX message queue, no other process's limits or scheduling, no extended "
        "attribute set; a file's mode, owner, times and inotify watches "
        + ("done by the supervisor on the files the grants write (or read, for a watch)"
           if listener else "refused (no seccomp listener here)"))
    if abi:
        report.layers.append(
            f"Landlock ABI {abi}: the file grants, on the host's own paths (a folder "
            "holding a narrower path is given its entries one by one)"
            + ("; abstract sockets and signals scoped" if abi >= SCOPES_ABI else ""))
    if snapshot.programs is None:
        report.layers.append("programs: any program may run; memory files are made as asked")
    elif abi:
        names = ", ".join(p.name for p in snapshot.programs) or "none"
        report.layers.append(f"programs: only {names} (and their loaders), by Landlock")
        report.layers.append(watch_layer(machine))
        report.layers.append(memory_files(machine))
    report.layers += limit_layers(snapshot, report.problems, direct=True)
    report.layers += _network(snapshot.settings.network_mode, abi)
    report.layers += [f"narrower: {line}" for line in judgement.narrower]
    report.exposed = exposed_credentials(snapshot)
    report.gaps += [GAP_LOADER, GAP_PRELOAD, GAP_DISK_DIRECT, GAP_SHARED_COUNTS]
    report.gaps += [f"without namespaces: {line}" for line in judgement.lost]
    if snapshot.written():
        from ..home_places import relative_gaps

        report.gaps += relative_gaps(snapshot.home)
    report.can_launch = not report.problems
    return report


def _network(mode: str, abi: int) -> list[str]:
    lines = {
        "none": ["network: none: the filter refuses every socket but unix ones"
                 + (", and Landlock every TCP bind and connect" if abi >= 4 else "")
                 + " (no loopback of the sandbox's own either)"],
        "host": ["network: the host's, shared"],
        "proxy": ["network: proxy mode needs a network namespace: refused here"],
    }[mode]
    if abi >= UNIX_SOCKETS_ABI:
        lines.append(f"unix sockets: Landlock ABI {abi}: none made outside the sandbox "
                     "reached, but the named ones (RESOLVE_UNIX)")
    else:
        lines.append(f"unix sockets: none can be made (Landlock ABI {abi} has no "
                     f"RESOLVE_UNIX, ABI {UNIX_SOCKETS_ABI}); socket pairs still work")
    return lines
