"""The run's private folder (Linux proxy mode), holding the sandbox's resolv.conf.

It is made 0700 in `$LNK_HOME/run` (hidden from every sandbox), named after the
supervisor's pid, and a folder whose supervisor is gone (killed) is removed by the next
start. Made before bwrap starts (the plan binds its resolv.conf), so nothing here loads
the event loop's modules.
"""

from __future__ import annotations

import os

from ..host_files import PrivateFolder
from ..state import existing_folder, private_folder

RESOLV_CONF = "resolv.conf"
RESOLV_CONF_TEXT = "# lnk-sandbox, proxy mode: names are answered by the proxy\n" \
    "nameserver 127.0.0.1\n"
RUN = "run"


class RunFolder:
    """The run's private folder in `$LNK_HOME/run`, holding the sandbox's resolv.conf.
    `folder` is its real path (the kernel's name for it: bwrap's pinned binds and the
    socket relay use it); it is made and removed through `$LNK_HOME`'s folders."""

    def __init__(self, folder: str, lnk_home: str, name: str):
        self.folder = folder
        self.lnk_home = lnk_home
        self.name = name

    @staticmethod
    def open(lnk_home: str) -> RunFolder:
        with private_folder(lnk_home, RUN) as base:
            remove_stale(base)
            name = base.make_unique_folder(f"net-{os.getpid()}-")
            try:
                made = base.folder(name)
                assert made is not None
                with made:
                    fd = made.open(RESOLV_CONF, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    with os.fdopen(fd, "w") as handle:
                        handle.write(RESOLV_CONF_TEXT)
                    real = os.readlink(f"/proc/self/fd/{made.fd}")
            except BaseException:
                base.remove_tree(name)
                raise
        return RunFolder(real, lnk_home, name)

    @property
    def resolv_conf(self) -> str:
        return os.path.join(self.folder, RESOLV_CONF)

    def close(self) -> None:
        try:
            base = existing_folder(self.lnk_home, RUN)
        except Exception:
            return  # the next start removes it (remove_stale)
        if base is not None:
            with base:
                base.remove_tree(self.name)


def remove_stale(base: PrivateFolder, prefix: str = "net") -> None:
    """Remove the folders named PREFIX-PID-... of runs whose supervisor is gone (it was
    killed)."""
    try:
        entries = base.names()
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
            try:
                base.remove_tree(entry)
            except OSError:
                continue
        except OSError:
            continue
