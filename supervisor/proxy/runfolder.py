"""The run's private folder (Linux proxy mode), holding the sandbox's resolv.conf.

It is made 0700 in `$LNK_HOME/run` (hidden from every sandbox), named after the
supervisor's pid, and a folder whose supervisor is gone (killed) is removed by the next
start. Made before bwrap starts (the plan binds its resolv.conf), so nothing here loads
the event loop's modules.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from ..state import ensure_private_dir

RESOLV_CONF = "resolv.conf"
RESOLV_CONF_TEXT = "# lnk-sandbox, proxy mode: names are answered by the proxy\n" \
    "nameserver 127.0.0.1\n"


class RunFolder:
    """The run's private folder in `$LNK_HOME/run`, holding the sandbox's resolv.conf."""

    def __init__(self, folder: str):
        self.folder = folder

    @staticmethod
    def open(lnk_home: str) -> RunFolder:
        base = ensure_private_dir(os.path.join(lnk_home, "run"))
        remove_stale(base)
        folder = os.path.realpath(tempfile.mkdtemp(prefix=f"net-{os.getpid()}-", dir=base))
        try:
            fd = os.open(os.path.join(folder, RESOLV_CONF),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "w") as handle:
                handle.write(RESOLV_CONF_TEXT)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return RunFolder(folder)

    @property
    def resolv_conf(self) -> str:
        return os.path.join(self.folder, RESOLV_CONF)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def remove_stale(base: str, prefix: str = "net") -> None:
    """Remove the folders named PREFIX-PID-... of runs whose supervisor is gone (it was
    killed)."""
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        parts = entry.split("-")
        if len(parts) < 3 or parts[0] != prefix or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
            continue  # alive (or not ours to signal): left alone
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, entry), ignore_errors=True)
        except OSError:
            continue
