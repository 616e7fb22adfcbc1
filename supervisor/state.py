"""Files in `$LNK_HOME`: made private, written atomically.

`$LNK_HOME` holds what no sandbox may touch (remembered permissions, saved snapshots,
the placeholder list), and is hidden from every sandbox. A write is a temp file, fsync,
then rename, so a full disk or a kill mid-write leaves the old file whole.
"""

from __future__ import annotations

import os

from .errors import LaunchError


def ensure_private_dir(path: str) -> str:
    """Make `path` (and parents) with mode 0700 where missing; refuse a link."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as err:
        raise LaunchError(f"cannot make {path}: {err.strerror}", errno=err.errno) from None
    if os.path.islink(path):
        raise LaunchError(f"{path} is a link; lnk-sandbox keeps its settings in a real folder")
    return path


def write_atomically(path: str, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` whole, or leave it as it was (OSError). A temp file a
    writer killed mid-write left (its pid is in its name) is removed first."""
    folder = os.path.dirname(path)
    ensure_private_dir(folder)
    _remove_stale_temps(folder, os.path.basename(path))
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


def _remove_stale_temps(folder: str, name: str) -> None:
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        middle = entry[len(name) + 1:-4] if entry.startswith(name + ".") and \
            entry.endswith(".tmp") else ""
        if not middle.isdigit() or int(middle) == os.getpid():
            continue
        try:
            os.kill(int(middle), 0)
            continue  # its writer is alive (or not ours to signal)
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            os.unlink(os.path.join(folder, entry))
        except OSError:
            continue
