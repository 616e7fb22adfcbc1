"""Paths as POSIX extended regexes for Seatbelt's `(regex ...)` filter (pure).

Facts (sandbox-runtime; docs/macos.md):
- sandbox-exec refuses a string longer than 1025 bytes ("Error reading string"), so a
  regex here is at most REGEX_LIMIT bytes;
- it compiles a few thousand path filters in seconds but a few dozen regexes in
  milliseconds, so many allows are folded into a few regexes;
- a regex matches the path as given to the kernel's check, letter case included
  (orbit#494), so "any case" spells each ASCII letter as a class: `[gG][iI][tT]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

REGEX_LIMIT = 900


def regex_escape(path: str) -> str:
    """A path as a POSIX extended regex matching itself."""
    return re.sub(r"([\\.\[\]()*+?{}|^$])", r"\\\1", path)


def any_case(path: str, *, fixed: int = 0) -> str:
    """A path as a regex matching it in any letter case of its ASCII letters, but for
    its first `fixed` characters, matched as they are."""
    head = regex_escape(path[:fixed])
    tail = "".join(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha()
                   else regex_escape(c) for c in path[fixed:])
    return head + tail


def chunks(paths: Sequence[str], *, subpath: bool, limit: int,
            escape: Callable[[str], str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Paths as anchored regexes of at most `limit` bytes, each with the paths it holds;
    and the paths too long to fold (and "/")."""
    tail = "(/.*)?$" if subpath else "$"
    done: list[tuple[str, list[str]]] = []
    alone: list[str] = []
    chunk: list[tuple[str, str]] = []  # (path, escaped)

    def render(items: list[str]) -> str:
        return "^(" + "|".join(items) + ")" + tail

    for path in paths:
        escaped = escape(path)
        if path == "/" or len(render([escaped]).encode()) > limit:
            alone.append(path)
            continue
        if chunk and len(render([*(e for _, e in chunk), escaped]).encode()) > limit:
            done.append((render([e for _, e in chunk]), [p for p, _ in chunk]))
            chunk = []
        chunk.append((path, escaped))
    if chunk:
        done.append((render([e for _, e in chunk]), [p for p, _ in chunk]))
    return done, alone


def fold(paths: Sequence[str], *, subpath: bool, limit: int = REGEX_LIMIT) -> tuple[
        list[str], list[str]]:
    """Paths as anchored regexes of at most `limit` bytes; (regexes, paths too long to fold).

    A subpath regex matches the path and everything below it: `^(a|b)(/.*)?$`."""
    done, alone = chunks(paths, subpath=subpath, limit=limit, escape=regex_escape)
    return [regex for regex, _ in done], alone


def any_case_regexes(paths: Sequence[str], *, subpath: bool, limit: int = REGEX_LIMIT
                     ) -> list[tuple[str, list[str]]]:
    """Regexes matching `paths` (and, for `subpath`, what is below them) in any letter
    case, each of at most `limit` bytes. A path too long for that keeps its first
    characters as they are (the folders that exist, whose stored names a lookup finds)
    and takes any case in the rest; "/" needs none."""
    done, alone = chunks(paths, subpath=subpath, limit=limit, escape=any_case)
    tail = "(/.*)?$" if subpath else "$"
    for path in alone:
        if path == "/":
            continue
        for fixed in range(len(path) + 1):
            regex = "^(" + any_case(path, fixed=fixed) + ")" + tail
            if len(regex.encode()) <= limit:
                done.append((regex, [path]))
                break
    return done
