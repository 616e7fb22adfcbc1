"""What others could not read in the system folders and /proc, for a sandbox run by root.

A sandbox run by root keeps uid 0 without a capability, and the kernel still lets uid 0
open what it owns: /etc/shadow and /etc/gshadow (0640 root:shadow), SSH host keys,
/etc/sudoers.d, /etc/ssl/private, a service's 0600 settings under /etc or /opt,
/proc/slabinfo. The system folders are meant to be what every user of the machine can
read, so a root-run sandbox sees them as another user would: each entry another user
could not use (`procfs.others_cannot_use`) is masked. They are found from the mode bits,
not a list, by walking the folders once and keeping the result:

- per boot, in `$LNK_HOME/cache/private-files.json` (root's own, hidden from sandboxes);
- /etc, where secrets live and change, checked again at every start by the change time
  of each entry (a chmod, a write, a rename each change it): about 2 ms here;
- /usr (and /bin, /sbin, /lib where they are folders of their own, not links into /usr)
  is the package manager's: checked by the package databases' change times, since
  walking it again costs 0.6 s and checking its 15,000 folders 40 ms;
- any other folder (/opt, /usr/local) by the modification time of each of its folders,
  which changes when an entry is made, removed or renamed in it; an existing file made
  private by chmod alone there is seen at the next boot or change of its folder;
- /proc's global folders per boot: the kernel makes them.

A walk descends into no link and no private folder (masked whole), and stays on the
folder's own file system.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence

from ..capabilities import boot_id
from .procfs import others_cannot_use

CACHE_VERSION = 1

# What a package database's change says: files of /usr came or went.
PACKAGE_DATABASES = (
    "/var/lib/dpkg/status", "/var/lib/rpm", "/usr/lib/sysimage/rpm",
    "/var/lib/pacman/local", "/lib/apk/db/installed",
)
PACKAGE_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
EXACT_FOLDERS = ("/etc",)

Found = tuple[tuple[str, bool], ...]  # (path, is a folder)


def walk(top: str) -> tuple[Found, list[tuple[str, int]], list[tuple[str, int]]]:
    """(private entries, (folder, mtime_ns) of every folder walked, (entry, ctime_ns) of
    every entry) of `top`."""
    found: list[tuple[str, bool]] = []
    folders: list[tuple[str, int]] = []
    entries: list[tuple[str, int]] = []
    try:
        top_info = os.lstat(top)
    except OSError:
        return (), [], []
    if not stat.S_ISDIR(top_info.st_mode):
        return (), [], []
    device = top_info.st_dev
    folders.append((top, top_info.st_mtime_ns))
    entries.append((top, top_info.st_ctime_ns))
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            listing = os.scandir(folder)
        except OSError:
            continue
        with listing:
            for entry in listing:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                mode = info.st_mode
                if stat.S_ISLNK(mode):
                    continue
                entries.append((entry.path, info.st_ctime_ns))
                directory = stat.S_ISDIR(mode)
                if others_cannot_use(mode):
                    found.append((entry.path, directory))
                elif directory and info.st_dev == device:
                    folders.append((entry.path, info.st_mtime_ns))
                    stack.append(entry.path)
    return tuple(sorted(found)), folders, entries


def _package_state() -> list[tuple[str, int]]:
    state = []
    for path in PACKAGE_DATABASES:
        try:
            state.append((path, os.stat(path).st_mtime_ns))
        except OSError:
            continue
    return state


def _kind(folder: str) -> str:
    if folder.startswith("/proc/"):
        return "boot"
    if folder in EXACT_FOLDERS:
        return "entries"
    if folder in PACKAGE_FOLDERS:
        return "packages"
    return "folders"


def _still(checks: Iterable[Sequence[object]], *, ctime: bool) -> bool:
    for path, stamp in checks:
        try:
            info = os.lstat(str(path))
        except OSError:
            return False
        if (info.st_ctime_ns if ctime else info.st_mtime_ns) != stamp:
            return False
    return True


class PrivateFiles:
    """The private entries of a set of folders, walked or taken from the cache."""

    def __init__(self, cache_path: str) -> None:
        self.cache_path = cache_path
        self.boot = boot_id()
        self.cached: dict[str, dict[str, object]] = {}
        self.changed = False
        try:
            with open(cache_path, "rb") as handle:
                data = json.loads(handle.read())
            if (isinstance(data, dict) and data.get("boot_id") == self.boot
                    and data.get("version") == CACHE_VERSION):
                self.cached = dict(data.get("folders", {}))
        except (OSError, ValueError):
            pass

    def of(self, folders: Iterable[str]) -> Found:
        found: list[tuple[str, bool]] = []
        for folder in folders:
            found.extend(self._folder(folder))
        return tuple(found)

    def _folder(self, folder: str) -> Found:
        kind = _kind(folder)
        record = self.cached.get(folder)
        if isinstance(record, dict) and self._valid(kind, record):
            return tuple((str(p), bool(d)) for p, d in record["found"])  # type: ignore[attr-defined]
        found, folders, entries = walk(folder)
        checks: list[tuple[str, int]] = []
        if kind == "entries":
            checks = entries
        elif kind == "packages":
            checks = _package_state()
        elif kind == "folders":
            checks = folders
        self.cached[folder] = {"found": [list(f) for f in found], "checks": checks}
        self.changed = True
        return found

    @staticmethod
    def _valid(kind: str, record: dict[str, object]) -> bool:
        checks = record.get("checks")
        if not isinstance(checks, list):
            return False
        if kind == "packages":
            return checks == [list(c) for c in _package_state()]
        return _still(checks, ctime=kind == "entries")

    def save(self) -> None:
        """Keep what was walked for the next start; a cache that cannot be written only
        costs the next start a walk."""
        if not self.changed:
            return
        from ..state import write_atomically

        data = {"version": CACHE_VERSION, "boot_id": self.boot, "folders": self.cached}
        try:
            write_atomically(self.cache_path, json.dumps(data, separators=(",", ":")).encode())
        except OSError:
            pass


def private_entries(folders: Iterable[str], lnk_home: str) -> Found:
    """The entries others could not use in `folders`, with the cache in `lnk_home`."""
    cache = PrivateFiles(os.path.join(lnk_home, "cache", "private-files.json"))
    found = cache.of(folders)
    cache.save()
    return found
