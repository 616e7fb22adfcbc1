"""The inner confiner's configuration, compiled from the plan and the snapshot (pure).

Landlock holds the file grants again inside the mounts, a second wall that stays even
were a mount wide, and carries `[commands]`: with a list, EXECUTE only on the listed
files and the loaders they name; without one, EXECUTE wherever reading is allowed. The
mounts stay the first wall: a read-only bind inside a write grant (the installation, dot
files) cannot be narrowed by Landlock, whose rights add up beneath a folder.

The seccomp switches follow the effective policy: memory files are left alone without a
list (JITs need them); with a list they are sealed by the exec watch where it can, and
refused with ENOSYS where it cannot.

All of it goes to the inner as one record (inner/config.py): the filter as BPF bytes,
built here for this machine's architecture, the Landlock rules as paths and right bits,
the limits by number. The inner, compiled or Python, only applies it: policy is here.
"""

from __future__ import annotations

import resource
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from inner import landlock, seccomp, syscalls
from inner.config import Config, Landlock, Rlimit, Seccomp

from ..errors import SpecError
from ..grants import Snapshot, deepest, is_within
from .home import HOME_FOLDER
from .mount_watch import watched_mounts
from .plan import FRESH_MOUNTS, LaunchPlan, host_access

if TYPE_CHECKING:
    from inner.seccomp import Rule

READ = ("read_file", "read_dir")
WRITE = (
    "read_file", "read_dir", "write_file", "truncate", "remove_dir", "remove_file",
    "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym",
    "refer",
)
RUN = ("execute", "read_file")
# /proc keeps write_file under Landlock: a process writes its own entries there (glibc
# and JITs name their threads through /proc/self/task/N/comm, browsers and runtimes set
# their oom_score_adj), and those paths name pids Landlock cannot tell from the global
# files beside them; rights add up below a rule, so none could narrow it for one file.
# The global files are closed by their mounts instead: every global folder and
# writable file of /proc is bound read-only over itself (procfs.py), which no Landlock
# right reopens (tests/attacks/test_root_mode.py walks them all).
PROC = ("read_file", "read_dir", "write_file")
DEV = ("read_file", "read_dir", "write_file", "ioctl_dev")


class Layers(NamedTuple):
    """What this launch applies: the Landlock ABI found (0: none) and the seccomp modes."""

    landlock_abi: int
    memfd: str = "allow"
    exec_notify: bool = False
    listener: bool = False
    listener_required: bool = False


def landlock_rules(
    plan: LaunchPlan, snapshot: Snapshot, loaders: dict[str, str | None]
) -> list[tuple[str, list[str]]]:
    """(path inside, right names) for every mount, plus the program list's files.

    `loaders` maps each listed program's file to the loader it names (None: static, or a
    script), already resolved to the file's own path.
    """
    unrestricted = snapshot.programs is None
    extra: tuple[str, ...] = ("execute",) if unrestricted else ()
    # RESOLVE_UNIX (ABI 9) goes on no folder: a path socket made outside the sandbox is
    # reached only where the spec names it, in [network] unix or as a grant of its own
    # (a rule on the socket file), whenever it was made; the sandbox's own sockets are
    # its domain's. Below ABI 9 the plan hides the ones found at launch (sockets.py).
    named_files = {g.target for g in snapshot.visible() if not g.is_dir}
    rules: list[tuple[str, list[str]]] = []
    for op in plan.ops:
        rights: tuple[str, ...]
        socket = ("resolve_unix",) if op.dest in named_files and op.dest == op.source else ()
        if op.kind == "ro-bind" and is_within(op.dest, "/proc"):
            rights = READ  # a global file of /proc, bound read-only over itself
        elif op.kind == "ro-bind":
            rights = READ + extra + socket  # "/" too, when a spec grants it
        elif op.kind == "bind" or (op.kind == "tmpfs" and op.dest in FRESH_MOUNTS):
            rights = WRITE + extra + socket
        elif op.kind == "tmpfs" and op.reason == HOME_FOLDER:
            # Home's own folder holds nothing but mount points: listed, so that `ls ~`
            # and a walk of home see what is shown; each entry bound there has its own
            # rule, and nothing else is there to read.
            rights = ("read_dir",)
        elif op.kind == "proc":
            rights = PROC
        elif op.kind == "dev":
            rights = DEV
        else:
            continue
        rules.append((op.dest, list(rights)))
    if not any(dest == "/" for dest, _ in rules):
        rules.insert(0, ("/", ["read_dir"]))  # `ls /` lists the mount points, nothing more
    for sock in snapshot.network.sockets():
        # Each named socket, and no other one made outside the sandbox (ABI 9).
        rules.append((sock.target or "", ["resolve_unix"]))
    for program in snapshot.programs or ():
        if host_access(plan, program.target) is None:
            raise SpecError(
                f"{program.name!r} ({program.target}) is in no folder the sandbox sees",
                file=snapshot.source,
                key="commands.programs",
                hint="grant its folder (files.read), or list a program from a system folder",
            )
        rules.append((program.target, list(RUN)))
        loader = loaders.get(program.target)
        if loader and (loader, list(RUN)) not in rules:
            rules.append((loader, list(RUN)))
    return rules


