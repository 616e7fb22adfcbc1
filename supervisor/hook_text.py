"""What a hook git runs as the person names: its text read as the shells' startup files
are read (person_settings.py), from the work tree's top, where git runs it.

A hook is held read-only (a repository's `.git/hooks`, the person's `core.hooksPath`),
but what it runs is not: a global pre-commit that runs `~/work/team/lint.sh`, a
repository's `exec ./scripts/pre-commit.sh`, pre-commit's stub running the project's
`.venv/bin/python3` (red team 26f). So each hook is read as a script, by the reader the
startup files use (shell_words.py: words, quotes, substitutions, what is sourced), and
what it names is held like what the startup files name:

- a path named absolutely or from home is held read-only inside a write grant (held
  when missing), and a grant that is it, or lies inside a folder it runs from, is
  refused (settings_named.py for the person's hooks);
- a relative path is found from the work tree's top: githooks(5), "Before Git invokes
  a hook, it changes its working directory to either $GIT_DIR in a bare repository or
  the root of the working tree in a non-bare repository". It is held where a file is
  there, at the top of each repository the hook runs in (a word of a hook is often no
  path: `s/a/b/`, `src/`);
- a program of a virtual environment (`VENV/bin/NAME` beside `VENV/pyvenv.cfg`, PEP
  405) runs that environment's code, every `.pth` of its site-packages at its start:
  the environment is held whole;
- what cannot be bounded (a sourced name whose start only the running shell knows, a
  reader's bound) refuses a launch that writes where the hook runs.

The common idioms stay bounded: git's own folders as a hook finds them
(`$(git rev-parse --show-toplevel)`, `--git-dir`, `--git-common-dir`, `--git-path X`,
`$GIT_DIR`: the work tree's top and its `.git`, which git sets for a hook), and
`$(dirname "$0")`, the hook's own folder. A name in the repository's `.git` (a global
hook chaining to `.git/hooks/pre-commit`) is left to the repository's own analysis,
which holds its git directory and reads its hooks as hooks.

Stated gaps: what the project's package manager installs below `node_modules` (husky's
`PATH="node_modules/.bin:$PATH"`, lefthook's `node_modules/lefthook/bin/index.js`) is
not held: installing is the common work, and `npm ci` removes the folder whole, so a
hold there would fail every install; the person's commit runs what a run installed
there, as their `npm test` does (the record's build files). A hook that is a program
(no script: a NUL byte in its start) names nothing lnk reads.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal, NamedTuple

from .below_top import VENV_MARK
from .host_walk import lstat_kind

Kind = Literal["file", "folder"]

# Where a global hook's relative names would be found, read with no repository (the
# person's hooks, for every grant): what lies there is left to each repository's reading.
_NO_TOP = "/\x03no-top"
# A dependency folder the project's package manager fills (node's module resolution
# looks for it by this name): not held (the stated gap above).
INSTALLED = "node_modules"
# (compiled when a hook names it: a start whose hooks never do pays nothing)
_REV_PARSE = (r"\$\(\s*git\s+rev-parse\s+(--[a-z-]+)(?:\s+([\w./-]+))?\s*\)"
              r"|`\s*git\s+rev-parse\s+(--[a-z-]+)(?:\s+([\w./-]+))?\s*`")
_GIT_FOLDERS = {"--show-toplevel": ".", "--show-cdup": "./", "--git-dir": ".git",
                "--absolute-git-dir": ".git", "--git-common-dir": ".git"}


class HookText(NamedTuple):
    """What one hook names. `held`: (path, kind, why) held read-only, when missing too:
    "folder" a folder it runs code from (one on PATH, where a sourced name not all
    literal leads, a virtual environment whole: a grant inside it is refused), "file"
    a file it names or sources, or a folder a word not all literal may name (held,
    refusing no grant, as the shells' `folders`); `there`: (path, why) found from the
    top, held as the file that is there; `refusals`: (where, what, change) for what
    cannot be bounded; `from_top`: whether it names anything from the top (read with
    no top, the rest is what it names at every top)."""

    held: tuple[tuple[str, Kind, str], ...] = ()
    there: tuple[tuple[str, str], ...] = ()
    refusals: tuple[tuple[str, str, str], ...] = ()
    from_top: bool = False


def _git_folders(text: str) -> str:
    """The hook's text with git's own folders as the hook finds them: relative to the
    top, where git runs it (`$(git rev-parse --git-dir)/hooks/x` is `.git/hooks/x`)."""
    def folder(match: re.Match[str]) -> str:
        option = match.group(1) or match.group(3)
        named = match.group(2) or match.group(4)
        if option == "--git-path" and named:
            return ".git/" + named
        found = _GIT_FOLDERS.get(option)
        return match.group(0) if found is None else found + (f" {named}" if named else "")
    return re.sub(_REV_PARSE, folder, text) if "rev-parse" in text else text


def interpreter_venv(path: str) -> str | None:
    """The virtual environment `path` is a program of, or the `bin` folder of
    (`VENV/bin/python3`, `VENV/Scripts/x`, with `VENV/pyvenv.cfg`): None for another."""
    for folder in (os.path.dirname(path), path):
        if os.path.basename(folder) in ("bin", "Scripts"):
            venv = os.path.dirname(folder)
            if lstat_kind(os.path.join(venv, VENV_MARK)) == "file":
                return venv
    return None


def _installed(path: str, top: str) -> bool:
    """Whether `path` lies below the top's dependency folder (INSTALLED), or in the
    repository's git directory, which its own analysis holds."""
    if not path.startswith(top + "/"):
        return False
    parts = path[len(top) + 1:].split("/")
    return INSTALLED in parts or parts[0] == ".git"


def read_hook(hook: str, home: str, top: str | None) -> HookText:
    """What the hook at `hook` names, read from the repository checked out at `top`
    (None: the person's hook read for every grant, its relative names left out). Read,
    never run; once per start within home_places.found_once, once for every top where
    it names nothing from the top (a global hook, in each repository analysed), and
    once for every hook of the same text that names nothing from the top nor its own
    folder (git-lfs's four hooks, in each repository below a written folder). About
    0.3 ms for a hook of 350 bytes (git-lfs's)."""
    from .once_per_start import store_for as found_once_store

    store = found_once_store("hook_text")
    key = f"{home}\0{top or ''}\0{hook}"
    if store is not None and key in store:
        known: HookText = store[key]
        return known
    text = read_hook(hook, home, None) if top is not None else None
    if text is None:
        text = _same_text(hook, home, store)
    elif text.from_top:
        text = _read(hook, home, top)
    if store is not None:
        store[key] = text
    return text


def _same_text(hook: str, home: str, store: dict[str, Any] | None) -> HookText:
    """The hook read with no top: as a hook of the same text was, where that one named
    nothing from the top nor beside it (its reasons then name this hook)."""
    from .host_walk import read_small
    from .person_settings import _READ_LIMIT

    data = read_small(hook, limit=_READ_LIMIT + 1) if store is not None else None
    key = f"{home}\0text\0" + data.decode("utf-8", "surrogateescape") if data else None
    shown = _shown(hook, home)
    if store is not None and key is not None and key in store:
        kept: tuple[HookText, str] = store[key]
        return _renamed(*kept, shown)
    text = _read(hook, home, None)
    folders = {os.path.dirname(hook), os.path.dirname(os.path.realpath(hook))}
    if store is not None and key is not None and not text.from_top and not any(
            os.path.dirname(p) in folders or p in folders or any(
                p.startswith(f + "/") for f in folders)
            for p in (*(p for p, _, _ in text.held), *(p for p, _ in text.there))):
        store[key] = (text, shown)
    return text


def _shown(path: str, home: str) -> str:
    home = os.path.normpath(home)
    return "~" + path[len(home):] if path.startswith(home + "/") else path


def _renamed(text: HookText, was: str, shown: str) -> HookText:
    """`text` as read from a hook shown as `was`, its reasons naming `shown` instead."""
    return text._replace(
        held=tuple((p, k, w.replace(was, shown)) for p, k, w in text.held),
        there=tuple((p, w.replace(was, shown)) for p, w in text.there),
        refusals=tuple((w.replace(was, shown), a, c) for w, a, c in text.refusals))


def _read(hook: str, home: str, top: str | None) -> HookText:
    from .person_settings import _Reading, follow

    base = os.path.normpath(top) if top is not None else _NO_TOP
    reading = _Reading(os.path.normpath(home), os.environ)
    reading.top, reading.cds = base, {base: None}
    reading.variables["GIT_DIR"] = [".git"]  # git sets it for a hook: from the top
    reading.pending = [(hook, "a hook git runs as you")]
    follow(reading, prepare=_git_folders)
    held: dict[str, tuple[Kind, str]] = {}
    there: dict[str, str] = {}
    from_top = any(p.startswith(base + "/") and not _installed(p, base) for p in (
        *reading.relative, *reading.found, *reading.named, *reading.runs_in,
        *reading.folders))

    def hold(path: str, kind: Kind, why: str) -> None:
        if (path == base or path.startswith(base + "/")) and (
                top is None or _installed(path, base)):
            return
        venv = interpreter_venv(path)
        if venv is not None:
            held.setdefault(venv, ("folder", f"{why}: a program of the virtual environment "
                                             f"{venv}, whose code (its site-packages, every "
                                             ".pth there at its start) runs as you"))
        else:
            held.setdefault(path, (kind, why))

    for path, why in reading.relative.items():
        if top is not None and not _installed(path, base) and \
                lstat_kind(path) in ("file", "link"):
            if interpreter_venv(path) is not None:
                hold(path, "file", why)
            else:
                there.setdefault(path, why)
    for path, why in list(reading.found.items())[1:]:
        if path not in reading.relative:
            hold(path, "file", why)
    for path, why in reading.named.items():
        if ":" not in path or not all(e.startswith("/") for e in path.split(":")):
            hold(path, "file", why)  # a list's elements are named each (`PATH=...`)
    for path, why in reading.runs_in.items():
        if not path.startswith(base + "/") or lstat_kind(path) != "missing":
            hold(path, "folder", why)  # from the top: where it is there
    for path, why in reading.folders.items():
        hold(path, "file", why)
    return HookText(tuple((p, k, w) for p, (k, w) in held.items()),
                    tuple(there.items()), tuple(reading.refusals), from_top)
