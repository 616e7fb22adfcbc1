"""What this machine can enforce, probed once per boot and kept as values tests can flip.

A start's checks of the machine are kept for the boot, passes only: a cached pass skips
the probe, a failure is probed again next time, and reading the cache opens nothing
else. The cache is advice for speed, never a decision: bwrap, the filter and Landlock
still refuse what they cannot do, and the inner fails closed on any error.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .errors import LaunchError
from .linux.bwrap import BwrapInfo, find_bwrap, probe_bwrap, require_bind_fd

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str:
    try:
        with open(BOOT_ID_PATH) as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


CACHE_NAME = "cache/checks.json"


class CheckCache:
    """Passed checks of this boot, in `$LNK_HOME/cache/checks.json`. `boot` names the
    boot where /proc does not (macOS's kern.bootsessionuuid)."""

    def __init__(self, lnk_home: str, boot: str | None = None):
        self.lnk_home = lnk_home
        self.path = os.path.join(lnk_home, CACHE_NAME)
        self.boot = boot or boot_id()
        self.passed: dict[str, Any] = {}
        from .state import read

        try:
            data = json.loads(read(lnk_home, CACHE_NAME) or b"{}")
            if isinstance(data, dict) and data.get("boot_id") == self.boot:
                self.passed = dict(data.get("passed", {}))
        except (OSError, ValueError, LaunchError):
            pass  # no cache: the checks run again (a link there refuses the first write)
        # A start killed while writing the cache left its temp file, and once the cache
        # is complete no start writes it again to remove it: each start looks (a listdir).
        from .state import remove_stale_temps

        remove_stale_temps(lnk_home, CACHE_NAME)

    def get(self, name: str) -> Any:
        return self.passed.get(name)

    def record(self, name: str, value: Any) -> None:
        self.passed[name] = value
        from .state import write_atomically

        try:
            write_atomically(self.lnk_home, CACHE_NAME, json.dumps(
                {"boot_id": self.boot, "passed": self.passed}).encode())
        except OSError:
            pass  # a cache that cannot be written only costs the next start a probe


def bwrap_info(cache: CheckCache) -> BwrapInfo:
    """The bwrap to run, with --bind-fd; LaunchError saying what to install if not."""
    cached = cache.get("bwrap")
    path = find_bwrap()
    if isinstance(cached, dict) and cached.get("path") == path and path is not None:
        return BwrapInfo(**cached)
    if path is None:
        raise LaunchError(
            "bubblewrap (bwrap) is not installed",
            hint="install it: apt-get install bubblewrap (Debian 12 ships 0.8.0 with "
            "--bind-fd), or bubblewrap 0.10+ elsewhere",
        )
    info = probe_bwrap(path)
    require_bind_fd(info)
    cache.record("bwrap", info._asdict())
    return info


def landlock_abi(cache: CheckCache) -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (not cached)."""
    cached = cache.get("landlock_abi")
    if isinstance(cached, int) and cached > 0:
        return cached
    from .linux import probes

    abi = probes.landlock_abi()
    if abi > 0:
        cache.record("landlock_abi", abi)
    return abi


def watch_support(cache: CheckCache) -> tuple[bool, bool]:
    """(a seccomp listener with WAIT_KILLABLE_RECV, memory files the watch can seal).

    Sealing needs MFD_NOEXEC_SEAL and ADDFD_FLAG_SEND as well as the listener.
    """
    listener = cache.get("seccomp_listener") is True
    sealed = cache.get("sealed_memfd") is True
    if listener and sealed:
        return True, True
    from .linux import probes

    if not listener and probes.listener():
        listener = True
        cache.record("seccomp_listener", True)
    if listener and not sealed and probes.memfd_noexec_seal() and probes.addfd_send():
        sealed = True
        cache.record("sealed_memfd", True)
    return listener, sealed
