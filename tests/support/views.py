"""Views for the backends' unit tests: a snapshot with the dot files a test gives."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from supervisor.dotfiles import DotFiles, Protected
from supervisor.grants import Snapshot, is_within
from supervisor.policy import LINUX_SYSTEM_FOLDERS, MACOS_SYSTEM_FOLDERS
from supervisor.view import View, view_of, written_tops


def linux_view(snapshot: Snapshot,
               dot_files: Mapping[str, DotFiles] = MappingProxyType({})) -> View:
    """The view a Linux plan renders, with `dot_files` by written top."""
    return view_of(snapshot, LINUX_SYSTEM_FOLDERS, dot_files)


def mac_view(snapshot: Snapshot, protected: Iterable[Protected] = ()) -> View:
    """The view a macOS profile renders, each protected path given to the deepest
    written top holding it (its link, for one through a link), else to the first."""
    tops = [g.target for g in written_tops(snapshot) if g.target]
    found: dict[str, list[Protected]] = {}
    for item in protected:
        where = [t for t in tops if is_within(item.link or item.path, t)
                 or is_within(item.path, t)]
        top = max(where, key=len) if where else (tops[0] if tops else "")
        found.setdefault(top, []).append(item)
    return view_of(snapshot, MACOS_SYSTEM_FOLDERS,
                   {top: DotFiles(top, tuple(items)) for top, items in found.items()})
