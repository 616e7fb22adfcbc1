"""What the inner applies without namespaces (direct mode), compiled from the plan (pure).

Where no user namespace can be made (an unprivileged container, a host that turned them
off), nothing can be mounted: the sandbox sees the host's own tree, and Landlock alone
holds the files, the seccomp filter and Landlock the network and IPC. The plan is still
built (plan.py: the same grants, hides, dot files, the installation, `$LNK_HOME`, each
in its order), and each of its operations is read here as the rights a path gets.

Facts that shape the compilation (Landlock, shared/reference/linux-kernel-interfaces.md
§4; checked on Linux 6.18):

- Landlock only adds rights: what a rule grants on a folder holds for everything below
  it, READ_DIR included, and no rule below can take one back. A mount decides by the
  deepest one; Landlock by the union along the path. So a folder holding a path that
  must get fewer rights than the folder (a dot file kept read-only in a written folder,
  a hidden one in a read grant) cannot have its rule: it gets only the rights every
  path below it keeps (`common`), and each entry in it now gets the folder's own rights
  by a rule of its own, but those on the way to the narrower path, which are split the
  same way (`complement`). What is made in such a folder later is in no entry's rule:
  it has the common rights only, which is fail closed.
- The rights on a folder to make, remove or rename its entries are the folder's own:
  a folder split so has none (no dot file can be made at the top of a written folder,
  nor one removed), and one holding a hidden path has no READ_DIR (it cannot be listed,
  since READ_DIR would be inherited by the hidden folder too).
- Landlock does not check the walk: a folder with no rule (`/`, `$LNK_HOME`) can be
  walked through to a granted one below, and stat() is never refused.
- /proc is the host's: readable (other processes' command lines, names and users are
  seen; their memory, environment and fds are not, since Landlock refuses ptrace access
  to a process outside the sandbox), written only in the inner's own /proc/PID, which the
  target keeps (/proc/sys's owner write bits are uid 0's, with no capability asked).
- /dev is the host's: only the nodes a sandbox gets (null, zero, full, random, urandom,
  tty and the terminal it was given), each a file rule.
- Path sockets: below Landlock ABI 9 (RESOLVE_UNIX) nothing of the kernel's closes
  connect() to a path socket anywhere on the machine the uid may reach (a runtime's
  socket, systemd's, another user's agent): with no mount namespace to keep them out of
  sight, no unix socket can be made (socket(AF_UNIX) refused; socket pairs made
  connected, which reach no path, stay). From ABI 9 on, only the sockets the spec names.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from inner import landlock
from inner.config import Landlock

from ..errors import LaunchError, SpecError
from ..grants import Snapshot, depth, is_within
from .confine import READ, RUN, WRITE
from .plan import INNER_PARENT, INNER_PARENT_UNDER_ROOT, LaunchPlan, host_access

if TYPE_CHECKING:
    from inner.seccomp import Rule

DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
DEV_FILE = ("read_file", "write_file", "ioctl_dev")
PROC_SELF = "/proc/self"  # the inner's own /proc/PID, which the target's exec keeps
PROC_OWN = ("read_file", "read_dir", "write_file")
UNIX_SOCKETS_ABI = 9

AF_UNIX = 1
SOCK_STREAM = 1
SOCK_SEQPACKET = 5
_SOCK_FLAGS = (0, 0x800, 0x80000, 0x80800)  # SOCK_NONBLOCK, SOCK_CLOEXEC, both
# A connected pair reaches no path; a datagram one can be connected or sent to one again.
CONNECTED_PAIRS = tuple(kind | flags for kind in (SOCK_STREAM, SOCK_SEQPACKET)
                        for flags in _SOCK_FLAGS)
# System V IPC and POSIX message queues: one table for the machine (or the container),
# named by numbers anyone may guess; a sandbox without an IPC namespace of its own gets
# none of them, as on a kernel built without them (ENOSYS).
IPC_CALLS = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl",
             "semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink",
             "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")

Rights = frozenset[str]
NONE: Rights = frozenset()


class Entry(NamedTuple):
    """One entry of a folder as listed at launch: a link is never given a rule (its
    target has the rights of where it is)."""

    path: str
    is_dir: bool
    is_link: bool


Listing = Callable[[str], Sequence[Entry]]


def list_folder(folder: str) -> list[Entry]:
    """The entries of `folder` now, none followed; none where it cannot be listed (then
    no entry gets the folder's rights: fail closed)."""
    try:
        with os.scandir(folder) as listing:
            return [Entry(e.path, e.is_dir(follow_symlinks=False), e.is_symlink())
                    for e in listing]
    except OSError:
        return []


def desired(plan: LaunchPlan, snapshot: Snapshot, *, extra: Mapping[str, Rights] = {}
            ) -> dict[str, Rights]:
    """The rights each path of the plan gets, deepest-decides as the mounts would: each
    op in order, a later one at the same path covering an earlier one; then `extra`, the
    run's own paths (run_paths, and lnk-sandbox's files bwrap would show under
    /run/lnk-sandbox, seen at their own path instead).

    Anything else bwrap would show at another path than its own (a private cache, a
    session's /tmp, the proxy's resolv.conf) cannot be shown without a mount: LaunchError
    (nonamespace.judge refuses those specs before; this is the last wall)."""
    run = ("execute",) if snapshot.programs is None else ()
    inner_parents = (INNER_PARENT, INNER_PARENT_UNDER_ROOT)
    found: dict[str, Rights] = {}
    for op in plan.ops:
        if op.kind in ("symlink", "remount-ro") or op.dest == "/proc/1":
            continue  # the host's own links; nothing to remount; bwrap's own pid 1
        if op.kind in ("ro-bind", "bind") and op.source != op.dest:
            if any(is_within(op.dest, p) for p in inner_parents):
                continue  # the inner's package, read before Landlock; git's: `extra`
            raise LaunchError(
                f"{op.dest} would be shown from {op.source} ({op.reason}), which needs a "
                "mount, and this sandbox has no namespace to mount in",
                hint="`lnk sandbox check` says what holds without namespaces")
        if op.kind == "ro-bind":
            rights = READ if is_within(op.dest, "/proc") else READ + run
        elif op.kind == "bind":
            rights = WRITE + run
        elif op.kind == "proc":
            rights = READ
        else:  # a hide (tmpfs, an empty file), bwrap's /dev, a fresh /tmp or /dev/shm
            rights = ()
        found[op.dest] = frozenset(rights)
    for path in plan.unhidden:
        found[path] = NONE  # a hidden place missing at launch stays closed if made
    found.update(extra)
    return found


def complement(rules: Mapping[str, Rights], listing: Listing = list_folder
               ) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Landlock rules (added up along the path) equal to `rules` (the deepest decides)
    on every path there now, and never more than `rules` on a path made later; and the
    paths found by listing (each may be gone, or a link, by the time the inner opens
    it: optional, never followed)."""
    out: list[tuple[str, list[str]]] = []
    listed: list[str] = []
    paths = sorted(rules, key=lambda p: (depth(p), p))

    def beneath(node: str) -> list[str]:
        return [p for p in paths if p != node and is_within(p, node)]

    def add(path: str, rights: Rights) -> None:
        if rights:
            out.append((path, sorted(rights)))

    def emit(node: str, rights: Rights) -> None:
        below = beneath(node)
        common = rights
        for path in below:
            common = common & rules[path]
        if common == rights:
            add(node, rights)
            for path in below:  # the top-most rules below: each decides its own
                if not any(p != path and is_within(path, p) for p in below):
                    emit(path, rules[path])
            return
        add(node, common)
        for entry in listing(node):
            if entry.is_link:
                continue
            if any(is_within(p, entry.path) for p in below):
                emit(entry.path, rules.get(entry.path, rights))
            elif rights:
                out.append((entry.path, sorted(rights)))
                listed.append(entry.path)

    for path in paths:
        if not any(p != path and is_within(path, p) for p in paths):
            emit(path, rules[path])
    return out, listed


def program_rules(plan: LaunchPlan, snapshot: Snapshot, loaders: dict[str, str | None]
                  ) -> list[tuple[str, list[str]]]:
    """EXECUTE on each listed program and the loader it names, as inside bwrap
    (confine.landlock_rules): a program in no folder the sandbox sees is a SpecError."""
    rules: list[tuple[str, list[str]]] = []
    for program in snapshot.programs or ():
        if host_access(plan, program.target) is None:
            raise SpecError(
                f"{program.name!r} ({program.target}) is in no folder the sandbox sees",
                file=snapshot.source, key="commands.programs",
                hint="grant its folder (files.read), or list a program from a system folder")
        rules.append((program.target, list(RUN)))
        loader = loaders.get(program.target)
        if loader and (loader, list(RUN)) not in rules:
            rules.append((loader, list(RUN)))
    return rules


def run_paths(*, tmp: str | None, terminals: Iterable[str]) -> dict[str, Rights]:
    """The run's own paths: its private /tmp folder (written), /dev's nodes and the
    terminal it was given (read, written, ioctl), its own /proc/PID (read and written)."""
    found = {path: frozenset(DEV_FILE) for path in (*DEV_NODES, *terminals)}
    found[PROC_SELF] = frozenset(PROC_OWN)
    if tmp is not None:
        found[tmp] = frozenset(WRITE)
    return found


def landlock_config(plan: LaunchPlan, snapshot: Snapshot, loaders: dict[str, str | None],
                    *, abi: int, tmp: str | None, terminals: Iterable[str],
                    shown: Mapping[str, Rights] = {}, listing: Listing = list_folder
                    ) -> Landlock:
    """The inner's Landlock record without namespaces: the rules (required: Landlock
    alone holds the files here), every path optional and opened without following a
    link, and the TCP rights handled where the network is none. `shown`: lnk-sandbox's
    own files the sandbox reads or writes at their own path (git's identity and trace)."""
    extra = {**shown, **run_paths(tmp=tmp, terminals=terminals)}
    if tmp is not None and snapshot.programs is None:
        extra[tmp] = frozenset((*WRITE, "execute"))
    rules, _ = complement(desired(plan, snapshot, extra=extra), listing)
    rules += program_rules(plan, snapshot, loaders)
    if abi >= UNIX_SOCKETS_ABI:
        rules += [(s.target, ["resolve_unix"]) for s in snapshot.network.sockets()
                  if s.target]
    # Every path is optional: the grants' own were found there, no link on the way, just
    # before the spawn (direct.py); one gone since, or a link now, is in no rule.
    return Landlock(required=True,
                    abis=landlock.abi_table(net=snapshot.settings.network_mode == "none"),
                    file_rights=landlock.FILE_MASK,
                    rules=[(path, landlock.rights_mask(names)) for path, names in rules],
                    nofollow=True, optional=True)


# Another process's scheduling: the calls below take any process of the uid (the person's
# editor, shell and agent, the supervisor) with no capability, and Landlock has no scope
# for them; only the caller itself (pid 0) is left (prlimit's `who` the same).
OTHER_PROCESS_FIRST = ("sched_setaffinity", "sched_setparam", "sched_setscheduler",
                       "sched_setattr")
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
# A file's metadata: Landlock has no right for a file's mode, owner, times or extended
# attributes, so any file the uid owns would get them, hidden or outside every grant;
# nor does it judge an inotify watch (names made and opened in a hidden folder). Mode,
# owner, times and watches go to the listener, which does them on a file the grants
# write (a watch: read; direct_metadata.py), or are refused (EPERM) without one;
# extended attributes are refused as by a file system without them (EOPNOTSUPP: cp -a,
# rsync -X, tar go on).
METADATA_CALLS = ("chmod", "fchmod", "fchmodat", "fchmodat2", "utimensat", "chown",
                  "fchown", "lchown", "fchownat", "inotify_add_watch")
LEGACY_TIMES = ("utime", "utimes", "futimesat")
XATTR_SETTERS = ("setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
                 "fremovexattr", "setxattrat", "removexattrat")
# Read by path, Landlock asks no right either: a hidden file's (a token in the URL
# user.xdg.origin.url keeps of a download) was read (red team 30b). Refused the same way
# (EOPNOTSUPP); by an fd, which Landlock judged at its open (an O_PATH one is EBADF),
# they stay.
XATTR_PATH_GETTERS = ("getxattr", "lgetxattr", "listxattr", "llistxattr", "getxattrat",
                      "listxattrat")
# A file's flags (chattr's: no dump, no atime, sync, a project; fs-verity, which makes a
# file read-only for good; a btrfs subvolume's read-only flag, its snapshots and their
# removal): the owner sets them on a file opened only for reading, or by path
# (file_setattr), and Landlock asks no right of any (bwrap's read-only mount said
# EROFS): a sandbox marked the person's hidden files to be left out of their backups
# (red team 30b). file_setattr answers ENOSYS, as before Linux 6.17 (chattr falls back to
# the ioctls); the ioctls ENOTTY, as a file system without flags. Each by its number:
# the filter reads the command whole, never its type alone.
FLAG_SETTERS = ("file_setattr",)
FLAG_IOCTLS = (
    0x40086602, 0x40046602,  # FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS (EXT4_IOC_SETFLAGS)
    0x40087602, 0x40047602,  # FS_IOC_SETVERSION, FS_IOC32_SETVERSION
    0x40086604, 0x40046604,  # EXT4_IOC_SETVERSION, its 32-bit one
    0x401C5820,  # FS_IOC_FSSETXATTR (xflags, extent size, project)
    0x40806685,  # FS_IOC_ENABLE_VERITY
    0x800C6613,  # FS_IOC_SET_ENCRYPTION_POLICY (an empty folder of the owner's)
    0x4008941A,  # BTRFS_IOC_SUBVOL_SETFLAGS
    0x50009401, 0x50009417,  # BTRFS_IOC_SNAP_CREATE, _V2
    0x5000940E, 0x50009418,  # BTRFS_IOC_SUBVOL_CREATE, _V2
    0x5000940F, 0x5000943F,  # BTRFS_IOC_SNAP_DESTROY, _V2
)
TRUNCATE_ABI = 3  # Landlock's TRUNCATE right
SCOPES_ABI = 6  # Landlock's signal scope
EVERY_PROCESS = 0xFFFFFFFF  # kill(-1, ...), as the filter reads its low word
O_ACCMODE = 0o3
O_TRUNC = 0o1000


def filter_rules(*, network_mode: str, unix: bool, abi: int = TRUNCATE_ABI,
                 listener: bool = False) -> tuple[Rule, ...]:
    """The seccomp rules added without namespaces (inner/seccomp.rules' `extra`).

    `unix`: unix sockets may be made (Landlock ABI 9 holds path sockets); else
    socket(AF_UNIX) and datagram socket pairs are refused. Network "none": no socket of
    any other family (there is no namespace with a loopback of its own); "host": the
    host's. Always: System V IPC and POSIX message queues (ENOSYS), another process's
    resource limits and scheduling (the supervisor's and the person's other processes
    share the uid), and a file's metadata (mode, owner, times and inotify watches to
    the listener where `listener`, else refused; extended attributes, set or read by
path, and a file's flags refused). Below
    Landlock ABI 6 (`abi`), which has no signal scope, kill(-1); below ABI 3, which
    cannot refuse cutting a file, truncate() by path and an open for reading that
    truncates (the only ones no write right is asked for)."""
    from inner.seccomp import NOTIFY

    rules: list[Rule] = [
        ("prlimit64", errno.EPERM, ((0, "not in", (0,)),)),
        *((name, errno.EPERM, ((0, "not in", (0,)),)) for name in OTHER_PROCESS_FIRST),
        ("setpriority", errno.EPERM, ((0, "not in", (PRIO_PROCESS,)),)),
        ("setpriority", errno.EPERM, ((1, "not in", (0,)),)),
        ("ioprio_set", errno.EPERM, ((0, "not in", (IOPRIO_WHO_PROCESS,)),)),
        ("ioprio_set", errno.EPERM, ((1, "not in", (0,)),)),
        *((name, errno.ENOSYS, ()) for name in IPC_CALLS),
        *((name, NOTIFY if listener else errno.EPERM, ()) for name in METADATA_CALLS),
        *((name, errno.EPERM, ()) for name in LEGACY_TIMES),
        *((name, errno.EOPNOTSUPP, ()) for name in (*XATTR_SETTERS, *XATTR_PATH_GETTERS)),
        *((name, errno.ENOSYS, ()) for name in FLAG_SETTERS),
        ("ioctl", errno.ENOTTY, ((1, "in", FLAG_IOCTLS),)),
    ]
    if abi < SCOPES_ABI:
        # No signal scope: kill(-1) would end every process of the uid (the person's
        # whole session). A signal to one process of theirs still reaches it (check
        # says so: nonamespace.lost).
        rules.append(("kill", errno.EPERM, ((0, "in", (EVERY_PROCESS,)),)))
    if abi < TRUNCATE_ABI:
        rules += [
            ("truncate", errno.EPERM, ()),
            ("openat", errno.EACCES, ((2, "any", O_TRUNC), (2, "none", O_ACCMODE))),
            ("open", errno.EACCES, ((1, "any", O_TRUNC), (1, "none", O_ACCMODE))),
        ]
    if not unix:
        rules.append(("socket", errno.EACCES, ((0, "in", (AF_UNIX,)),)))
        rules.append(("socketpair", errno.EACCES, ((0, "in", (AF_UNIX,)),
                                                    (1, "not in", CONNECTED_PAIRS))))
    if network_mode == "none":
        rules.append(("socket", errno.EACCES, ((0, "not in", (AF_UNIX,)),)))
    return tuple(rules)
