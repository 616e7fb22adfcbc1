"""Files in `$LNK_HOME`: made private, written atomically.

`$LNK_HOME` holds what no sandbox may touch (remembered permissions, saved snapshots,
the placeholder list), and is hidden from every sandbox. A write is a temp file, fsync,
then rename, so a full disk or a kill mid-write leaves the old file whole.
"""

from __future__ import annotations

import os

from .errors import LaunchError


def ensure_private_dir(path: str) -> str:
    """Make `path` (and parents) with mode 0700 where missing; refuse a link. Each
    missing folder is made 0700 (os.makedirs gives the ones above the last the umask's
    mode), so a first start does not leave $LNK_HOME readable by others."""
    try:
        missing = []
        folder = os.path.abspath(path)
        while not os.path.lexists(folder) and folder != os.path.dirname(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(missing):
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
    except OSError as err:
        raise LaunchError(f"cannot make {path}: {err.strerror}", errno=err.errno) from None
    if os.path.islink(path):
        raise LaunchError(f"{path} is a link; lnk-sandbox keeps its settings in a real folder")
    if not os.path.isdir(path):
        raise LaunchError(f"cannot make {path}: something else than a folder is there")
    return path


def remove_stale_temps(path: str) -> None:
    """Remove `path`'s temp files (PATH.PID.tmp) whose writer is gone: a writer killed
    between making one and renaming it (SIGKILL) leaves it, and none can finish it."""
    folder, name = os.path.split(path)
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        pid = entry[len(name) + 1:-4] if entry.startswith(name + ".") and \
            entry.endswith(".tmp") else ""
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive (or another user's): its writer may still rename it
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            os.unlink(os.path.join(folder, entry))
        except OSError:
            pass


def write_atomically(path: str, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` whole, or leave it as it was (OSError). Temp files a
    killed writer left beside it are removed first."""
    folder = os.path.dirname(path)
    ensure_private_dir(folder)
    remove_stale_temps(path)
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
                 mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    os.close(fd)
    try:
        os.rename(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def remove_tree(folder: str) -> None:
    """Remove a folder a sandbox wrote in, whatever modes it left there (a folder it
    made 0000 would stop a plain rmtree); links are removed, never followed."""
    import shutil

    def fix(function: object, path: str, info: object) -> None:
        del function, info
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
                shutil.rmtree(path, onerror=fix)
            else:
                os.unlink(path)
        except OSError:
            pass

    shutil.rmtree(folder, onerror=fix)
