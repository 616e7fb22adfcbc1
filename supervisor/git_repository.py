"""Where a checkout's repository keeps its state, found as git finds it, without running git.

Facts (git's setup.c): a `.git` file must start with the exact 8 bytes `gitdir: `; a
relative path is relative to the file's folder; `commondir` is relative to the git
directory; a folder with `objects/`, `refs/` and a `HEAD` file is a bare repository.
is_git_directory: a HEAD that validate_headref accepts (a link into `refs/`, or a file
starting `ref:` and, past blanks, `refs/`, or an object name in hex), then `objects` and
`refs` that access(X_OK) accepts in the common directory (`commondir`'s, read whole:
git dies when it is there and cannot be read).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .git_config import parse_git_config
from .git_index import gitlinks
from .host_walk import lstat_kind, read_small

_GITFILE_PREFIX = b"gitdir: "


def read_gitfile(path: str) -> str | None:
    """The git directory a `.git` file names, as written; None when it is not one."""
    data = read_small(path)
    if data is None or not data.startswith(_GITFILE_PREFIX):
        return None
    text = data[len(_GITFILE_PREFIX):].split(b"\n", 1)[0].rstrip(b"\r")
    return text.decode("utf-8", "surrogateescape") or None


def is_git_directory(path: str) -> bool:
    """Whether git takes the folder `path` for a git directory (setup.c's
    is_git_directory), judged no more loosely than git: `objects` and `refs` must be
    folders, where git would accept any file it may search. Reads files only."""
    head = os.path.join(path, "HEAD")
    if lstat_kind(head) == "link":
        try:
            if not os.readlink(head).startswith("refs/"):
                return False
        except OSError:
            return False
    else:
        data = read_small(head, limit=255)
        if data is None:
            return False
        if data.startswith(b"ref:"):
            if not data[4:].lstrip(b" \t\n\r").startswith(b"refs/"):
                return False
        elif len(data) < 40 or any(c not in b"0123456789abcdefABCDEF" for c in data[:40]):
            return False
    common_dir = path
    if lstat_kind(os.path.join(path, "commondir")) != "missing":
        common = read_small(os.path.join(path, "commondir"))
        if not common:
            return False
        text = common.decode("utf-8", "surrogateescape").rstrip("\r\n")
        common_dir = os.path.join(path, text)
    return all(os.path.isdir(os.path.join(common_dir, name))
               and os.access(os.path.join(common_dir, name), os.X_OK)
               for name in ("objects", "refs"))


class GitDirs(NamedTuple):
    """Where the repository checked out at a top keeps its state, links resolved."""

    git_dir: str  # HEAD, the index, the state of an operation in progress
    common_dir: str  # objects, refs, logs, settings, hooks, linked worktrees
    sha256: bool  # extensions.objectformat = sha256: object names are 32 bytes


def git_dirs(top: str) -> GitDirs | None:
    """The git directories of `top`'s repository (a .git folder, a `gitdir:` file, or
    `top` itself a bare repository), found as the analysis finds them; None without one.
    Reads files only, never through a link at the last component."""
    dot_git = os.path.join(top, ".git")
    kind = lstat_kind(dot_git)
    if kind == "file":
        target = read_gitfile(dot_git)
        if target is None:
            return None
        git_dir = os.path.realpath(os.path.join(top, target))
    elif kind == "folder":
        git_dir = dot_git
    elif lstat_kind(os.path.join(top, "objects")) == "folder" and \
            lstat_kind(os.path.join(top, "refs")) == "folder" and \
            lstat_kind(os.path.join(top, "HEAD")) == "file":
        git_dir = top
    else:
        return None
    if lstat_kind(git_dir) != "folder":
        return None
    common_dir = git_dir
    common = read_small(os.path.join(git_dir, "commondir"))
    if common is not None and common.strip():
        text = common.decode("utf-8", "surrogateescape").rstrip("\r\n")
        common_dir = os.path.realpath(os.path.join(git_dir, text))
    sha256 = False
    config = read_small(os.path.join(common_dir, "config"), limit=1 << 20)
    if config is not None:
        sha256 = any(key == "extensions.objectformat" and (value or "").lower() == "sha256"
                     for key, value in parse_git_config(config.decode("utf-8", "replace")))
    return GitDirs(git_dir, common_dir, sha256)


def index_gitlinks(dirs: GitDirs) -> list[str]:
    """The gitlinks in the repository's index, read as git reads it (git_index.gitlinks)."""
    return gitlinks(os.path.join(dirs.git_dir, "index"), dirs.sha256)
