"""Every file and folder the person's own settings name, with where its links lead:
judged for every write grant, whether or not a repository is there.

person_settings.py reads the shells' startup files for what they source and git's
system and global settings for every path a value gives; this module adds git's
includes, followed as git follows them, and resolves each path through every link on
the way, at any depth (os.path.realpath): GNU Stow, yadm and rcm link the files the
settings name into a dotfiles repository, and a link found by no walk of home (one
three folders deep, `~/.config/git/hooks/post-checkout -> ~/dotfiles/githooks/...`)
leads there all the same. A folder git runs the entries of (`core.hooksPath`,
`init.templateDir`) has its entries resolved too, a template's two levels deep
(`hooks/NAME`): each may be a link of its own, and git runs (or copies into every new
repository) what it leads to. Each such hook is read as a script for what it names
(hook_text.py: `~/work/team/lint.sh`, a virtual environment whose python it runs),
named here in turn; what it names from a repository's top is read per repository
(dotfiles.py), and what cannot be bounded refuses every writing launch (grants.py).
The folders git's own settings files are in are not walked: those files are named
here too, each resolved.

Two rules follow, by where the grant lies against what is named (a name in no table):
- a write grant that is a named file or folder, or lies inside a folder named as one
  (a hooks folder, a template folder), is refused at launch, naming the setting
  (grants.py): holding it read-only would leave the grant nothing to write, and the
  person asked to write the very thing their own settings run;
- a write grant that holds one keeps it read-only, held when missing, by the name the
  setting gives and by where its links lead (dotfiles.py); one that holds a link on
  the way is refused, since the sandbox could point it elsewhere.

Facts this follows (git's config.c): an include is read relative to the including
file, at most 10 deep, a missing one silently skipped; `~/` is expanded in a path
value; `maintenance.repo` names a repository git runs maintenance in, by its settings.
"""

from __future__ import annotations

import os
from typing import Literal, NamedTuple

from .git_config import parse_git_config, person_git_configs
from .host_walk import read_small

Kind = Literal["file", "folder"]

MAX_INCLUDE_DEPTH = 10  # git's own limit
MAX_ENTRIES = 1024  # entries of one named folder resolved (the person's own folder)
# Folders git runs the entries of, and how deep those entries go (a template's hooks/).
CODE_FOLDERS = {"core.hookspath": 1, "init.templatedir": 2}


class Named(NamedTuple):
    """A path the settings name: `path` as named (`~` expanded, normalized), `real`
    with every link resolved, `kind` "folder" where what is inside it runs (a grant
    inside is refused), `why` the setting and the file that gives it."""

    path: str
    real: str
    kind: Kind
    why: str
    links: tuple[str, ...] = ()  # each link met on the way from `path` to `real`

    def paths(self) -> tuple[str, ...]:
        return (self.path,) if self.real == self.path else (self.path, self.real)


def _shown(path: str, home: str) -> str:
    return "~" + path[len(home):] if path.startswith(home + "/") else path


def _expand(value: str, relative_to: str, home: str) -> str | None:
    """A path value as git expands it (`~/`, `:(optional)`), absolute, normalized."""
    value = value.removeprefix(":(optional)")
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    elif not value or value.startswith(("%(prefix)/", "~")):
        return None  # git's installation prefix, or ~user: no file of the person's
    return os.path.normpath(os.path.join(relative_to, value))


def git_named(home: str) -> list[tuple[str, Kind, str, str]]:
    """(path, kind, why, key) of every path the person's git settings name (system and
    global, through their includes): each include, each folder whose entries git runs,
    each repository `maintenance.repo` names (its .git), every other absolute or `~/`
    path a value gives (person_settings.value_paths)."""
    from .person_settings import value_paths

    found: list[tuple[str, Kind, str, str]] = []
    pending = [(path, 0) for path in person_git_configs(home)]
    seen: set[str] = set()
    while pending:
        config, depth = pending.pop(0)
        data = read_small(config, limit=1 << 20) if depth <= MAX_INCLUDE_DEPTH else None
        if data is None or os.path.realpath(config) in seen:
            continue
        seen.add(os.path.realpath(config))
        shown = _shown(config, home)
        for key, value in parse_git_config(data.decode("utf-8", "surrogateescape")):
            if value is None:
                continue
            why = f"{key} = {value} in your {shown}"
            if key == "include.path" or (key.startswith("includeif.")
                                         and key.endswith(".path")):
                path = _expand(value, os.path.dirname(config), home)
                if path is not None:
                    pending.append((path, depth + 1))
                    found.append((path, "file", f"{why}: git reads settings from it", key))
            elif key == "maintenance.repo":
                found += [(os.path.join(p, ".git"), "folder", f"{why}: git runs its "
                           "settings there", key) for p in value_paths(key, value, home)]
            else:
                kind: Kind = "folder" if key in CODE_FOLDERS else "file"
                bounds: list[str] = []  # a pattern's folder: any file in it (red team 5)
                found += [(p, "folder" if p in bounds else kind, f"{why}: git reads or "
                           "runs it in every repository", key)
                          for p in value_paths(key, value, home, bounds=bounds)]
                found += [(p, "folder", f"{why}: a pattern git's shell matches in it, or "
                           "a folder it changes to or looks programs up in",
                           key) for p in bounds]
    return found


