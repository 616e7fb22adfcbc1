"""The command's environment on macOS: `[env]`, plus what keeps everyday tools working
where Seatbelt answers differently from a Linux mount.

Facts (docs/macos.md has the sources):
- A file Seatbelt closes answers EPERM; a file a Linux mount leaves out answers ENOENT.
  git checks its global settings with access_or_die(..., ACCESS_EACCES_OK), which takes
  ENOENT and EACCES but dies on EPERM ("fatal: unable to access '~/.gitconfig':
  Operation not permitted"): every git command would stop on the default spec, which
  reads no home. So where ~/.gitconfig or $XDG_CONFIG_HOME/git/config is closed, git is
  pointed at the one the sandbox reads, or at /dev/null (GIT_CONFIG_GLOBAL), as if the
  hidden one were absent, which is what Linux shows. With no global settings read, the
  attributes and ignore files git would look for beside them are pointed at /dev/null
  too (git warns on each command for an EPERM there).
- zsh (the login shell of macOS) takes here-document and `=(...)` temp names from
  TMPPREFIX, /tmp/zsh by default, ignoring TMPDIR; /private/tmp is closed. So TMPPREFIX
  goes under the run's own temp folder.
- clang and Swift put their module cache under the per-user cache folder
  (DARWIN_USER_CACHE_DIR, found with confstr, not TMPDIR), which the sandbox does not
  write: CLANG_MODULE_CACHE_PATH (which clang's driver reads) goes under the run's own
  temp folder [U: Swift's own compiler].
- dyld's injection variables (DYLD_*) never pass, as the loader's never do on Linux.
A spec's own `[env] set` wins over each of these.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ..environment import build_environment
from ..grants import Snapshot

DEV_NULL = "/dev/null"


def temp_settings(temp: str | None) -> dict[str, str]:
    """What points tools at the run's own temp folder."""
    if not temp:
        return {}
    return {"TMPDIR": temp + "/", "TMPPREFIX": temp + "/zsh",
            "CLANG_MODULE_CACHE_PATH": temp + "/clang-module-cache"}


def git_settings(env: Mapping[str, str], readable: Callable[[str], bool]) -> dict[str, str]:
    """Where git's global settings would answer EPERM: the variables that send it to the
    ones the sandbox reads, or to none (see the module docstring)."""
    if "GIT_CONFIG_GLOBAL" in env:
        return {}
    home = env.get("HOME") or None
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    candidates = [p for p in ((os.path.join(xdg, "git", "config") if xdg else None),
                              (os.path.join(home, ".gitconfig") if home else None)) if p]
    shown = {path: readable(os.path.realpath(path)) for path in candidates}
    if all(shown.values()):
        return {}
    seen = [path for path, ok in shown.items() if ok]
    settings = {"GIT_CONFIG_GLOBAL": seen[-1] if seen else DEV_NULL}
    if seen or not xdg or "GIT_CONFIG_COUNT" in env or "GIT_CONFIG_PARAMETERS" in env:
        return settings
    hidden = [(key, os.path.join(xdg, "git", name)) for key, name in
              (("core.attributesFile", "attributes"), ("core.excludesFile", "ignore"))]
    extra = [key for key, path in hidden if not readable(os.path.realpath(path))]
    for i, key in enumerate(extra):
        settings[f"GIT_CONFIG_KEY_{i}"] = key
        settings[f"GIT_CONFIG_VALUE_{i}"] = DEV_NULL
    if extra:
        settings["GIT_CONFIG_COUNT"] = str(len(extra))
    return settings


def sandbox_environment(snapshot: Snapshot, temp: str | None, *,
                        readable: Callable[[str], bool] | None = None,
                        caller: Mapping[str, str] | None = None,
                        proxy: Mapping[str, str] | None = None) -> dict[str, str]:
    """The command's whole environment. `readable` says whether the sandbox reads a
    resolved path (the profile's answer); without it git's settings are left alone.
    `proxy`: proxy mode's variables; a named socket's variable (SSH_AUTH_SOCK) is kept
    as on Linux."""
    extra = {**snapshot.network.environment(), **(proxy or {}), **temp_settings(temp)}
    settings = snapshot.settings
    env = build_environment(os.environ if caller is None else caller, keep=settings.env_keep,
                            assign=settings.env_assign, extra=extra)
    if readable is not None:
        assigned = {name for name, _ in snapshot.settings.env_assign}
        for name, value in git_settings(env, readable).items():
            if name not in assigned:
                env[name] = value
    return {k: v for k, v in env.items() if not k.startswith("DYLD_")}
