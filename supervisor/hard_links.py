"""Home's startup files with more than one name: a hard link no link walk can see.

A symbolic link says where it leads, and home_places.py and settings_named.py follow
every one of them: a file that runs as the person, reached through links into a write
grant, is kept read-only there. A hard link says nothing: `~/.bashrc` and
`~/dotfiles/bashrc` made with `ln` are one file with two names, equal in every way, and
which other names a file has is known only by walking every folder of its filesystem.
A sandbox writing `~/dotfiles` then writes the person's `.bashrc` through the other
name, and no read-only name of it holds (red team 2).

So each file that runs as the person is looked at once per launch that writes a
folder: the table's files (runs_as_you.HOME_PLACES, and what home_places.py finds by
links and in the environment), git's own settings files and every file the person's
settings name (settings_named.py), where their links lead. One with more than one name
(st_nlink > 1) on the filesystem of a write grant (the same st_dev) refuses the launch,
naming it: its other name may lie in the grant, and finding it would mean walking the
grant to its bottom, which no bound on a start holds. A file on another filesystem
cannot be linked from the grant. The fix is the person's, once: a symbolic link (which
is followed and held) or a copy in place of the hard link.

Only these files are looked at (about a hundred stats, most of them of missing files):
a folder place's own files (`~/.config/nvim/init.vim`) are not, as a stated gap. Nor
is a file only the launch environment names (environment_paths.py), a stated gap too:
conda links its environments' programs from its package cache by hard links
(`CONDA_PYTHON_EXE=~/miniconda3/bin/python` has two names), so judging those would
refuse every conda user's launch in their home's filesystem.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .home_places import Place
    from .settings_named import Named

# Files the distribution installs (a package manager's, read-only to the person, and
# hard-linked by some stores: the Nix store's optimisation): never refused for.
_SYSTEM = ("/usr/", "/nix/store/", "/gnu/store/", "/snap/", "/System/", "/Library/")


class HardLinked(NamedTuple):
    """A file that runs as the person with `names` names: `path` as its tool reads
    it, `real` where its symbolic links lead, `device` its filesystem, `what` why it
    runs."""

    path: str
    real: str
    names: int
    device: int
    what: str


def startup_files(places: tuple[Place, ...], named: tuple[Named, ...]
                  ) -> list[tuple[str, str, str]]:
    """(path, real, what) of every file that runs as the person, each once."""
    found: dict[str, tuple[str, str, str]] = {}
    for place in places:
        if place.kind == "file" and not place.environment:  # see the module's note
            found.setdefault(place.real, (place.path, place.real,
                                          f"{place.name}: {place.what}"))
    for item in named:
        if item.kind == "file":
            found.setdefault(item.real, (item.path, item.real, item.why))
    return [entry for real, entry in found.items() if not real.startswith(_SYSTEM)]


def hard_linked(places: tuple[Place, ...], named: tuple[Named, ...]
                ) -> tuple[HardLinked, ...]:
    """The files of `startup_files` that are regular files with more than one name."""
    linked = []
    for path, real, what in startup_files(places, named):
        try:
            info = os.stat(real)
        except OSError:
            continue  # missing: most of them
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            linked.append(HardLinked(path, real, info.st_nlink, info.st_dev, what))
    return tuple(linked)
