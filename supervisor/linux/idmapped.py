"""Idmapped mounts: a root-run sandbox's grants, owned by root on disk, by a plain uid inside.

Root mode runs the sandbox as SANDBOX_UID, a uid no one on the host uses, mapped to uid 0
inside its user namespace (`bwrap --uid 0`). The kernel then judges it as another user
everywhere it decides by uid rather than by a capability: the system folders' owner-only
files, sysctls, the owner of /dev's nodes and of the person's terminal, the peer uid a
daemon reads from a socket, file leases, per-user quotas. The folders the spec grants
are bound through idmapped mounts that show root's files as SANDBOX_UID's and store what
SANDBOX_UID makes as root's, so files a root-run sandbox writes stay root's, as the
decision record wants.

Facts (Linux 6.18; fs/namespace.c, fs/mnt_idmapping.c; checked here):
- open_tree(fd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH | AT_RECURSIVE) (428) copies the mount
  tree at an fd into a detached one; mount_setattr(..., MOUNT_ATTR_IDMAP, userns_fd)
  (442, Linux 5.12) gives it the user namespace's mapping: with `0 SANDBOX_UID 1` a file
  root owns on disk shows as owned by SANDBOX_UID, and one SANDBOX_UID makes is written
  as root's. It needs CAP_SYS_ADMIN in the initial user namespace (root's) and a file
  system that supports it (ext4, xfs, btrfs from 5.12/5.15, tmpfs from 6.3; not NFS or
  9p): EINVAL otherwise.
- bwrap cannot bind a detached tree (`Race condition binding dirfd: Invalid argument`:
  a mount in no namespace may be copied only into the one it came from), but binds a
  tree attached in the namespace it inherits, as it binds any pinned host folder; and
  open_tree cannot copy a mount of another namespace (EINVAL). So the copies are made
  in the host's namespace, then attached with move_mount (429) in a mount namespace
  private to the spawning thread (unshare(CLONE_NEWNS) moves that thread alone), bwrap
  is spawned there, and the thread returns to its own namespace with setns: the private
  one lives in bwrap alone and goes with it, so no mount of it is ever seen on the host
  or left behind, however the run ends.
- The mapping needs a user namespace to name it: a child made in a new one whose maps
  are written, opened by /proc/PID/ns/user and let go. Kept for the process: its fd
  keeps it alive.
- A file made through an idmapped mount by a uid its mapping lacks fails with EOVERFLOW:
  the supervisor (uid 0) makes placeholders before the trees are attached, and the
  trees are attached only in the spawning thread's private namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from typing import TYPE_CHECKING

from inner.seccomp import CLONE_NEWNS, CLONE_NEWUSER
from inner.syscalls import libc

from ..errors import LaunchError

if TYPE_CHECKING:
    from .pinning import PinnedPath

# A uid no one on the host uses: the container range's top, below the one that means -1.
SANDBOX_UID = 2_147_483_646
SANDBOX_GID = 2_147_483_646

_OPEN_TREE = 428
_MOVE_MOUNT = 429
_MOUNT_SETATTR = 442
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = os.O_CLOEXEC
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOVE_MOUNT_T_EMPTY_PATH = 0x40
_MOUNT_ATTR_IDMAP = 0x00100000
_MS_REC = 0x4000
_MS_SLAVE = 0x80000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4

# Where the copies are attached in the private namespace: a folder every system has and
# no spawn needs (bwrap itself mounts its work tmpfs on /tmp, so not there).
STAGING = "/run"

_userns_fd: int | None = None


def _call(number: int, *args: int | bytes | ctypes.Array[ctypes.c_char]) -> int:
    wrapped = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = int(libc().syscall(ctypes.c_long(number), *wrapped))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def mapping_namespace() -> int:
    """An fd of a user namespace mapping 0 to SANDBOX_UID (and the same for gids), made
    once per process: a child unshares into a new one, its maps are written from here,
    and it is let go once the namespace is held by its fd."""
    global _userns_fd
    if _userns_fd is not None:
        return _userns_fd
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # only system calls here, then _exit: safe after a fork
        try:
            os.close(ready_read)
            os.close(done_write)
            code = 0 if libc().unshare(CLONE_NEWUSER) == 0 else 1
            os.write(ready_write, bytes([code]))
            os.read(done_read, 1)
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        if os.read(ready_read, 1) != b"\0":
            raise LaunchError("root mode could not make the user namespace that maps its "
                              "grants' owner (unshare failed)")
        for name, text in (("uid_map", f"0 {SANDBOX_UID} 1\n"), ("setgroups", "deny"),
                           ("gid_map", f"0 {SANDBOX_GID} 1\n")):
            fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        _userns_fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(ready_read)
        os.close(done_write)
        os.waitpid(pid, 0)
    return _userns_fd


class PrivateMounts:
    """Copies of pinned folders and files, idmapped where asked, attached in the spawning
    thread's private mount namespace for one spawn.

    `copy(pinned, path, idmap)` makes one (in the namespace the pinned folder is in: a
    copy is made only there) and gives back its fd; `enter()` moves the thread to a
    private namespace and attaches each copy in STAGING there; `leave()` returns the
    thread to its own namespace and working directory. The copies live on in what was
    spawned inside, and go with it.

    Every bind is staged, not only the mapped ones: bwrap, run as SANDBOX_UID, looks up
    each source's path itself (`Can't find source path ...: Permission denied` under
    root's 0700 home), and a path in STAGING is one it may walk.
    """

    def __init__(self) -> None:
        self.home = os.open("/proc/thread-self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        self.cwd = os.open(".", os.O_PATH | os.O_CLOEXEC)
        self.entered = False
        self.closed = False
        self.userns = mapping_namespace()
        self.copies: list[tuple[int, bool]] = []

    def copy(self, pinned: PinnedPath, path: str, *, idmap: bool) -> int:
        """A detached copy of the mount at `pinned`, idmapped when `idmap`: then of that
        mount alone, not of what is mounted inside it (a folder bound there from
        elsewhere, with a root daemon's socket in it, would be the sandbox's too)."""
        recursive = 0 if idmap else _AT_RECURSIVE
        try:
            tree = _call(_OPEN_TREE, pinned.fd, b"", _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC
                         | _AT_EMPTY_PATH | recursive)
        except OSError as err:
            raise LaunchError(f"root mode could not copy the mount of {path}: "
                              f"{err.strerror}", errno=err.errno) from None
        try:
            if idmap:
                attr = struct.pack("=QQQQ", _MOUNT_ATTR_IDMAP, 0, 0, self.userns)
                buffer = ctypes.create_string_buffer(attr, len(attr))
                _call(_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, buffer, len(attr))
        except OSError as err:
            os.close(tree)
            if err.errno in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise LaunchError(
                    f"root mode shows {path} to its sandbox through an idmapped mount, "
                    f"which its file system (or this kernel) does not support: "
                    f"{err.strerror}",
                    hint="grant a folder on a local file system (ext4, xfs, btrfs, tmpfs "
                    "on Linux 6.3+), or run lnk-sandbox as a user other than root",
                    errno=err.errno) from None
            raise LaunchError(f"root mode could not map {path}: {err.strerror}",
                              errno=err.errno) from None
        self.copies.append((tree, pinned.is_dir))
        return tree

    def enter(self) -> None:
        """A private namespace (a slave of the host's: nothing done here reaches it), a
        tmpfs at STAGING in it, and each copy attached there under its number."""
        lib = libc()
        if lib.unshare(CLONE_NEWNS) != 0:
            err = ctypes.get_errno()
            raise LaunchError(f"root mode could not make a private mount namespace: "
                              f"{os.strerror(err)}", errno=err)
        self.entered = True
        for source, target, kind, flags, data in (
                (b"none", b"/", None, _MS_SLAVE | _MS_REC, None),
                (b"tmpfs", STAGING.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                 b"mode=0711")):
            if lib.mount(source, target, kind, ctypes.c_ulong(flags), data) != 0:
                err = ctypes.get_errno()
                raise LaunchError(f"root mode could not set up its private mounts: "
                                  f"{os.strerror(err)}", errno=err)
        for number, (tree, is_dir) in enumerate(self.copies):
            place = os.path.join(STAGING, str(number))
            try:
                if is_dir:
                    os.mkdir(place, 0o711)
                else:
                    os.close(os.open(place, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                _call(_MOVE_MOUNT, tree, b"", -100, place.encode(), _MOVE_MOUNT_F_EMPTY_PATH)
            except OSError as err:
                raise LaunchError(f"root mode could not stage its mounts: {err.strerror}",
                                  errno=err.errno) from None

    def leave(self) -> None:
        if self.closed:
            return
        if self.entered:
            if libc().setns(self.home, CLONE_NEWNS) != 0:  # os.setns is Python 3.12's
                err = ctypes.get_errno()
                raise LaunchError(f"root mode could not leave its private mount "
                                  f"namespace: {os.strerror(err)}", errno=err)
            os.fchdir(self.cwd)
            self.entered = False
        os.close(self.home)
        os.close(self.cwd)
        self.closed = True
