"""Landlock: the kernel interface the inner confiner uses to restrict itself.

Facts (checked on Linux 6.18, ABI 7; see shared/reference/linux-kernel-interfaces.md §4):

- Three syscalls, numbered from the unified table on every architecture: 444
  landlock_create_ruleset, 445 landlock_add_rule, 446 landlock_restrict_self.
  create_ruleset(NULL, 0, VERSION=1) returns the ABI; a kernel built without Landlock says
  ENOSYS, one that has it but was booted with it off says EOPNOTSUPP.
- struct landlock_ruleset_attr is {u64 handled_access_fs; u64 handled_access_net (ABI 4);
  u64 scoped (ABI 6)}: 8, 16 or 24 bytes. A shorter size than 8 is EINVAL; a longer one
  with a zero tail is accepted, a nonzero tail E2BIG. We pass the size the ABI defines.
- struct landlock_path_beneath_attr is {u64 allowed_access; s32 parent_fd} and PACKED:
  12 bytes, not 16. An O_PATH fd is a valid parent_fd.
- Nothing handled gives ENOMSG, and so does a rule allowing nothing (allowed_access 0):
  such a rule is left out, not sent.
- A bit the kernel does not know, or a right the ruleset does not handle, is EINVAL.
- A rule on a file (anything but a directory) may hold only EXECUTE, WRITE_FILE,
  READ_FILE, TRUNCATE and IOCTL_DEV; READ_DIR on a file is EINVAL. Rights are judged by
  inode: a hard link shares its rules, a copy does not; rules on a symlink's target.
- Rights per ABI: 1 (5.13) the thirteen first ones; 2 (5.19) REFER; 3 (6.2) TRUNCATE;
  4 (6.7) the TCP network rights; 5 (6.10) IOCTL_DEV; 6 (6.12) the scopes, abstract unix
  sockets and signals; 7 (6.15) the restrict_self logging flags; 8 (7.0) TSYNC; 9 (7.1)
  RESOLVE_UNIX: connect() and sendmsg() to a path socket, allowed beneath a rule that
  grants it (a rule on the socket file itself may: it is a file right) or to a socket
  made in the same domain, else EACCES. Not run here: this machine's kernel has ABI 7.
- Reparenting a file (rename or link into another directory) needs REFER on both sides;
  a refusal there is EXDEV (so mv falls back to copying), other refusals EACCES. Before
  ABI 2 reparenting is always refused.
- Opening for exec needs READ_FILE and EXECUTE; the kernel's open of a program's
  interpreter (PT_INTERP, the dynamic loader) is checked too, shared libraries are not
  (mmap is not covered). So the loader runs any readable file: `ld.so ./x`, a gap the
  decision record states.
- The signal scope refuses signals to processes outside the domain (EPERM); the abstract
  unix socket scope refuses connecting to a socket bound outside it (EPERM), even one the
  same process bound before it restricted itself.
- restrict_self needs no_new_privs (or CAP_SYS_ADMIN; root without NNP succeeds). It
  applies to the calling thread only (TSYNC is ABI 8) and is kept across fork and exec;
  files opened before it keep their access. At most 16 domains stack; the 17th is E2BIG.
- Landlock forbids mount changes, so it is applied inside bwrap, never around it.
- The TCP rights (ABI 4) are handled_access_net's BIND_TCP (1 << 0) and CONNECT_TCP
  (1 << 1): handled with no rule, every bind() and connect() of a TCP socket is refused
  (EACCES), whatever its address. UDP and other families are not covered.
- Landlock does not check the walk to a path, only what is done at its end: a folder
  without a rule can be walked through to a granted one below it, and stat() is never
  refused. READ_DIR on a folder is inherited by every folder below it, like every right.

The network rights are handled only where the supervisor's table asks (abi_table's
`net`: a launch without a network namespace, whose "none" mode has no loopback of its
own to keep open): inside bwrap they would close the program's own loopback and the
proxy. Which paths get which
rights is the supervisor's decision; this module only speaks to the kernel. It imports
nothing but the standard library and ctypes and does nothing at import time.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

from . import syscalls

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446

_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

FS_RIGHTS: Mapping[str, int] = {
    "execute": 1 << 0,
    "write_file": 1 << 1,
    "read_file": 1 << 2,
    "read_dir": 1 << 3,
    "remove_dir": 1 << 4,
    "remove_file": 1 << 5,
    "make_char": 1 << 6,
    "make_dir": 1 << 7,
    "make_reg": 1 << 8,
    "make_sock": 1 << 9,
    "make_fifo": 1 << 10,
    "make_block": 1 << 11,
    "make_sym": 1 << 12,
    "refer": 1 << 13,
    "truncate": 1 << 14,
    "ioctl_dev": 1 << 15,
    "resolve_unix": 1 << 16,
}
"""LANDLOCK_ACCESS_FS_* by lower-case name."""

FS_RIGHTS_ABI: Mapping[str, int] = {
    **dict.fromkeys(FS_RIGHTS, 1),
    "refer": 2,
    "truncate": 3,
    "ioctl_dev": 5,
    "resolve_unix": 9,
}
"""The ABI that introduced each filesystem right."""

FILE_RIGHTS: frozenset[str] = frozenset(
    {"execute", "write_file", "read_file", "truncate", "ioctl_dev", "resolve_unix"})
"""The rights a rule on a file (not a directory) may hold; others are EINVAL there."""

NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
NET_ABI = 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1
SCOPES_ABI = 6


class LandlockError(OSError):
    """A Landlock step failed: the caller must not run the target (fail closed).

    `errno` is the kernel's, `strerror` names the step, `filename` the path if any.
    """


class LandlockMissingPath(LandlockError):
    """A rule's path does not exist (ENOENT, or ENOTDIR on the way); nothing was applied."""


