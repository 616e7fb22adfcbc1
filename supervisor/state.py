"""Files in `$LNK_HOME`: made private, written atomically, reached through host_files.

`$LNK_HOME` holds what no sandbox may touch (remembered permissions, saved snapshots,
the placeholder list, the runs), and is hidden from every sandbox. Every name in it is
opened through the folder above it, no link followed (host_files.PrivateFolder). A
write is a temp file, fsync, then rename, so a full disk or a kill mid-write leaves the
old file whole.
"""

from __future__ import annotations

import os

from .errors import LaunchError
from .host_files import PrivateFolder


def remove_tree(folder: str) -> None:
    """Remove a folder a sandbox wrote in (a session's /tmp, git's run folder, a cache
    being cleared), whatever modes it left there (a folder it made 0000 would stop a
    plain rmtree); links are removed, never followed (shutil.rmtree's fd-based walk, and
    lstat here). Called after the sandbox has ended."""
    import shutil
    import stat

    def retry(function: object, failed: str, info: object) -> None:
        del function, info
        parent = os.path.dirname(failed)
        try:
            if stat.S_ISDIR(os.lstat(parent).st_mode):
                os.chmod(parent, 0o700)
            if stat.S_ISDIR(os.lstat(failed).st_mode):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, onerror=retry)
            else:
                os.unlink(failed)
        except OSError:
            pass

    shutil.rmtree(folder, onerror=retry)


def private_folder(lnk_home: str, name: str = "") -> PrivateFolder:
    """`$LNK_HOME/name` opened (made 0700 where missing); LaunchError for a link on the
    way, or a folder that is not this user's alone. The caller closes it."""
    home = PrivateFolder.lnk_home(lnk_home)
    assert home is not None
    if not name:
        return home
    with home:
        folder = home.folder(name)
    assert folder is not None
    return folder


def existing_folder(lnk_home: str, name: str = "") -> PrivateFolder | None:
    """`$LNK_HOME/name` opened as `private_folder` does, None when it is missing."""
    home = PrivateFolder.lnk_home(lnk_home, make=False)
    if home is None or not name:
        return home
    with home:
        return home.folder(name, make=False)


def write_atomically(lnk_home: str, name: str, data: bytes, mode: int = 0o600) -> None:
    """Replace `$LNK_HOME/name` with `data` whole, or leave it as it was (OSError)."""
    folder, file = os.path.split(name)
    with private_folder(lnk_home, folder) as opened:
        opened.write_atomically(file, data, mode)


def read(lnk_home: str, name: str, limit: int = 1 << 22) -> bytes | None:
    """What `$LNK_HOME/name` holds, None when it (or `$LNK_HOME`) is missing."""
    folder, file = os.path.split(name)
    opened = existing_folder(lnk_home, folder)
    if opened is None:
        return None
    with opened:
        return opened.read(file, limit)


def is_file(lnk_home: str, name: str) -> bool:
    folder, file = os.path.split(name)
    opened = existing_folder(lnk_home, folder)
    if opened is None:
        return False
    with opened:
        return opened.is_file(file)


def ensure_private_dir(lnk_home: str, name: str) -> str:
    """`$LNK_HOME/name` made as `private_folder` makes it (no link on the way, this user's
    alone); its path, for what is kept there by path. No sandbox sees `$LNK_HOME`."""
    with private_folder(lnk_home, name) as folder:
        return folder.path


def remove_stale_temps(lnk_home: str, name: str) -> None:
    """Remove the temp files of `$LNK_HOME/name` (NAME.PID.tmp) whose writer is gone: a
    writer killed between making one and renaming it (SIGKILL) leaves it, and a file
    that is complete may never be written again to remove it."""
    folder, file = os.path.split(name)
    try:
        opened = existing_folder(lnk_home, folder)
    except LaunchError:
        return
    if opened is not None:
        with opened:
            opened.remove_stale_temps(file)
