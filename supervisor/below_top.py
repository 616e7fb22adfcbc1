"""What lies below the top of a written folder and is already the person's at launch:
repositories of any version-control system, bare git repositories, virtual environments.

The record's "only at the top" reasons about what a sandbox makes: a repository it
clones or makes in a folder inside is its work. One that was there before it started is
the person's: `cd ~/src && lnk sandbox run ...` writes `~/src`, and `~/src/app/.git` is
the repository the person's next `git status` in `~/src/app` runs the settings of. So
each written folder is walked at launch, breadth first, no link followed, for what the
analysis (dotfiles.py) holds like the top's:

- a folder holding one of the metadata names (`.git`, a file or a folder, and
  runs_as_you.VCS_METADATA's): a checkout. Its metadata is not walked; one that is a
  link is a checkout too, whose link the sandbox could repoint: the launch is refused
  (view.check_links), as for a link in the path of any protection;
- a folder holding `HEAD` (a file), `objects/` and `refs/`: a bare git repository (git's
  own test, setup.c is_git_directory); pushing to it runs its hooks as the person;
- a folder holding `pyvenv.cfg`: a virtual environment (PEP 405, the file Python itself
  looks for). Not walked: its packages are thousands of folders, and what matters is
  its activation scripts.

The walk lists at most MAX_FOLDERS folders (breadth first, so the nearest first: depth
is bounded by the same count), then stops and says where
(`unwalked`): what it did not list is not held, and `describe`, and so the question
asked before a spec runs, names it. Listing a folder costs one getdents; an entry's
kind comes from the listing itself (d_type), so most entries cost nothing more.
"""

from __future__ import annotations

import os
from collections import deque
from typing import NamedTuple

MAX_FOLDERS = 256
VENV_MARK = "pyvenv.cfg"


class Below(NamedTuple):
    """`checkouts`: (folder, metadata name) of each checkout below the top; `bare`: each
    bare git repository; `venvs`: each virtual environment (the top's own included);
    `unwalked`: the folders the walk did not list, its bound reached, sorted."""

    checkouts: tuple[tuple[str, str], ...] = ()
    bare: tuple[str, ...] = ()
    venvs: tuple[str, ...] = ()
    unwalked: tuple[str, ...] = ()


def _listing(folder: str) -> dict[str, str] | None:
    """Each entry's kind ("folder", "file", "link", "other"), from the listing alone
    where the filesystem says it; None where the folder cannot be listed."""
    found: dict[str, str] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_symlink():
                        kind = "link"
                    elif entry.is_dir(follow_symlinks=False):
                        kind = "folder"
                    elif entry.is_file(follow_symlinks=False):
                        kind = "file"
                    else:
                        kind = "other"
                except OSError:
                    kind = "other"
                found[entry.name] = kind
    except OSError:
        return None
    return found


def walk(top: str, names: frozenset[str], *, max_folders: int = MAX_FOLDERS) -> Below:
    """Walk `top` (resolved, no link in it) for the checkouts named by `names` (`.git`
    and the other metadata names), bare repositories and virtual environments."""
    checkouts: list[tuple[str, str]] = []
    bare: list[str] = []
    venvs: list[str] = []
    queue: deque[str] = deque([top])
    listed = 0
    while queue and listed < max_folders:
        folder = queue.popleft()
        entries = _listing(folder)
        listed += 1
        if entries is None:
            continue
        if entries.get(VENV_MARK) == "file":
            venvs.append(folder)
            continue
        if folder != top and entries.get("HEAD") == "file" and \
                entries.get("objects") == "folder" and entries.get("refs") == "folder":
            bare.append(folder)
            continue
        skip = set()
        if folder != top:
            for name in sorted(names):
                if entries.get(name) in ("folder", "file", "link"):  # a link: refused
                    checkouts.append((folder, name))
                    skip.add(name)
        else:
            skip = set(names)
        for name in sorted(entries):
            if entries[name] == "folder" and name not in skip:
                queue.append(os.path.join(folder, name))
    unwalked = tuple(sorted(queue))
    return Below(tuple(checkouts), tuple(bare), tuple(venvs), unwalked)


def activation_scripts(venv: str) -> list[str]:
    """A virtual environment's activation scripts (`bin/activate*`, `Scripts/activate*`
    on Windows' layout): what `. .venv/bin/activate` runs in the person's shell. venv
    and virtualenv write them when the environment is made; pip never does."""
    found = []
    for folder in ("bin", "Scripts"):
        entries = _listing(os.path.join(venv, folder)) or {}
        found += [os.path.join(venv, folder, name) for name in sorted(entries)
                  if name.startswith("activate") and entries[name] in ("file", "link")]
    return found