def _fail(err: int, step: str, path: str | None = None) -> LandlockError:
    message = f"landlock {step}: {os.strerror(err)}"
    if path is None:
        return LandlockError(err, message)
    return LandlockError(err, message, path)


def known_rights(abi: int) -> list[str]:
    """The filesystem rights ABI `abi` knows, in bit order."""
    return [name for name in FS_RIGHTS if FS_RIGHTS_ABI[name] <= abi]


def handled_fs(abi: int) -> int:
    """Every filesystem right of the ABI: all are handled, so all are refused unless granted."""
    mask = 0
    for name in known_rights(abi):
        mask |= FS_RIGHTS[name]
    return mask


def access_mask(names: Iterable[str], *, abi: int, directory: bool = True) -> int:
    """The bits for `names`, without rights the ABI lacks or (on a file) a file cannot hold.

    Dropping them is what a grant means on that kernel or that inode: a right the kernel
    does not know it does not refuse, and READ_DIR on a file grants nothing (EINVAL).
    An unknown name is a LandlockError (EINVAL): the supervisor and inner disagree.
    """
    mask = 0
    for name in names:
        bit = FS_RIGHTS.get(name)
        if bit is None:
            raise _fail(errno.EINVAL, f"unknown filesystem right {name!r}")
        if FS_RIGHTS_ABI[name] > abi or (not directory and name not in FILE_RIGHTS):
            continue
        mask |= bit
    return mask


def scoped(abi: int, *, scopes: bool = True) -> int:
    """The scopes to set: abstract unix sockets and signals from ABI 6 on, if asked."""
    if not scopes or abi < SCOPES_ABI:
        return 0
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (
        ("allowed_access", ctypes.c_uint64),
        ("parent_fd", ctypes.c_int32),
    )


def ruleset_attr_size(abi: int) -> int:
    """The size of landlock_ruleset_attr as ABI `abi` defines it: 8, 16 or 24."""
    if abi >= SCOPES_ABI:
        return 24
    return 16 if abi >= 4 else 8


