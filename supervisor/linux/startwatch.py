"""The installation watched: a start server ends once the code it would run changed.

A server loads its modules once; a run forked later must run what `lnk` would run now,
not what was installed when the server started (an upgrade, an edit of an editable
install, a package installed beside it that a run would import). So the server watches,
with inotify, from before it loads anything of the project beyond its own start:

- every folder of the project's packages, each file in them (a `touch` included; not
  names with a leading dot, editors' own, nor `__pycache__`, Python's);
- every folder of the module path, for what appears, goes or changes there that an
  import would find (a module, an extension, a `.pth`, a folder: a package, a
  distribution's metadata), and each of those folders going;
- the interpreter's own file;
- its socket's folder, for the socket removed or replaced (its `$LNK_HOME` removed).

Facts (inotify(7)): a watch is per inode, not per path; events say the name changed
within a watched folder; a lost event queue says IN_Q_OVERFLOW, taken as a change.
Checking costs a read of a non-blocking descriptor, so the server asks on every
connection, before it forks.
"""

from __future__ import annotations

import ctypes
import os
import sys

PACKAGES = ("supervisor", "inner", "netns_helper", "lnk_sandbox")
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x4000, 0x8000, 0x40000000
IN_ONLYDIR = 0x01000000
_NONBLOCK_CLOEXEC = os.O_NONBLOCK | os.O_CLOEXEC
_CHANGES = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO
            | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
_SELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_IMPORTABLE = (".py", ".pyc", ".so", ".pth", ".egg-link")


class InstallWatch:
    """An inotify descriptor on what the server's code is made of; `changed()` says
    whether any of it changed since the start."""

    def __init__(self, root: str, path: list[str]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd: int = self._libc.inotify_init1(_NONBLOCK_CLOEXEC)
        if self.fd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"inotify: {os.strerror(errno)}")
        self.kinds: dict[int, str] = {}
        self.socket_name = ""
        self.dirty = False
        for package in PACKAGES:
            top = os.path.join(root, package)
            for folder, names, _ in os.walk(top):
                names[:] = [n for n in names if n != "__pycache__" and not n.startswith(".")]
                self._add(folder, "package", _CHANGES | IN_ONLYDIR)
        for entry in dict.fromkeys(path):
            if entry and os.path.isdir(entry):
                self._add(entry, "path", _CHANGES | IN_ONLYDIR)
        self._add(os.path.realpath(sys.executable), "interpreter",
                  IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    def _add(self, path: str, kind: str, mask: int) -> None:
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"inotify cannot watch {path}: {os.strerror(errno)}")
        self.kinds[wd] = kind

    def folder(self, fd: int, socket_name: str) -> None:
        """Watch the open folder `fd` for the socket `socket_name` removed or replaced."""
        self.socket_name = socket_name
        self._add(f"/proc/self/fd/{fd}", "folder",
                  IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | _SELF | IN_ONLYDIR)

    def changed(self) -> bool:
        """Whether anything watched changed (once true, true for ever)."""
        while not self.dirty and self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            for wd, mask, name in _events(data):
                if self._matters(wd, mask, name):
                    self.dirty = True
                    if os.environ.get("LNK_START_SERVER_DEBUG"):
                        sys.stderr.write(f"changed: {self.kinds.get(wd)} {mask:#x} {name}\n")
        return self.dirty

    def _matters(self, wd: int, mask: int, name: str) -> bool:
        if mask & IN_Q_OVERFLOW:
            return True
        kind = self.kinds.get(wd)
        if kind is None:
            return False  # a watch removed before (its IN_IGNORED was seen)
        if mask & _SELF:
            return True
        if kind == "folder":
            return name == self.socket_name
        if kind == "interpreter":
            return True
        if name.startswith(".") or name == "__pycache__":
            return False
        if kind == "package":
            return True
        return bool(mask & IN_ISDIR) or name.endswith(_IMPORTABLE)

    def forget(self) -> None:
        """In a forked run: the descriptor is the run's to close with the rest."""
        self.fd = -1


def _events(data: bytes) -> list[tuple[int, int, str]]:
    """(wd, mask, name) of each struct inotify_event in `data`."""
    found = []
    at = 0
    while at + 16 <= len(data):
        wd = int.from_bytes(data[at:at + 4], sys.byteorder, signed=True)
        mask = int.from_bytes(data[at + 4:at + 8], sys.byteorder)
        size = int.from_bytes(data[at + 12:at + 16], sys.byteorder)
        name = os.fsdecode(data[at + 16:at + 16 + size].rstrip(b"\0"))
        found.append((wd, mask, name))
        at += 16 + size
    return found
