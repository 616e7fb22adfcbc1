"""Reading and changing a folder a sandbox wrote, on the host, never through a link.

What a sandbox leaves where it wrote is read afterwards by lnk-sandbox itself, as the
person or as root (commit_check.py): each folder is opened one component at a time with
O_NOFOLLOW (O_PATH for the folders on the way, which needs no read right, where the
system has it), each file is read only when it is a regular file, opened without
blocking (a pipe would wait for a writer), and a link is removed or renamed, never
opened.

Facts: O_NOFOLLOW guards only the last component of a path, which is why a walk opens one
component per call, relative to the last descriptor; O_PATH | O_DIRECTORY | O_NOFOLLOW
on a link fails with ENOTDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW with ELOOP; unlinkat
and renameat act on a link itself; os.scandir(fd) reads a duplicate and leaves `fd`
open; a change time (st_ctime) is set by the kernel on every change and cannot be set
back by the file's owner, as a modification time can (utimensat).
"""

from __future__ import annotations

import os
import stat
from typing import Any, Literal

MAX_DEPTH = 64  # folders deeper than this are not walked (git makes none so deep)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SEARCH = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_LIMIT = 1 << 16


def open_folder(path: str) -> int:
    """A descriptor of the folder `path` (absolute), opened one component at a time
    from `/` without following a link (OSError, ELOOP or ENOTDIR, at one)."""
    fd = os.open("/", _SEARCH)
    try:
        parts = [p for p in path.split("/") if p]
        for index, part in enumerate(parts):
            flags = _DIR if index == len(parts) - 1 else _SEARCH
            next_fd = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        if not parts:
            next_fd = os.open(".", _DIR, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(fd: int, relative: str) -> int:
    """A descriptor of the folder `relative` below `fd`, no link followed."""
    current = os.dup(fd)
    try:
        for part in [p for p in relative.split("/") if p]:
            next_fd = os.open(part, _DIR, dir_fd=current)
            os.close(current)
            current = next_fd
    except BaseException:
        os.close(current)
        raise
    return current


def lstat_at(fd: int, name: str) -> os.stat_result | None:
    """What `name` below `fd` is, the link itself for a link; None when missing."""
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None


def read_at(fd: int, name: str) -> bytes | None:
    """A regular file's first bytes below `fd`, or None; never opens a link, never
    waits on a pipe."""
    try:
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                       dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(file).st_mode):
            return None
        return os.read(file, _READ_LIMIT)
    except OSError:
        return None
    finally:
        os.close(file)


def remove_tree(fd: int, name: str, depth: int = 0) -> None:
    """Remove `name` below `fd` and all in it, following no link (a link is removed)."""
    info = lstat_at(fd, name)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=fd)
        return
    if depth > MAX_DEPTH:
        raise OSError(f"{name}: more than {MAX_DEPTH} folders deep")
    inner = os.open(name, _DIR, dir_fd=fd)
    try:
        with os.scandir(inner) as entries:
            names = [entry.name for entry in entries]
        for entry_name in names:
            remove_tree(inner, entry_name, depth + 1)
    finally:
        os.close(inner)
    os.rmdir(name, dir_fd=fd)


def digest(fd: int, names: list[str]) -> str:
    """What the names are now, by inode, size and change time (a time the sandbox
    cannot set back), through every folder among them."""
    from .digests import sha256

    hashed = sha256()
    pending = [(name, 0) for name in names]
    while pending:
        name, depth = pending.pop()
        info = lstat_at(fd, name)
        if info is None:
            continue
        hashed.update(f"{name}\0{info.st_mode}\0{info.st_ino}\0{info.st_size}\0"
                      f"{info.st_mtime_ns}\0{info.st_ctime_ns}\n".encode("utf-8",
                                                                      "surrogateescape"))
        if stat.S_ISDIR(info.st_mode) and depth < MAX_DEPTH:
            try:
                inner = open_below(fd, name)
            except OSError:
                continue
            try:
                with os.scandir(inner) as entries:
                    pending.extend((f"{name}/{e.name}", depth + 1) for e in entries)
            finally:
                os.close(inner)
    return hashed.hexdigest()


def survey(root: str, held: frozenset[str]) -> tuple[dict[str, list[Any]], list[str]]:
    """Below `root`, no link followed, `held` paths left out: every link and every file
    that is neither a regular file nor a folder, {path: [kind, inode, link target]};
    and the folders not read: at MAX_DEPTH, or one this process may not open, list or
    search even after giving its owner's rights back (allow_owner)."""
    found: dict[str, list[Any]] = {}
    unread: list[str] = []
    try:
        root_fd = _open_root(root)
    except OSError:
        return found, unread
    try:
        pending = [("", 0)]
        while pending:
            relative, depth = pending.pop()
            path = f"{root}/{relative}" if relative else root
            listed = _list(root_fd, root, relative)
            if listed is None and relative and _allow_below(root_fd, relative):
                listed = _list(root_fd, root, relative)  # once more, readable now
            if listed is None:
                if relative:
                    unread.append(path)
                continue
            inside, folders = listed
            found.update((p, v) for p, v in inside.items() if p not in held)
            for child in folders:
                if f"{root}/{child}" in held:
                    continue
                if depth + 1 >= MAX_DEPTH:
                    unread.append(f"{root}/{child}")
                else:
                    pending.append((child, depth + 1))
    finally:
        os.close(root_fd)
    return found, [path for path in unread if path not in held]


