"""Home under a read grant on Linux: the person's files shown, their configuration not.

How the rule (home_config.py, view.py's pattern rules) is rendered as mounts, and why
this way. A read grant of home (or of a folder holding it) becomes a fresh tmpfs at
home, read-only once its mount points are made, with each entry of home the view shows
bound back onto itself, read-only: the entries without a dot (a link among them made the
same link), the spec's own grants inside, and the places of code home_config reopens,
each found where a pattern names it. Nothing else of home is in the sandbox.

Why a tmpfs with the shown entries bound back, rather than home bound whole with each
dot entry hidden (docs/design.md has the measurements):
- it holds by structure for what is made later: a dot folder a tool makes in home while
  the run lasts is on the host's home, not in the tmpfs, so the sandbox never sees it,
  with or without Landlock; hiding each dot entry found at launch leaves one made after
  it to Landlock's closing alone;
- it costs what home's shown entries cost: bwrap pays for every mount (it reads the
  mount table again for each bind, so the cost grows faster than the count), and a home
  has a dozen or two entries without a dot against a hundred or more with one.
A file the person makes at home's top while the run lasts is not seen inside until the
next run; one replaced by renaming (an editor's save) is seen as it was at launch.

Listed at launch without following a link; a home with more than MAX_SHOWN entries to
bind refuses the launch, naming the folders to grant instead: the mounts would cost
seconds, and each needs an open descriptor until bwrap starts.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Literal, NamedTuple

from ..errors import LaunchError
from ..grants import Snapshot, is_within, pattern_paths
from ..home_config import DOT_ENTRIES
from ..view import View
from .ops import MountOp

MAX_SHOWN = 512  # entries of home bound back; more refuses the launch
MAX_EXPANDED = 256  # folders one reopened pattern may name
HOME_FOLDER = "home: a folder of its own, its dot entries hidden, its other entries shown"
SHOWN = "home: an entry without a dot, shown as it is"

EntryKind = Literal["folder", "file", "link", "other"]


class Entry(NamedTuple):
    """An entry of home at launch: a folder, a file, a link (`link`: its text), or
    another kind (a socket, a pipe, a device), which is never shown."""

    name: str
    kind: EntryKind
    link: str = ""


class HomeLayout(NamedTuple):
    """What of home the plan needs: `home` (resolved), its entries now, and each
    reopened pattern's folders and files there now (no link on their way)."""

    home: str
    entries: tuple[Entry, ...]
    expanded: Mapping[str, tuple[str, ...]]


def home_of(snapshot: Snapshot) -> str | None:
    """The folder whose dot entries the snapshot hides by pattern (home, resolved)."""
    rule = next((g for g in snapshot.patterns if g.name == DOT_ENTRIES and g.target), None)
    return rule.target[:-len(DOT_ENTRIES) + 1].rstrip("/") if rule and rule.target else None


def probe(snapshot: Snapshot) -> HomeLayout | None:
    """Home's entries and the reopened patterns' paths, read now; None where no read
    grant shows home."""
    home = home_of(snapshot)
    if home is None:
        return None
    entries: list[Entry] = []
    try:
        with os.scandir(home) as listing:
            found = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        found = []
    for item in found:
        try:
            mode = item.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            try:
                entries.append(Entry(item.name, "link", os.readlink(item.path)))
            except OSError:
                continue
        elif stat.S_ISDIR(mode):
            entries.append(Entry(item.name, "folder"))
        elif stat.S_ISREG(mode):
            entries.append(Entry(item.name, "file"))
        else:
            entries.append(Entry(item.name, "other"))
    expanded = {g.target: pattern_paths(g.target, MAX_EXPANDED) for g in snapshot.patterns
                if g.access == "read" and g.target}
    return HomeLayout(home, tuple(entries), expanded)


def shown_home(view: View, layout: HomeLayout | None) -> str | None:
    """Home, when the view shows it by a read rule (a grant of it, or of a folder holding
    it) and hides its dot entries: where the tmpfs goes; else None."""
    if layout is None or home_of(view.snapshot) != layout.home:
        return None
    rule = view.decides(layout.home)
    return layout.home if rule is not None and rule.effect == "read" else None


def entries_shown(view: View, layout: HomeLayout) -> list[Entry]:
    """The entries of home bound back as they are: those the rule showing home itself
    decides for (not a dot entry, a profile place, a hide, or a grant of their own,
    which is mounted as that grant). Too many refuses the launch."""
    home = layout.home
    shown = []
    for entry in layout.entries:
        if entry.kind == "other":
            continue  # a socket, pipe or device at home's top: never shown
        rule = view.decides(os.path.join(home, entry.name))
        if rule is not None and rule.allows and not rule.pattern \
                and is_within(home, rule.path):
            shown.append(entry)
    if sum(1 for e in shown if e.kind != "link") > MAX_SHOWN:
        raise LaunchError(
            f"home ({home}) has {len(shown)} entries without a dot at its top; a read "
            f"grant of home binds each one back (at most {MAX_SHOWN}), which would cost "
            "seconds at every start",
            hint='grant the folders of home the command needs instead (files.read = '
            '["~/src", "~/notes"])')
    return shown


def home_mounts(view: View, layout: HomeLayout) -> list[tuple[int, MountOp]]:
    """Home as a folder of its own, as mounts with their order at one depth (0 opens, 1
    what is inside): a tmpfs (made read-only last, by the plan), each entry the view
    shows there bound back (a link made the same link). Each place of code a pattern
    reopens is bound where it is found (`reopened`). What is under home but not bound is
    in no mount: nothing is hidden there again, and no placeholder is made for it."""
    home = layout.home
    found: list[tuple[int, MountOp]] = [(0, MountOp("tmpfs", home, reason=HOME_FOLDER))]
    for entry in entries_shown(view, layout):
        path = os.path.join(home, entry.name)
        if entry.kind == "link":
            found.append((1, MountOp("symlink", path, entry.link, SHOWN)))
        else:
            found.append((1, MountOp("ro-bind", path, path, SHOWN)))
    return found


def reopened(view: View, layout: HomeLayout | None) -> list[str]:
    """Each path a reopened pattern names now where that pattern decides (a spec's own
    rule at the path itself, or deeper, decides instead)."""
    if layout is None or home_of(view.snapshot) != layout.home:
        return []
    found = []
    for grant in view.snapshot.patterns:
        if grant.access != "read" or not grant.target:
            continue
        for path in layout.expanded.get(grant.target, ()):
            rule = view.decides(path)
            if rule is not None and rule.pattern and rule.grant == grant:
                found.append(path)
    return found