def _entries(folder: str, depth: int) -> list[str]:
    """The entries of `folder` (links followed to list it), `depth` levels deep, at most
    MAX_ENTRIES: what git runs or copies from a folder it is named."""
    found: list[str] = []
    pending = [(folder, 1)] if depth > 0 else []
    while pending and len(found) < MAX_ENTRIES:
        current, level = pending.pop(0)
        try:
            with os.scandir(current) as listing:
                entries = sorted(e.name for e in listing)
        except OSError:
            continue
        for name in entries[:MAX_ENTRIES - len(found)]:
            path = os.path.join(current, name)
            found.append(path)
            if level < depth:
                pending.append((path, level + 1))
    return found


class _Found(NamedTuple):
    named: tuple[Named, ...]
    hooks: tuple[str, ...]  # each hook git runs (or copies) from the person's settings
    refusals: tuple[tuple[str, str, str], ...]  # what the hooks name, unbounded


def named_by_settings(home: str) -> tuple[Named, ...]:
    """Every path the person's shells source and their git settings name, each with
    its links resolved, and each entry of a folder git runs the entries of, and what
    each hook there names (hook_text.py): read, never run, once per start within
    home_places.found_once (resolving the grants and analysing each written folder
    ask), again on every start."""
    return _found(home).named


def global_hooks(home: str) -> tuple[str, ...]:
    """Each hook git runs as the person in any repository (an entry of their
    `core.hooksPath`) or copies into every repository it makes (`init.templateDir`'s
    `hooks/NAME`): what they name from a repository's top is read per repository
    (dotfiles.py)."""
    return _found(home).hooks


def hook_refusals(home: str) -> tuple[tuple[str, str, str], ...]:
    """(where, what, change) of what the person's hooks name that lnk cannot bound: a
    launch that writes anything is refused (grants.py), as for their shells' files."""
    return _found(home).refusals


def _is_hook(entry: str, folder: str, key: str) -> bool:
    """Whether `entry` of the folder `key` names is a hook git runs or copies: a file
    (a link followed) of the hooks folder itself, or of a template's `hooks/`; git
    never runs a `.sample`."""
    parent = folder if key == "core.hookspath" else os.path.join(folder, "hooks")
    return os.path.dirname(entry) == parent and not entry.endswith(".sample") and \
        os.path.isfile(entry)


def _found(home: str) -> _Found:
    from .home_places import _Resolver, found_once_store
    from .hook_text import read_hook
    from .person_settings import shell_sources

    home = os.path.normpath(home)
    store = found_once_store("settings_named")  # resolving, then each written folder
    if store is not None and home in store:
        known: _Found = store[home]
        return known
    found: dict[str, Named] = {}
    resolver = _Resolver()  # as the kernel resolves, each folder once

    def add(path: str, kind: Kind, why: str) -> None:
        if path not in found:
            real, links = resolver.resolve(path)
            found[path] = Named(path, real, kind, why, links)

    sources = shell_sources(home)
    for path, why in sources.files:
        add(path, "file", f"{why}: it runs in your shell")
    for path, why in sources.runs_in:
        add(path, "folder", f"{why} in your shell")
    for path, why in sources.named:
        add(path, "file", f"{why}, which your shell may read or run")
    for config in person_git_configs(home):
        add(os.path.normpath(config), "file", "git's own settings, read in every "
            "repository")
    hooks: dict[str, None] = {}
    for path, kind, why, key in git_named(home):
        add(path, kind, why)
        for entry in _entries(path, CODE_FOLDERS.get(key, 0)):
            add(entry, "folder" if os.path.isdir(entry) else "file",
                f"an entry of {_shown(path, home)} ({why})")
            if _is_hook(entry, path, key):
                hooks[entry] = None
    refusals: dict[tuple[str, str, str], None] = {}
    for hook in hooks:
        text = read_hook(hook, home, None)
        for path, named_kind, why in text.held:
            add(path, named_kind, f"{why}, and git runs the hook {_shown(hook, home)} as "
                "you in every repository")
        refusals.update(dict.fromkeys(text.refusals))
    result = _Found(tuple(found.values()), tuple(hooks), tuple(refusals))
    if store is not None:
        store[home] = result
    return result
