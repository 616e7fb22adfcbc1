"""`lnk sandbox check` on Linux: bubblewrap, user namespaces, the seccomp listener and
its sealed memory files, Landlock, cgroups, each probed for real, and the spec's
effective policy judged against them (the shared report: `supervisor/check.py`)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..check import (
    GAP_DISK,
    GAP_HARD_LINKS_LINUX,
    GAP_HIDES_IN_WRITE_GRANTS,
    GAP_HIDES_REPLACED,
    GAP_HOST_ABSTRACT,
    GAP_LOADER,
    GAP_PRELOAD,
    GAP_SHARED_COUNTS,
    GAP_SOCKET_MEMORY,
    GAP_SOCKETS,
    NESTED_BROWSERS,
    Problem,
    Report,
    exposed_credentials,
    home_lines,
    network_layers,
    spec_lines,
)
from ..errors import SandboxError
from ..netpolicy import UNIX_SOCKETS_ABI
from ..spec import key_line

if TYPE_CHECKING:
    from ..grants import Snapshot
    from ..policy import Context


@dataclass
class Machine:
    """What the kernel and bwrap offer; each value probed for real."""

    os: str
    kernel: str
    bwrap_path: str | None = None
    bwrap_version: str | None = None
    bind_fd: bool = False
    user_namespaces: bool = False
    seccomp_listener: bool = False
    addfd_send: bool = False
    memfd_noexec_seal: bool = False
    landlock_abi: int = 0
    listener_taken: bool = False  # another seccomp listener holds this process
    # bwrap's own words where a trial of it, run as a launch runs it, had its user
    # namespace refused (userns.py): Ubuntu's AppArmor restriction, or another refusal.
    userns_refused: str | None = None
    apparmor_userns: str = ""  # kernel.apparmor_restrict_unprivileged_userns, described
    exec_watch: str = "none"  # what runs under a list or learn: "compiled", "python", "none"
    # "namespaces" (bwrap), or "none" where no user namespace can be made, or "off"
    # where LNK_NAMESPACES=off asks: the run without namespaces (direct.py)
    namespaces: str = "namespaces"
    watch_reads: bool = True  # the watch can read a program's path (process_vm_readv)
    inner: str = "python"  # the inner confiner a run starts: "compiled" or "python"
    inner_why: str = ""  # the same, said with its reason
    start_server: str = "off"  # LNK_START_SERVER: off, on, running (startsocket.py)


def probe_machine(lnk_home: str) -> Machine:
    from ..capabilities import CheckCache
    from . import probes
    from .bwrap import find_bwrap, probe_bwrap

    machine = Machine(os=platform.system(), kernel=f"{platform.release()} {platform.machine()}")
    cache = CheckCache(lnk_home)
    path = find_bwrap()
    if path:
        try:
            info = probe_bwrap(path)
        except SandboxError:
            info = None
        if info is not None:
            machine.bwrap_path, machine.bwrap_version = info.path, info.version
            machine.bind_fd = info.bind_fd
            if info.bind_fd:
                cache.record("bwrap", info._asdict())
    machine.user_namespaces = probes.user_namespaces()
    if machine.user_namespaces:
        cache.record("user_namespaces", True)
    from ..nonamespace import forced_off
    from .userns import read_restriction

    machine.namespaces = "off" if forced_off(os.environ) else (
        "namespaces" if machine.user_namespaces else "none")
    machine.apparmor_userns = read_restriction().describe()
    machine.seccomp_listener = probes.listener()
    machine.addfd_send = probes.addfd_send()
    machine.memfd_noexec_seal = probes.memfd_noexec_seal()
    machine.landlock_abi = probes.landlock_abi()
    machine.listener_taken = machine.seccomp_listener and not probes.listener_free()
    machine.exec_watch = _exec_watch(machine.seccomp_listener and not machine.listener_taken)
    machine.watch_reads = probes.memory_readable()
    from .inner_program import choose, described

    machine.inner, machine.inner_why = choose(), described()
    from ..startsocket import described as server_described

    machine.start_server = server_described(lnk_home)
    if machine.landlock_abi:
        cache.record("landlock_abi", machine.landlock_abi)
    if machine.watch_reads:
        cache.record("watch_reads", True)
    if machine.seccomp_listener:
        cache.record("seccomp_listener", True)  # the passes a start looks for, as it keeps them
        if machine.addfd_send and machine.memfd_noexec_seal and machine.watch_reads:
            cache.record("sealed_memfd", True)
    return machine


def _exec_watch(listener: bool) -> str:
    """Which exec watch a watched run gets here: none without a listener; else the
    compiled one where setup.py built it (and LNK_EXEC_WATCH does not ask for Python)."""
    if not listener:
        return "none"
    if os.environ.get("LNK_EXEC_WATCH") == "python":
        return "python"
    from .watch import compiled_available

    return "compiled" if compiled_available() else "python"


def memory_files(machine: Machine) -> str:
    """What a memfd_create gets under a program list here (backend.py's decide_layers makes
    the same choice from the same probes)."""
    listener = machine.seccomp_listener and not machine.listener_taken
    missing = [name for name, there in (("a seccomp listener of its own", listener),
                                        ("reading the caller's memory (process_vm_readv)",
                                         machine.watch_reads),
                                        ("ADDFD_FLAG_SEND", machine.addfd_send),
                                        ("MFD_NOEXEC_SEAL (Linux 6.3)",
                                         machine.memfd_noexec_seal)) if not there]
    if not missing:
        return ("memory files: made by the exec watch with MFD_NOEXEC_SEAL added and "
                "handed over with ADDFD_FLAG_SEND: writable and mappable executable, "
                "never run")
    return ("memory files: refused with ENOSYS, since the exec watch cannot seal them "
            f"without {' and '.join(missing)}; a program must fall back from memfd_create")


def watch_layer(machine: Machine) -> str:
    if machine.exec_watch == "none":
        why = ("another seccomp listener holds this process" if machine.listener_taken
               else "no seccomp listener")
        return f"exec watch: none ({why}): refused programs go unnamed"
    kind = ("compiled (C, built by setup.py)" if machine.exec_watch == "compiled" else
            "Python (the compiled part was not built, or LNK_EXEC_WATCH=python)")
    if not machine.watch_reads:
        return (f"exec watch: {kind}, but it cannot read a program's path here "
                "(process_vm_readv is refused: Docker's default seccomp profile does, "
                "without CAP_SYS_PTRACE): refused programs go unnamed, and learn is refused")
    return f"exec watch: {kind}: names every program the list refuses"


def check_linux(spec_path: str | None) -> Report:
    """Probe the machine and judge the spec's effective policy against it (with bwrap:
    check_direct.check_here chooses between this and the run without namespaces)."""
    from ..policy import Context

    context = Context.current()
    return judge_linux(probe_machine(context.lnk_home), spec_path, context)


def judge_linux(machine: Machine, spec_path: str | None, context: Context) -> Report:
    """The spec's effective policy judged against `machine`, with bwrap (where the
    sandbox runs without namespaces, check_direct.py judges it)."""
    from ..stages import snapshot_for

    report = Report(machine, spec_path or "<default spec>", can_launch=True)
    if not machine.bwrap_path:
        report.problems.append(Problem("bubblewrap is not installed",
                                       hint="apt-get install bubblewrap"))
    elif not machine.bind_fd:
        report.problems.append(Problem(
            f"bubblewrap {machine.bwrap_version} has no --bind-fd",
            hint="install bubblewrap 0.10+, or Debian's 0.8.0-2+deb12u1"))
    if not machine.user_namespaces:
        report.problems.append(Problem(
            "this user cannot make a user namespace, which bwrap needs",
            hint="allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone"
            "=1, or an AppArmor profile for bwrap)"))
    try:
        snapshot = snapshot_for(spec_path, context)
    except SandboxError as err:
        report.problems.append(Problem.of(err))
        report.can_launch = False
        return report
    namespace_problem = _try_bwrap(machine, share_net=snapshot.settings.network_mode == "host")
    if namespace_problem is not None:
        report.problems.append(namespace_problem)
    from ..grants import working_directory_problem

    cwd_problem = working_directory_problem(snapshot, context.system_folders)
    if cwd_problem is not None:
        report.problems.append(Problem.of(cwd_problem))
    report.layers.append("bubblewrap: only the granted folders are mounted; own pid, ipc, uts, "
                         "user and network namespaces; every capability dropped")
    report.layers.append("seccomp filter: the calls a sandboxed program does not need are "
                         "refused with an errno; TIOCSTI and fexecve closed")
    if machine.landlock_abi:
        report.layers.append(f"Landlock ABI {machine.landlock_abi}: the file grants held again "
                             "inside the mounts; abstract sockets and signals scoped"
                             if machine.landlock_abi >= 6 else
                             f"Landlock ABI {machine.landlock_abi}: the file grants held again")
    else:
        report.layers.append("no Landlock: the mounts alone hold the file grants")
    if snapshot.programs is None:
        report.layers.append("programs: any program may run; memory files are made as asked")
    elif machine.landlock_abi:
        names = ", ".join(p.name for p in snapshot.programs) or "none"
        report.layers.append(f"programs: only {names} (and their loaders), by Landlock")
        report.layers.append(watch_layer(machine))
        report.layers.append(memory_files(machine))
    else:
        report.problems.append(Problem(
            "the spec lists programs, which only Landlock enforces, and this kernel has "
            "no Landlock", file=snapshot.source, key="commands.programs",
            line=key_line(snapshot.source, "commands.programs"),
            hint="run on a kernel with Landlock (Linux 5.13+, landlock in lsm=), or remove "
            "[commands] programs"))
    if os.geteuid() == 0:
        from .idmapped import SANDBOX_UID

        report.layers.append(
            f"run by root: the sandbox runs as uid {SANDBOX_UID} outside (uid 0 inside), "
            "so nothing the kernel grants root by uid or ownership applies; the folders it "
            "writes are idmapped, so what it writes stays root's (docs/root-mode.md)")
    report.layers += limit_layers(snapshot, report.problems)
    report.exposed = exposed_credentials(snapshot)
    report.home = home_lines(snapshot)
    report.layers += network_layers(snapshot)
    report.layers.append(NESTED_BROWSERS)
    report.gaps.append(GAP_LOADER)
    report.gaps.append(GAP_PRELOAD)
    report.gaps.append(GAP_DISK)
    report.gaps.append(GAP_SHARED_COUNTS)
    if not machine.landlock_abi:
        report.gaps.append(GAP_HIDES_REPLACED)
    report.gaps.append(GAP_HIDES_IN_WRITE_GRANTS)
    report.gaps.append(GAP_HARD_LINKS_LINUX)
    if _memory_on_v1():
        report.gaps.append(GAP_SOCKET_MEMORY)
    abi = f"ABI {machine.landlock_abi}" if machine.landlock_abi else "no Landlock"
    report.layers.append("path sockets under the grants: found at launch (bound in this "
                         "network namespace, or within two folders of a grant) and hidden, "
                         "but those the spec names")
    if machine.landlock_abi < UNIX_SOCKETS_ABI:
        report.gaps.append(f"{GAP_SOCKETS}; this kernel has {abi}")
    else:
        report.layers.append(f"Landlock ABI {machine.landlock_abi}: no path socket made "
                             "outside the sandbox but the named ones (RESOLVE_UNIX)")
    if snapshot.settings.network_mode == "host" and machine.landlock_abi < 6:
        report.gaps.append(GAP_HOST_ABSTRACT)
    if snapshot.written():
        from ..home_places import relative_gaps

        report.gaps += relative_gaps(snapshot.home)
    report.can_launch = not report.problems
    return report


def _try_bwrap(machine: Machine, *, share_net: bool) -> Problem | None:
    """Run bwrap as this spec's launch would (its namespaces, and root mode's uid): under
    Ubuntu's AppArmor restriction unshare succeeds, so only bwrap's own failure shows
    that the namespace it makes is useless to it. The problem, if it failed so."""
    from . import userns

    if not (machine.bwrap_path and machine.bind_fd and machine.user_namespaces):
        return None
    root_mode = os.geteuid() == 0
    machine.userns_refused = userns.trial(machine.bwrap_path, root_mode=root_mode,
                                          share_net=share_net)
    if machine.userns_refused is None:
        return None
    return Problem.of(userns.explain(machine.userns_refused, userns.read_restriction(),
                                     bwrap=machine.bwrap_path, root_mode=root_mode))


def _memory_on_v1() -> bool:
    """Whether the memory controller here is cgroup v1's (a hybrid or legacy system)."""
    from .cgroups import hierarchies

    return any(h.version == 1 and "memory" in h.controllers for h in hierarchies())