def _call(number: int, *args: ctypes._SimpleCData[int] | ctypes.c_void_p) -> tuple[int, int]:
    """(result, errno) of one raw syscall. Every argument is sized to a register."""
    ctypes.set_errno(0)
    result = int(syscalls.libc().syscall(ctypes.c_long(number), *args))
    return result, ctypes.get_errno() if result < 0 else 0


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 where it has none (ENOSYS) or it is off (EOPNOTSUPP).

    Any other answer (a filter's EPERM, say) is a LandlockError: not knowing is not "none".
    """
    abi, err = _call(_SYS_CREATE_RULESET, ctypes.c_void_p(None), ctypes.c_size_t(0),
                     ctypes.c_ulong(_CREATE_RULESET_VERSION))
    if abi >= 0:
        return abi
    if err in (errno.ENOSYS, errno.EOPNOTSUPP):
        return 0
    raise _fail(err, "create_ruleset(VERSION)")


def handled_net(abi: int, *, net: bool) -> int:
    """The TCP rights to handle: both from ABI 4 on, when the caller asks."""
    return NET_BIND_TCP | NET_CONNECT_TCP if net and abi >= NET_ABI else 0


def abi_table(*, scopes: bool = True, net: bool = False
              ) -> tuple[tuple[int, int, int, int], ...]:
    """What each ABI from 1 on asks of a ruleset: (the filesystem rights handled, the
    network rights handled, the scopes set, the size of landlock_ruleset_attr); an ABI
    past the last is the last. `net`: the TCP rights handled from ABI 4 on (a launch
    without a network namespace, whose "none" mode has no loopback of its own).

    The supervisor hands this table to the inner with the rules (inner/config.py), so
    that the compiled inner and this one apply the same rights, from one place."""
    last = max(*FS_RIGHTS_ABI.values(), SCOPES_ABI)
    return tuple((handled_fs(abi), handled_net(abi, net=net), scoped(abi, scopes=scopes),
                  ruleset_attr_size(abi)) for abi in range(1, last + 1))


FILE_MASK = sum(FS_RIGHTS[name] for name in FILE_RIGHTS)
"""The bits a rule on a file may hold."""


def rights_mask(names: Iterable[str]) -> int:
    """The bits for `names`, every one of them; an unknown name is a LandlockError
    (EINVAL): the supervisor and the kernel's table disagree."""
    return access_mask(names, abi=max(FS_RIGHTS_ABI.values()))


def _create_ruleset(abi: int, *, scopes: bool) -> int:
    return _create(abi_table(scopes=scopes), abi)


def _create(table: Sequence[tuple[int, int, int, int]], abi: int) -> int:
    handled, net, scopes, size = table[min(abi, len(table)) - 1]
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=net, scoped=scopes)
    fd, err = _call(_SYS_CREATE_RULESET, ctypes.c_void_p(ctypes.addressof(attr)),
                    ctypes.c_size_t(size), ctypes.c_ulong(0))
    if fd < 0:
        raise _fail(err, f"create_ruleset(ABI {abi})")
    return fd


def _add_path_rule(ruleset_fd: int, parent_fd: int, allowed: int, path: str) -> None:
    attr = _PathBeneathAttr(allowed_access=allowed, parent_fd=parent_fd)
    result, err = _call(_SYS_ADD_RULE, ctypes.c_long(ruleset_fd),
                        ctypes.c_long(_RULE_PATH_BENEATH),
                        ctypes.c_void_p(ctypes.addressof(attr)), ctypes.c_ulong(0))
    if result < 0:
        raise _fail(err, f"add_rule(path_beneath, {allowed:#x})", path)


def _restrict_self(ruleset_fd: int) -> None:
    # Flags 0: at ABI 7 the kernel's audit log then records denials only up to the
    # target's exec, which is fine, since the exec watch names refused programs itself.
    result, err = _call(_SYS_RESTRICT_SELF, ctypes.c_long(ruleset_fd), ctypes.c_ulong(0))
    if result < 0:
        raise _fail(err, "restrict_self")


