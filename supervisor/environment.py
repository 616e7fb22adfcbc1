"""The sandbox's environment, built by the supervisor itself from `[env]`.

bubblewrap is handed only this environment, so the loader's injection variables the
caller had (LD_PRELOAD, LD_AUDIT, ...) never reach bwrap, the inner confiner's
interpreter or the target: clearing them inside would be too late, since the loader of
the first program inside would already have read them.
"""

from __future__ import annotations

from collections.abc import Mapping

# glibc's "unsecure" variables (sysdeps/generic/unsecvars.h), which it drops for setuid
# programs because they make the loader or libc load code or data from a chosen path;
# TMPDIR is left out (it names a folder to write in, nothing is loaded from it).
LOADER_VARIABLES = frozenset(
    {
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "MALLOC_ARENA_MAX",
        "MALLOC_ARENA_TEST",
        "MALLOC_CHECK_",
        "MALLOC_MMAP_MAX_",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_PERTURB_",
        "MALLOC_TCACHE_COUNT",
        "MALLOC_TOP_PAD_",
        "MALLOC_TRACE",
        "MALLOC_TRIM_THRESHOLD_",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TZDIR",
    }
)

# Kept when a spec has no `[env] keep`: the least a shell command needs to behave.
DEFAULT_KEEP = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ")

# PATH when the caller has none: what a login shell on Debian starts with.
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def is_loader_variable(name: str) -> bool:
    """True for a variable that makes the dynamic loader or libc load chosen code (on
    macOS, dyld's DYLD_ variables: DYLD_INSERT_LIBRARIES and the rest)."""
    return name.startswith(("LD_", "DYLD_")) or name in LOADER_VARIABLES


def build_environment(
    caller: Mapping[str, str],
    *,
    keep: tuple[str, ...],
    assign: tuple[tuple[str, str], ...],
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment the sandboxed command gets, and the only one bwrap sees.

    `extra` holds what the sandbox itself sets (proxy variables); it wins over the
    caller's values but not over the spec's own `set`, which the person wrote.
    """
    env: dict[str, str] = {}
    for name in keep:
        if name in caller and not is_loader_variable(name):
            env[name] = caller[name]
    if "PATH" in keep and "PATH" not in env:
        env["PATH"] = FALLBACK_PATH
    if extra:
        env.update(extra)
    for name, value in assign:
        env[name] = value
    return {k: v for k, v in env.items() if not is_loader_variable(k)}
