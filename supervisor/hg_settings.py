"""What a Mercurial (or Sapling) repository's own settings name, read without running hg.

Used for a repository AROUND a write grant (`cd ~/proj/sub` in the person's Mercurial
repository ~/proj): its `.hg` lies outside the grant and is not writable, but its hgrc
may name files inside it, which the person's hg runs on its next command: `[hooks]`
(run by the shell at the repository's root, or `python:FILE:function`), `[extensions]`
(Python files loaded), merge tools, the editor, `%include`d settings files.

By structure, not by key: every word of every value (and each `--opt=PATH`, and a
`python:` hook's file) that names a path by a `/` or `~/` is a path hg may read or run,
taken from the repository's root (where hooks run) and from the settings file's folder
(where `%include` and a relative path in [paths] start). Facts (hgrc(5), config.py):
`%include PATH` is relative to the including file and nests; a line starting with blanks
continues the value above; `#` and `;` start comments; `%unset` removes a key.
"""

from __future__ import annotations

import os

from .host_walk import read_small

MAX_INCLUDE_DEPTH = 10
# Each version-control system of hg's family: its folder and the settings file in it.
SETTINGS = ((".hg", "hgrc"), (".sl", "config"))


def _words(value: str) -> list[str]:
    text = value.strip()
    if any(c in text for c in "\"'\\"):
        import shlex  # only for a quoted value: a default start imports no extra module

        try:
            return shlex.split(text, comments=False)
        except ValueError:
            pass
    return text.split()


def _candidates(word: str) -> list[str]:
    """The path-like forms one word of a value may name: the word, what follows its
    `=` (`--opt=PATH`), and a `python:FILE:function` hook's file."""
    found = []
    for part in (word, word.partition("=")[2]):
        head, _, tail = part.removeprefix("python:").rpartition(":")
        form = (head or tail) if part.startswith("python:") else part
        if form and form[0] != "-" and "://" not in form and (
                "/" in form or form.startswith("~")):
            found.append(form)
    return found


def named_paths(root: str, settings: str, home: str) -> list[tuple[str, str]]:
    """(path, why) of each path the settings file `settings` of the repository at
    `root` names (and what it includes, followed), normalized: relative ones from both
    `root` and the file's folder. Reads files only; a missing file names nothing."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    pending = [(settings, 0)]
    while pending:
        config, depth = pending.pop(0)
        data = read_small(config, limit=1 << 20)
        real = os.path.realpath(config)
        if data is None or real in seen or depth > MAX_INCLUDE_DEPTH:
            continue
        seen.add(real)
        section = key = ""
        for line in data.decode("utf-8", "surrogateescape").splitlines():
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                continue
            if stripped.startswith("[") and stripped.endswith("]"):
                section = stripped[1:-1]
                continue
            if stripped.startswith("%include"):
                named = stripped[len("%include"):].strip()
                path = _expand(named, os.path.dirname(config), home)
                if path is not None:
                    found.setdefault(path, f"%include {named} in {config}: hg reads "
                                     "settings from it")
                    pending.append((path, depth + 1))
                continue
            if stripped.startswith("%"):
                continue
            if line[0] in " \t":
                value = stripped  # a continuation of the value above, under its key
            else:
                named, equals, value = stripped.partition("=")
                if not equals:
                    continue
                key = named.strip()
            why = f"[{section}] {key} in {config}: hg runs or reads it"
            for word in _words(value):
                for form in _candidates(word):
                    for start in (root, os.path.dirname(config)):
                        path = _expand(form, start, home)
                        if path is not None:
                            found.setdefault(path, why)
    return list(found.items())


def _expand(value: str, relative_to: str, home: str) -> str | None:
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    elif value.startswith("~"):
        return None  # another user's home: a sandbox of yours cannot write it
    return os.path.normpath(os.path.join(relative_to, value))