def closed_folders(plan: LaunchPlan, snapshot: Snapshot) -> dict[str, list[str]]:
    """For each read grant's rule that holds a hidden path, the hidden paths it holds:
    the inner gives that folder only READ_DIR, and its rights to each entry there at
    launch but the hidden ones (and, down the way to a deeper hidden path, the same
    again), instead of the rights beneath the whole folder.

    Why: a hide is a mount over a path, and the host replacing what is there (git's
    credential-store, readline's history and most editors write a new file and rename it
    over the old one; a tool removes and makes its folder again) or making a hidden place
    that was missing at launch (`aws configure` while the run lasts) takes the mount away
    or never had one: the kernel detaches a mount from a dentry unlinked or renamed over
    in another mount namespace. Landlock judges by inode, so the new file, made after the
    rules, is in no rule but its folder's READ_DIR: it can be listed, not read.

    A write grant is not closed so: what the sandbox makes there must stay its own to
    read and write, which rights on the folder alone give. Without Landlock the mounts
    alone hold (a stated gap)."""
    mounts = [(op.dest, op) for op in plan.ops
              if op.kind in ("ro-bind", "bind", "tmpfs", "hide-file", "proc", "dev")]
    hidden = {op.dest for op in plan.ops if op.kind == "hide-file"}
    hidden |= {op.dest for op in plan.ops if op.kind == "tmpfs"
               and op.dest not in FRESH_MOUNTS and not is_within(op.dest, "/proc")
               and not any(is_within(op.dest, c.path) for c in snapshot.caches)}
    hidden |= {g.target for g in snapshot.grants if g.access == "hide" and g.target}
    hidden |= set(plan.unhidden)
    # Every read grant's rule: Landlock's rights add up along the path, across mounts, so
    # a read grant holding the one that holds a hidden path (`read = ["/", "~"]`, or
    # `["~", "~/.config"]`) reaches it all the same, unless it is closed down to it too.
    reads = [(d, op) for d, op in mounts if op.kind == "ro-bind" and op.dest == op.source
             and not is_within(d, "/proc") and d not in hidden]
    closed: dict[str, list[str]] = {}
    for path in sorted(hidden):
        holder = deepest(path, ((d, op) for d, op in mounts
                                if d != path and d not in hidden))
        if holder is None or holder.kind != "ro-bind" or holder.dest != holder.source \
                or is_within(holder.dest, "/proc"):
            continue  # not under a read grant (a write grant's hides stay mounts only)
        for folder in sorted({d for d, _ in reads if is_within(path, d)} | {holder.dest}):
            if path not in closed.setdefault(folder, []):
                closed[folder].append(path)
    return closed


def inner_config(
    plan: LaunchPlan, snapshot: Snapshot, layers: Layers, loaders: dict[str, str | None]
) -> Config:
    """What the inner applies: the filter, the Landlock rules, the limits. The launch
    adds the command and the status socket (`Config.replace`)."""
    rules = Landlock(
        required=snapshot.programs is not None,
        abis=landlock.abi_table(),
        file_rights=landlock.FILE_MASK,
        rules=[(path, landlock.rights_mask(names))
               for path, names in landlock_rules(plan, snapshot, loaders)],
        closed=sorted(closed_folders(plan, snapshot).items()),
    )
    return Config(-1, (), seccomp=filters(layers), landlock=rules, rlimits=limit_records(snapshot),
                  # The mount table handed over before the go, where a written folder
                  # holds a protection the host could take away (mount_watch.py).
                  watch_mounts=bool(watched_mounts(plan)))


def filters(layers: Layers, extra: tuple[Rule, ...] = (),
            fallback_extra: tuple[Rule, ...] | None = None) -> Seccomp:
    """The filter for this machine's architecture, and, when it has a listener that
    another filter's may have taken (EBUSY), the one without it: memory files refused
    (ENOSYS) unless left alone, execs not handed over. learn has none: it needs the
    listener. `extra`: a run without namespaces' own rules (direct_rules.filter_rules),
    in both; `fallback_extra` the ones for a filter without a listener, where they
    differ (what `extra` hands to the listener is refused there)."""
    arch = syscalls.native_arch()
    program = _program(arch, layers.memfd, layers.exec_notify, extra)
    fallback = None
    if layers.listener and not layers.listener_required:
        fallback = _program(arch, "allow" if layers.memfd == "allow" else "enosys", False,
                            extra if fallback_extra is None else fallback_extra)
    return Seccomp(syscalls.AUDIT_ARCH[arch], program, layers.listener, fallback)


@cache
def _program(arch: str, memfd: str, exec_notify: bool, extra: tuple[Rule, ...]) -> bytes:
    return seccomp.build_program(arch, memfd=memfd, exec_notify=exec_notify, extra=extra)


def limit_records(snapshot: Snapshot) -> list[Rlimit]:
    """`rlimits`, each set one by its RLIMIT_* number, as the inner reads them."""
    return [Rlimit(name, getattr(resource, f"RLIMIT_{name}"), value)
            for name, value in rlimits(snapshot).items() if value is not None]


def rlimits(snapshot: Snapshot) -> dict[str, int | None]:
    """What the inner sets with setrlimit before the exec, soft and hard alike (only
    CAP_SYS_RESOURCE raises a hard limit again): processes (counted per user namespace
    since Linux 5.14, so the sandbox's own; and for the sandbox's uid, never root's,
    which the kernel does not count), open files, CPU seconds; None: left as it is.
    Core files are none at all: where the host's core_pattern is a pipe, each core
    would start a helper of the host's, as root, outside the run."""
    limits = snapshot.run_limits()
    return {"NPROC": limits.pids or None, "NOFILE": limits.files or None,
            "CPU": limits.cpu or None, "CORE": 0}
