"""What this machine can enforce, probed once per boot and kept as values tests can flip.

A start's checks of the machine are kept for the boot, passes only: a cached pass skips
the probe, a failure is probed again next time, and reading the cache opens nothing
else. The cache is advice for speed, never a decision: bwrap, the filter and Landlock
still refuse what they cannot do, and the inner fails closed on any error. Each OS asks
its own machine through it (`linux/capabilities.py`; macOS keys it by its boot session).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .errors import LaunchError

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