def _open_root(root: str) -> int:
    """The root of a walk, its owner's rights given back first where it has lost them."""
    try:
        fd = open_folder(root)
    except PermissionError:
        pass
    else:
        try:
            _own_rights(fd)
            os.stat(".", dir_fd=fd, follow_symlinks=False)
            return fd
        except PermissionError:
            os.close(fd)
    parent = open_folder(os.path.dirname(root))
    try:
        allow_owner(parent, os.path.basename(root))
    finally:
        os.close(parent)
    return open_folder(root)


def _allow_below(root_fd: int, relative: str) -> bool:
    parent_name, _, name = relative.rpartition("/")
    try:
        parent = open_below(root_fd, parent_name)
    except OSError:
        return False
    try:
        return allow_owner(parent, name)
    finally:
        os.close(parent)


def _list(root_fd: int, root: str, relative: str
          ) -> tuple[dict[str, list[Any]], list[str]] | None:
    """One folder's links and special files, and its folders (relative to the root);
    None where it cannot be opened, listed or searched (or is gone since)."""
    try:
        fd = open_below(root_fd, relative)
    except FileNotFoundError:
        return {}, []  # gone since it was listed: nothing left to find in it
    except OSError:
        return None
    found: dict[str, list[Any]] = {}
    folders: list[str] = []
    try:
        _own_rights(fd)
        os.stat(".", dir_fd=fd, follow_symlinks=False)  # searching it: EACCES without x
        with os.scandir(fd) as entries:
            for entry in entries:
                child = f"{relative}/{entry.name}" if relative else entry.name
                path = f"{root}/{child}"
                if entry.is_symlink():
                    found[path] = ["link", entry.inode(),
                                   os.readlink(entry.name, dir_fd=fd)]
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(child)
                elif not entry.is_file(follow_symlinks=False):
                    found[path] = ["other", entry.inode(), ""]
    except FileNotFoundError:
        pass  # an entry gone while listed
    except OSError:
        return None
    finally:
        os.close(fd)
    return found, folders


def _own_rights(fd: int) -> None:
    """Give a folder open as `fd` its owner's read, write and search rights back where
    this process owns it and they are missing: git's folders always have them, and
    without write a link in it could not be removed, nor the folder moved."""
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and info.st_mode & 0o700 != 0o700:
        os.fchmod(fd, stat.S_IMODE(info.st_mode) | 0o700)


def allow_owner(parent: int, name: str, *, folder: bool = True) -> bool:
    """Give the folder `name` below `parent` its owner's read, write and search rights
    back (a file: its owner's read right), when this process is its owner: a sandbox
    running as you may take them away to hide what is in it from a walk (git, which
    knows the names it wants, needs only to search a folder; a walk must list it), and
    git makes nothing so. It is opened O_PATH without following a link and changed
    through /proc/self/fd (Linux; elsewhere, not the owner, or a link: False)."""
    o_path = getattr(os, "O_PATH", 0)
    if not o_path:
        return False
    try:
        fd = os.open(name, o_path | (os.O_DIRECTORY if folder else 0) | os.O_NOFOLLOW |
                     os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        wanted = 0o700 if folder else 0o400
        if info.st_uid != os.geteuid() or not (folder or stat.S_ISREG(info.st_mode)):
            return False
        if info.st_mode & wanted != wanted:
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) | wanted)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def lstat_kind(path: str) -> Literal["file", "folder", "link", "missing", "other"]:
    """What is at `path` itself, a link not followed."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


def read_small(path: str, limit: int = 4096) -> bytes | None:
    """A regular file's first `limit` bytes, or None (missing, a folder, unreadable).

    What is read here lies where an earlier sandbox could write, and the reader may be
    root: so the path is first opened O_PATH (which opens nothing: no device is armed,
    no pipe waited on), and only a regular file is opened again to be read, through
    that very descriptor. (macOS has no O_PATH: there a non-blocking open, then fstat.)"""
    try:
        fd = _open_regular(path)
    except OSError:
        return None
    if fd is None:
        return None
    try:
        chunks = []
        while limit > 0:
            chunk = os.read(fd, min(limit, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _open_regular(path: str) -> int | None:
    """A read descriptor of `path` when it is a regular file, else None."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
    o_path = getattr(os, "O_PATH", 0)
    if not o_path:
        fd = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return fd
    where = os.open(path, o_path | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(where).st_mode):
            return None
        return os.open(f"/proc/self/fd/{where}", flags)
    finally:
        os.close(where)
