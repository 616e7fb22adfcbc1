"""Private caches: the folders a spec's tools keep their caches in (`[files] caches =
["~/.npm", "~/.cache/pip"]`), each a persistent folder of lnk-sandbox's own mounted at
that path, so tools keep what they downloaded from one run to the next.

Why not grant the person's own cache: a cache is read back and run from later (npm
runs a package's install scripts, pip a wheel's code), outside any sandbox too, so a
sandbox that wrote the person's cache could put code there that runs as them. A
private cache is written only by sandboxes, and only those of one spec (or one agent,
where the spec names one): `$LNK_HOME/caches/spec-HASH/NAME` or `.../agent-NAME/NAME`,
hidden from every sandbox like the rest of `$LNK_HOME`. The person's own folder at that
path is never opened: inside, the private one is mounted over it.

A cache is a folder in home (`~/...`). What one run leaves in it the next runs of its
scope may run, as any tool's cache works (a wheel, npx's packages): the scope bounds it,
and the person's own folders are never reached. It is never one of home's places that
run as the person (`~/.config`, `~/.gitconfig`, a PATH folder: home_places.py), nor
inside one (`~/.claude/x`), nor a folder holding a holder, whose files run whatever
reads them (`~/.cargo` holds `~/.cargo/bin`): kept there, they would run in every later
sandbox of the scope, whatever program it starts. Nor inside or around a grant the spec
writes or reads: the spec would then say two things of one folder.
"""

from __future__ import annotations

import os
from typing import NamedTuple

CACHES = "caches"


class Cache(NamedTuple):
    """One private cache: `name` as the spec wrote it (`~/.npm`), `path` where it is
    mounted (home resolved, the rest as written), `store` the folder of lnk-sandbox's
    own that holds it; `key` and `line` where the spec wrote it."""

    name: str
    path: str
    store: str
    key: str
    line: int | None = None


def scope(source: str, agent: str | None) -> str:
    """Whose caches: an agent's (shared by its specs), else the spec file's, by its
    resolved path (editing the spec keeps its caches)."""
    if agent:
        return f"agent-{agent}"
    from .digests import sha256

    digest = sha256(os.path.realpath(source).encode("utf-8", "surrogateescape"))
    return f"spec-{digest.hexdigest()[:16]}"


def store_for(lnk_home: str, source: str, agent: str | None, name: str) -> str:
    """The folder of lnk-sandbox's own holding the cache `name` (`~/.npm`)."""
    from urllib.parse import quote  # with ipaddress, 2 ms a start that names no cache

    return os.path.join(lnk_home, CACHES, scope(source, agent), quote(name, safe=""))


def clear(folder: str) -> int:
    """Empty `folder` (a scope's caches, or all of them) and return how many entries
    were removed. Moved aside first, so a run starting meanwhile finds it whole or
    gone, never half emptied; what a sandbox left unreadable is made removable."""
    from .state import remove_tree

    if not os.path.lexists(folder):
        return 0
    aside = f"{folder}.clearing-{os.getpid()}"
    os.rename(folder, aside)
    count = sum(len(dirs) + len(files) for _, dirs, files in os.walk(aside))
    remove_tree(aside)
    return count
