"""Linux's checks of the machine a start makes, each pass kept for the boot in the
shared check cache (`supervisor/capabilities.py`): bwrap with --bind-fd, the Landlock ABI,
the seccomp listener and the memory files its watch can seal."""

from __future__ import annotations

from ..capabilities import CheckCache
from ..errors import LaunchError
from .bwrap import BwrapInfo, find_bwrap, probe_bwrap, require_bind_fd


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
    from . import probes

    abi = probes.landlock_abi()
    if abi > 0:
        cache.record("landlock_abi", abi)
    return abi


def watch_support(cache: CheckCache) -> tuple[bool, bool]:
    """(a seccomp listener with WAIT_KILLABLE_RECV, memory files the watch can seal).

    Sealing needs MFD_NOEXEC_SEAL and ADDFD_FLAG_SEND as well as the listener, and the
    watch able to read the caller's memory (the file's name; watch_reads).
    """
    listener = cache.get("seccomp_listener") is True
    sealed = cache.get("sealed_memfd") is True
    if listener and sealed:
        return True, True
    from . import probes

    if not listener and probes.listener():
        listener = True
        cache.record("seccomp_listener", True)
    if listener and not sealed and probes.memfd_noexec_seal() and probes.addfd_send() \
            and watch_reads(cache):
        sealed = True
        cache.record("sealed_memfd", True)
    return listener, sealed


def watch_reads(cache: CheckCache) -> bool:
    """Whether the exec watch can read a program's path from the process that runs it
    (process_vm_readv; probes.memory_readable)."""
    if cache.get("watch_reads") is True:
        return True
    from . import probes

    if probes.memory_readable():
        cache.record("watch_reads", True)
        return True
    return False


def without_namespaces(cache: CheckCache) -> bool:
    """Whether a launch runs without namespaces (direct.py): LNK_NAMESPACES=off, or no
    user namespace can be made here (probed in a child, a pass kept for the boot, so a
    machine that has them pays for the probe once)."""
    import os

    from ..nonamespace import forced_off

    if forced_off(os.environ):
        return True
    if cache.get("user_namespaces") is True:
        return False
    from . import probes

    if probes.user_namespaces():
        cache.record("user_namespaces", True)
        return False
    return True
