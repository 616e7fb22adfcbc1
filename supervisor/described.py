"""The parts of a description shared with `check`: a grant as described, and home's
configuration under a read grant of home. Apart from describe.py, which asks the OS's
backend what holds without namespaces, so that `check` (which each OS's own check
imports) reaches no backend through them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .grants import Grant, is_within, pattern_paths

if TYPE_CHECKING:
    from .view import View


@dataclass(frozen=True)
class Described:
    name: str
    target: str | None
    why: str


@dataclass(frozen=True)
class HomeConfiguration:
    """Home's configuration under a read grant of home (home_config.py): `hidden`, the
    entries of home hidden now ("~/.aws"...); `shown`, what of them the sandbox sees (the
    places of code reopened, the spec's own grants there); `how_to_show`, the key to add."""

    home: str
    hidden: list[str]
    shown: list[Described]
    how_to_show: str



def home_configuration(view: View) -> HomeConfiguration | None:
    """What of home's configuration the sandbox is denied and shown, where a read grant
    shows home: its entries read from the host now (the rule is by structure: a dot
    entry made later is hidden as these are)."""
    from .home_config import DOT_ENTRIES, SHOW_HINT
    from .home_hidden import is_undotted
    from .policy import profile_names

    snapshot = view.snapshot
    rule = next((g for g in snapshot.patterns if g.name == DOT_ENTRIES and g.target), None)
    if rule is None or rule.target is None:
        return None
    home = rule.target[:-len(DOT_ENTRIES) + 1].rstrip("/")
    profiles = {name[2:] for name in profile_names()}

    def configuration(path: str) -> bool:
        top = path[len(home) + 1:].split("/", maxsplit=1)[0] if is_within(path, home) else ""
        return top.startswith(".") or top in profiles

    try:
        entries = sorted(os.listdir(home))
    except OSError:
        entries = []
    hidden = [f"~/{e}" for e in entries if configuration(os.path.join(home, e))
              and view.access(os.path.join(home, e)) == "hide"]
    hidden += [g.name for g in snapshot.grants if g.access == "hide" and g.key is None
               and is_undotted(g.reason) and g.target and os.path.lexists(g.target)]
    shown = [Described(g.name, g.target, g.key or g.reason)
             for g in (*snapshot.grants, *snapshot.patterns)
             if g.access in ("read", "write") and g.target and configuration(g.target)
             and present(g)]
    return HomeConfiguration(home, hidden, shown, SHOW_HINT)


def present(grant: Grant) -> bool:
    """Whether a grant shows something now: a pattern lnk-sandbox reopens only where it
    names a folder there (its rule stays in the snapshot, for when one is made)."""
    from .home_config import is_pattern

    if grant.target is None or not is_pattern(grant.name) or grant.key is not None:
        return grant.target is not None
    return bool(pattern_paths(grant.target, 1))