def limit_layers(snapshot: Snapshot, problems: list[Problem], *, direct: bool = False
                 ) -> list[str]:
    """How each of the run's limits holds here: by a cgroup of the run's own (probed by
    making one, as a start does), by setrlimit, by a tmpfs size, or not at all. A limit
    the spec sets and nothing here holds is a problem: the launch refuses it. `direct`:
    without namespaces (no tmpfs of the run's own, no user namespace counting its
    processes), whose refusals nonamespace.judge says."""
    from ..limits import describe
    from .cgroups import RunCgroups
    from .runs import this_token

    limits = snapshot.run_limits()
    probe = RunCgroups.open(this_token(), limits)
    held = probe.held
    probe.end()
    how = {
        "processes": ("a cgroup of the run's own (pids.max), and RLIMIT_NPROC"
                      if held.pids else "RLIMIT_NPROC (counted per user namespace)"),
        "memory": ("a cgroup of the run's own" if held.memory else
                   "not held: no cgroup lnk-sandbox may make here has the memory "
                   "controller (run as root, or where systemd delegates a subtree)"),
        "/tmp": "the size of its tmpfs", "/dev/shm": "the size of its tmpfs",
        "open files per process": "RLIMIT_NOFILE", "CPU time per process": "RLIMIT_CPU",
        "wall-clock time of the run": "the supervisor, which kills the whole run (124)",
    }
    if direct:
        how["/tmp"] = ("not held: without namespaces /tmp is a folder on disk (TMPDIR), "
                       "which has no size")
        how["/dev/shm"] = "none at all: without namespaces /dev/shm is closed"
        if not held.pids:
            how["processes"] = ("not held: run by root, RLIMIT_NPROC does not count "
                                "root's processes, and no cgroup may be made here"
                                if os.geteuid() == 0 else
                                "RLIMIT_NPROC, counted over all of this user's processes "
                                "without a user namespace of the sandbox's own")
    lines = []
    for line in describe(limits):
        what, _, value = line.partition(": ")
        way = how[what]
        if value == "no limit":
            lines.append(f"limit: {what}: no limit")
        elif way.startswith(("not held", "none at all")):
            lines.append(f"limit: {what} {value}: {way}")
            if what in limits.written and not direct:
                problems.append(Problem(
                    f"limits.{what} is set, and {way.removeprefix('not held: ')}",
                    file=snapshot.source, key=f"limits.{what}",
                    line=key_line(snapshot.source, f"limits.{what}"),
                    hint=f"remove limits.{what}, or run where it can be held"))
        else:
            lines.append(f"limit: {what} {value}, by {way}")
    lines.append("limit: a run whose lnk-sandbox is killed with SIGKILL is ended at once by "
                 "its keeper, else at the next start: " + (
                     "its cgroup is emptied (cgroup.kill)" if held.kill else
                     "what its bwrap left is found by the mark on its command line"))
    return lines