def restrict_scoped() -> None:
    """This process nested in a domain of its own that only scopes signals and abstract
    unix sockets (ABI 6): it and what it starts reach no process of the domain above
    (inner/reaper.py)."""
    attr = _RulesetAttr(handled_access_fs=0, handled_access_net=0,
                        scoped=SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    fd, err = _call(_SYS_CREATE_RULESET, ctypes.c_void_p(ctypes.addressof(attr)),
                    ctypes.c_size_t(ruleset_attr_size(SCOPES_ABI)), ctypes.c_ulong(0))
    if fd < 0:
        raise _fail(err, "create_ruleset(scopes)")
    try:
        _restrict_self(fd)
    finally:
        os.close(fd)


def _open_no_links(path: str) -> int:
    """An O_PATH fd of `path`, opened one component at a time from `/`, none of them
    followed: a link on the way (a folder the host, or another sandbox writing there,
    replaced since the supervisor looked) is ELOOP, and a link at the end is opened
    itself (the caller skips it). /proc's own links (`/proc/self`) are the kernel's,
    never planted: a path in /proc is opened as it is."""
    if path == "/proc" or path.startswith("/proc/"):
        return os.open(path, os.O_PATH | os.O_CLOEXEC)
    parts = [p for p in path.split("/") if p]
    fd = os.open("/", os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        for index, part in enumerate(parts):
            if part in (".", ".."):
                raise OSError(errno.EINVAL, "a rule path is absolute and normal", path)
            if index and stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError(errno.ELOOP, "a link in the path of a rule", path)
            following = os.open(part, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = following
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_rule(path: str, rights: int, handled: int, file_rights: int,
               optional: Collection[str], *, nofollow: bool = False
               ) -> tuple[int, int] | None:
    """(O_PATH fd, mask) for one rule, the fd the caller's; None when it grants nothing
    here (an optional path gone, no right this kernel or inode can hold). `nofollow`: no
    link followed on the way (_open_no_links)."""
    # A path listed inside the sandbox (optional: close_hidden's entries) is never
    # followed: the listing skipped links, and one the host made there since would carry
    # the grant's rights to wherever it points.
    follow = 0 if path not in optional else os.O_NOFOLLOW
    try:
        fd = _open_no_links(path) if nofollow else os.open(path, os.O_PATH | os.O_CLOEXEC
                                                           | follow)
    except OSError as err:
        code = err.errno or errno.EIO
        if code in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP) and path in optional:
            return None  # gone, or a link now on its way: in no rule (fail closed)
        if code in (errno.ENOENT, errno.ENOTDIR):
            raise LandlockMissingPath(
                code, f"landlock rule path: {os.strerror(code)}", path) from None
        raise _fail(code, "open(O_PATH), no link followed" if nofollow else "open(O_PATH)",
                    path) from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as err:
        os.close(fd)
        raise _fail(err.errno or errno.EIO, "fstat", path) from None
    if stat.S_ISLNK(mode):
        os.close(fd)
        return None  # a listed entry made a link since: in no rule
    # What a grant means on this kernel and inode: a right the kernel does not know it
    # does not refuse, and READ_DIR on a file grants nothing (EINVAL).
    mask = rights & handled & (file_rights if not stat.S_ISDIR(mode) else ~0)
    if mask == 0:
        os.close(fd)  # nothing this kernel or inode can grant: ENOMSG if sent
        return None
    return fd, mask


def restrict(rules: list[tuple[str, list[str]]], *, abi: int, scopes: bool = True,
             optional: Collection[str] = ()) -> None:
    """`apply` with each rule's rights by name, and this module's own ABI table: an
    unknown name is a LandlockError (EINVAL) before anything is opened."""
    masks = [(path, rights_mask(names)) for path, names in rules]
    apply(masks, abi=abi, table=abi_table(scopes=scopes), file_rights=FILE_MASK,
          optional=optional)


def apply(rules: Sequence[tuple[str, int]], *, abi: int,
          table: Sequence[tuple[int, int, int, int]], file_rights: int,
          optional: Collection[str] = (), nofollow: bool = False) -> None:
    """Confine the calling thread (and all it execs) to `rules`, for good.

    The ruleset handles the filesystem and network rights `table` gives for ABI `abi`
    (the network ones only for a launch without namespaces), with its scopes (abstract
    unix sockets and signals from ABI 6 on, when asked). Each rule is (path, rights):
    the path is opened O_PATH, following links (the paths are the sandbox's own, mounted
    by bwrap, unless `nofollow`), and granted the rights beneath it, less those the ABI
    lacks and, on a file, those not in `file_rights`. Several rules on one inode add up.
    An empty `rules` refuses every file access.

    Each path is opened, added and closed in turn, one descriptor at a time: a folder
    closed entry by entry (close_hidden) may hold more entries than the open-file limit
    the person's shell gives (1024 is common). Nothing applies before every rule is
    added, so a missing one raises LandlockMissingPath (errno ENOENT or ENOTDIR,
    `filename` the path) with nothing applied; a path listed in `optional` (as written
    in `rules`) is skipped instead. Any other failure is a LandlockError naming the step
    and path; the caller fails closed. The caller has set no_new_privs and is
    single-threaded: other threads would stay unconfined (no TSYNC before ABI 8).

    Without namespaces (direct mode) the paths are the host's own: `nofollow` opens each
    one without following a link anywhere on the way (ELOOP refuses it, unless the path
    is optional), and the table's network rights (ABI 4, network "none") are handled
    with no rule, so that no TCP socket binds or connects.
    """
    if abi < 1 or not table:
        raise _fail(errno.EOPNOTSUPP, f"restrict at ABI {abi}")
    handled = table[min(abi, len(table)) - 1][0]
    ruleset_fd = _create(table, abi)
    try:
        for path, rights in rules:
            opened = _open_rule(path, rights, handled, file_rights, optional,
                                nofollow=nofollow)
            if opened is None:
                continue
            fd, mask = opened
            try:
                _add_path_rule(ruleset_fd, fd, mask, path)
            finally:
                os.close(fd)
        _restrict_self(ruleset_fd)
    finally:
        os.close(ruleset_fd)


def _is_mount(path: str, parent: str) -> bool:
    """Whether `path` is on another file system than its folder: a hide mounted there
    (bwrap's empty file, a tmpfs), not a file the host made since."""
    try:
        return os.lstat(path).st_dev != os.stat(parent).st_dev
    except OSError:
        return False


def _closed(folder: str, rights: int, hidden: list[str],
            out: list[tuple[str, int]]) -> None:
    out.append((folder, FS_RIGHTS["read_dir"]))
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return
    for entry in entries:
        path = entry.path
        try:
            if path in hidden:
                # The hide itself (an empty file) reads as empty; what the host put there
                # since is no mount, and gets nothing.
                if not entry.is_dir(follow_symlinks=False) and _is_mount(path, folder):
                    out.append((path, rights))
                continue
            if entry.is_symlink():
                continue  # its target has the rights of where it is
            inside = [h for h in hidden if h.startswith(path + "/")]
            if inside:
                if entry.is_dir(follow_symlinks=False):
                    _closed(path, rights, inside, out)
                continue
            out.append((path, rights))  # a file's share of them (_open_rule)
        except OSError:
            continue


def close_hidden(rules: Sequence[tuple[str, int]], closed: Mapping[str, Collection[str]]
                 ) -> tuple[list[tuple[str, int]], set[str]]:
    """`rules` with each folder of `closed` (a read grant holding hidden paths) given
    READ_DIR alone, and its rights on each entry there now but the hidden ones, down
    to each hidden path: a file made there later, or renamed over a hidden one by the
    host (which takes the hide's mount away), is in no rule and cannot be read.

    Listed here, inside the sandbox, after the mounts: the entries are the sandbox's
    own view, and what the host makes after this listing is in no rule. Also returns
    the paths listed here, which may be gone by the time they are opened (optional)."""
    if not closed:
        return list(rules), set()
    out: list[tuple[str, int]] = []
    listed: set[str] = set()
    for path, rights in rules:
        hidden = closed.get(path)
        if hidden is None or not rights & FS_RIGHTS["read_file"]:
            out.append((path, rights))
            continue
        mine: list[tuple[str, int]] = []
        _closed(path, rights, sorted(hidden), mine)
        listed.update(p for p, _ in mine if p != path)
        out += mine
    return out, listed
