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
  looks for). Its packages (`lib`, `lib64`, `Lib`: thousands of folders) are not walked;
  the rest of it is, so a `pyvenv.cfg` a run leaves above the person's repository
  hides nothing below it.

The walk lists at most MAX_FOLDERS folders (breadth first, so the nearest first: depth
is bounded by the same count), then stops and says where (`unwalked`), as it says each
folder it could not list (a folder a run made searchable but not listable, chmod 311,
which git still passes through). What it did not list is not held by this walk, and
`describe`, and so the question asked before a spec runs, names it. Listing a folder
costs one getdents; an entry's kind comes from the listing itself (d_type), so most
entries cost nothing more.

What a walk finds is remembered per written folder (`Memory`, in `$LNK_HOME`, which no
sandbox sees): what was the person's at one launch stays theirs, so each later run
holds every remembered checkout, bare repository and environment that is still there,
whatever the walk finds now. A run cannot hide what an earlier launch found, with more
folders, a mark or a mode. The memory of a folder holds what launches at it and at every
folder below it found, and a launch reads its own and each folder's above it
(view._remembered): a run writing `~/src/zz` holds what a launch at `~/src` found there,
and the other way, however many folders a first run made to exhaust the walk.
"""

from __future__ import annotations

import os
from collections import deque
from typing import NamedTuple

from .host_walk import lstat_kind

MAX_FOLDERS = 256
VENV_MARK = "pyvenv.cfg"
VENV_PACKAGES = frozenset(("lib", "lib64", "Lib"))  # a venv's packages: not walked
MAX_REMEMBERED = 4096  # what one written folder's memory keeps, at most


class Below(NamedTuple):
    """`checkouts`: (folder, metadata name) of each checkout below the top; `bare`: each
    bare git repository; `venvs`: each virtual environment (the top's own included);
    `unwalked`: the folders the walk did not list (its bound reached, or one it could
    not list), sorted."""

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
    unlisted: list[str] = []
    listed = 0
    while queue and listed < max_folders:
        folder = queue.popleft()
        entries = _listing(folder)
        listed += 1
        if entries is None:
            unlisted.append(folder)
            continue
        skip = set()
        if entries.get(VENV_MARK) == "file":
            venvs.append(folder)
            skip = set(VENV_PACKAGES)
        if folder != top and entries.get("HEAD") == "file" and \
                entries.get("objects") == "folder" and entries.get("refs") == "folder":
            bare.append(folder)
            continue
        if folder != top:
            for name in sorted(names):
                if entries.get(name) in ("folder", "file", "link"):  # a link: refused
                    checkouts.append((folder, name))
                    skip.add(name)
        else:
            skip |= set(names)
        for name in sorted(entries):
            if entries[name] == "folder" and name not in skip:
                queue.append(os.path.join(folder, name))
    unwalked = tuple(sorted((*queue, *unlisted)))
    return Below(tuple(checkouts), tuple(bare), tuple(venvs), unwalked)


def activation_scripts(venv: str) -> list[str]:
    """A virtual environment's activation scripts (`bin/activate*`, `Scripts/activate*`
    on Windows' layout, in any letter case: venv writes PowerShell's as `Activate.ps1`):
    what `. .venv/bin/activate` runs in the person's shell. venv and virtualenv write
    them when the environment is made; pip never does."""
    found = []
    for folder in ("bin", "Scripts"):
        entries = _listing(os.path.join(venv, folder)) or {}
        found += [os.path.join(venv, folder, name) for name in sorted(entries)
                  if name.lower().startswith("activate")
                  and entries[name] in ("file", "link")]
    return found


# -- what earlier launches found ---------------------------------------------------------------

def found_items(below: Below) -> tuple[tuple[str, str], ...]:
    """What a walk found, as the memory keeps it: (folder, what), `what` a checkout's
    metadata name, "bare" or "venv"."""
    return (*((folder, name) for folder, name in below.checkouts),
            *((folder, "bare") for folder in below.bare),
            *((folder, "venv") for folder in below.venvs))


def with_remembered(below: Below, top: str, remembered: tuple[tuple[str, str], ...]
                    ) -> Below:
    """`below` with each remembered item below `top` that is still there, as the walk
    would have found it (its metadata, HEAD, or pyvenv.cfg present, no link looked
    through here: a link on the way is refused where it is held)."""
    checkouts, bare, venvs = list(below.checkouts), list(below.bare), list(below.venvs)
    for folder, what in remembered:
        if not folder.startswith(top + "/"):
            continue
        if what == "venv":
            if folder not in venvs and lstat_kind(os.path.join(folder, VENV_MARK)) == "file":
                venvs.append(folder)
        elif what == "bare":
            if folder not in bare and lstat_kind(os.path.join(folder, "HEAD")) == "file":
                bare.append(folder)
        elif (folder, what) not in checkouts and lstat_kind(
                os.path.join(folder, what)) != "missing":
            checkouts.append((folder, what))
    return Below(tuple(checkouts), tuple(bare), tuple(venvs), below.unwalked)


def memory_name(top: str) -> str:
    """Where `$LNK_HOME` keeps what the walks of the written folder `top` found: named by
    FNV-1a of the path, 64 bits twice (hashlib is not imported at a default start, by
    test_start_path.py); the file names its folder, and is read only for it."""
    digest = ""
    for basis in (0xCBF29CE484222325, 0x84222325CBF29CE4):
        value = basis
        for byte in top.encode("utf-8", "surrogateescape"):
            value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        digest += f"{value:016x}"
    return "below/" + digest


def parse_memory(data: bytes | None, top: str) -> tuple[tuple[str, str], ...]:
    """The remembered items of `top` (none for what cannot be read as written)."""
    import json

    try:
        kept = json.loads(data or b"{}")
        if kept.get("top") != top:
            return ()
        return tuple((str(f), str(w)) for f, w in kept.get("found", []))[:MAX_REMEMBERED]
    except (ValueError, TypeError, AttributeError):
        return ()


def memory_data(top: str, items: tuple[tuple[str, str], ...]) -> bytes:
    import json

    return json.dumps({"top": top, "found": [list(i) for i in items[:MAX_REMEMBERED]]},
                      indent=0).encode()