def render_linux(report: Report) -> str:
    m = report.machine
    assert isinstance(m, Machine)
    yes = {True: "yes", False: "no"}
    lines = [
        f"machine: {m.os} {m.kernel}",
        f"  bubblewrap          {m.bwrap_version or 'missing'}"
        + (f" at {m.bwrap_path}, --bind-fd: {yes[m.bind_fd]}" if m.bwrap_path else ""),
        f"  user namespaces     {yes[m.user_namespaces]}" + {
            "namespaces": "", "none": ": the sandbox runs without namespaces",
            "off": " (LNK_NAMESPACES=off: the sandbox runs without them)"}[m.namespaces]
        + (f", but bwrap may not use them (bwrap: {m.userns_refused})"
           if m.userns_refused else ""),
        f"  AppArmor userns     {m.apparmor_userns}",
        f"  seccomp listener    {yes[m.seccomp_listener]} (NEW_LISTENER, WAIT_KILLABLE_RECV)"
        + (", but another listener holds this process" if m.listener_taken else ""),
        f"  ADDFD_FLAG_SEND     {yes[m.addfd_send]}",
        f"  MFD_NOEXEC_SEAL     {yes[m.memfd_noexec_seal]}",
        f"  Landlock            {'ABI ' + str(m.landlock_abi) if m.landlock_abi else 'none'}",
        f"  exec watch          {m.exec_watch}"
        + ("" if m.watch_reads else " (cannot read a program's path: process_vm_readv "
           "refused)"),
        f"  inner confiner      {m.inner_why or m.inner}",
        f"  start server        {m.start_server}",
        *spec_lines(report),
    ]
    from ..terminal import shown_lines

    return shown_lines(lines)


