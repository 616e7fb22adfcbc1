"""What both the record before a files.commit run and the check after it read of a
repository (commit_check.py says why): the operations git leaves in progress, the
git directories and worktrees, the index's gitlinks as git lists them, and git run as
the person runs it with every program its settings could start turned off.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .dotfiles import WORKTREE_GITDIR
from .git_repository import GitDirs, index_gitlinks
from .grants import is_within
from .host_walk import open_below, open_folder, read_at

HELD = "lnk-held"  # in a git directory: what a run left that git would carry out
_CLEAN_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                 "-c", "core.hooksPath=/dev/null")


class Operation(NamedTuple):
    """An operation git leaves in progress and a later command carries out."""

    name: str  # its folder in lnk-held/
    members: tuple[str, ...]  # its names in the git directory; "X*": every name from X
    command: str  # what you would run next
    acts: str  # what that command does with what the sandbox wrote


OPERATIONS = (
    Operation("rebase", ("rebase-merge",), "git rebase --continue",
              "runs its todo list's exec lines and the merge strategy it names"),
    Operation("am", ("rebase-apply",), "git am --continue",
              "applies its patches with the options stored beside them"),
    Operation("cherry-pick", ("sequencer",), "git cherry-pick --continue",
              "runs the merge strategy its options name as a program"),
    Operation("bisect", ("BISECT_*",), "git bisect reset",
              "passes BISECT_START to git checkout, where an option reads any file"),
)


def operation_names(fd: int, operation: Operation) -> list[str]:
    """The names of `operation` there are in the git directory `fd`."""
    with os.scandir(fd) as entries:
        return sorted(entry.name for entry in entries if any(
            entry.name == member or (member.endswith("*") and
                                     entry.name.startswith(member[:-1]))
            for member in operation.members))


def git_roots(dirs: GitDirs) -> list[str]:
    roots = [dirs.common_dir]
    if not is_within(dirs.git_dir, dirs.common_dir):
        roots.append(dirs.git_dir)
    return roots


def linked_worktrees(common_dir: str) -> dict[str, str | None]:
    """Each registered worktree (its name) with its gitdir file as hex, None without."""
    try:
        common = open_folder(common_dir)
    except OSError:
        return {}
    try:
        fd = open_below(common, "worktrees")
    except OSError:
        return {}
    finally:
        os.close(common)
    try:
        with os.scandir(fd) as entries:
            names = {entry.name: entry.is_dir(follow_symlinks=False) for entry in entries}
        found: dict[str, str | None] = {}
        for name, is_dir in names.items():
            data = None
            if is_dir:
                try:
                    inner = open_below(fd, name)
                except OSError:
                    inner = -1
                if inner >= 0:
                    data = read_at(inner, WORKTREE_GITDIR[0])
                    os.close(inner)
            found[name] = None if data is None else data.hex()
        return found
    finally:
        os.close(fd)


def _find_git(written: list[str]) -> str | None:
    """The git the person runs, from PATH, but never from a folder a sandbox wrote (nor
    a relative one): the supervisor runs it at once after the run, maybe as root."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not folder.startswith("/") or any(
                is_within(os.path.normpath(folder), w) for w in written):
            continue
        candidate = os.path.join(folder, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_git(dirs: GitDirs, top: str, written: list[str], *args: str, data: bytes = b""
         ) -> bytes | None:
    """Run the git the person runs, on their repository, with every program and hook its
    settings could start turned off and none of the person's other settings read; its
    output, or None when there is no git or it failed."""
    import subprocess

    git = _find_git(written)
    if git is None:
        return None
    path = os.environ.get("PATH", os.defpath)
    env = {"PATH": path, "GIT_DIR": dirs.git_dir, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C",
           "GIT_TERMINAL_PROMPT": "0", "HOME": os.environ.get("HOME", "/")}
    if dirs.git_dir != top:
        env["GIT_WORK_TREE"] = top
    try:
        done = subprocess.run([git, *_CLEAN_CONFIG, *args], input=data, env=env, cwd=top,
                              capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def listed_gitlinks(dirs: GitDirs, top: str, written: list[str]) -> list[str]:
    """The index's gitlinks as git lists them, or as the reader finds them without git."""
    listed = run_git(dirs, top, written, "ls-files", "--stage", "-z")
    return index_gitlinks(dirs) if listed is None else _gitlinks_listed(listed)


def _gitlinks_listed(listed: bytes) -> list[str]:
    """The gitlinks in `git ls-files --stage -z`'s output."""
    found = []
    for record in listed.split(b"\0"):
        head, _, path = record.partition(b"\t")
        if head.startswith(b"160000 "):
            found.append(os.fsdecode(path))
    return found
