"""git's settings files, parsed as git parses them, without running git.

The analysis of a written folder (dotfiles.py) and git's identity inside (gitsupport.py)
read settings a sandbox may have written: running `git config` there would run what the
settings name, so they are parsed here.

Facts the parser follows (git's config.c, git-config(1)):
- section and key names are case-insensitive, a `[section "sub"]` subsection is not; the
  deprecated `[section.sub]` form lowercases the subsection;
- a value runs to the end of the line or a `#`/`;` outside quotes; `\\` `\\"` `\\n`
  `\\t` `\\b` are escapes, a backslash at the end of a line continues it; a key with no
  `=` is boolean true.
"""

from __future__ import annotations

import os
import re

_SECTION = r'\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\\n]|\\.)*)")?\s*\]'
_KEY = r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)"
_UNESCAPE = r"\\(.)"
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def parse_git_config(text: str) -> list[tuple[str, str | None]]:
    """Every `section[.subsection].key` and value in a git config file, in order.

    Names are as git reports them (section and key lowercased, subsection kept); a
    value of None is a key without `=`. A line git would refuse is skipped, and the
    rest still read: finding more than git does only ever protects more.
    """
    # Compiled here, not at import: only a start in a repository pays for it (re caches).
    section_re, key_re, unescape_re = (re.compile(_SECTION), re.compile(_KEY),
                                       re.compile(_UNESCAPE))
    entries: list[tuple[str, str | None]] = []
    section = ""
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        header = section_re.match(line)
        if header:
            name, sub = header.group(1), header.group(2)
            if sub is not None:
                section = name.lower() + "." + unescape_re.sub(r"\1", sub)
            elif "." in name:
                head, _, tail = name.partition(".")
                section = f"{head.lower()}.{tail.lower()}"
            else:
                section = name.lower()
            line = line[header.end():]
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        key = key_re.match(line)
        if not key or not section:
            continue
        rest = line[key.end():]
        if not key.group(2):
            if rest.strip() and rest.strip()[0] not in "#;":
                continue  # `key junk`: git refuses the line
            entries.append((f"{section}.{key.group(1).lower()}", None))
            continue
        value, index = _value(rest, lines, index)
        entries.append((f"{section}.{key.group(1).lower()}", value))
    return entries


def _value(rest: str, lines: list[str], index: int) -> tuple[str, int]:
    """A value from `rest` on, following continuation lines; (value, next line index)."""
    out: list[str] = []
    spaces = ""
    quoted = False
    text = rest.lstrip(" \t")
    position = 0
    while True:
        if position >= len(text):
            break
        char = text[position]
        position += 1
        if char == "\\":
            if position >= len(text):  # a backslash at the end: the value goes on
                if index >= len(lines):
                    break
                text, position = lines[index], 0
                index += 1
                continue
            escaped = text[position]
            position += 1
            out.append(spaces + _ESCAPES.get(escaped, escaped))
            spaces = ""
            continue
        if char == '"':
            quoted = not quoted
            out.append(spaces)
            spaces = ""
            continue
        if not quoted and char in "#;":
            break
        if not quoted and char in " \t\v\f\r":
            if any(out):
                spaces += " "  # each blank after the value began is one space to git
            continue
        out.append(spaces + char)
        spaces = ""
    return "".join(out), index


def person_git_configs(home: str) -> list[str]:
    """The person's own settings files git reads in every repository: the system's and
    the global ones (each name git may use, whichever it uses: protecting more is safe)."""
    files = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    for path in (os.environ.get("GIT_CONFIG_GLOBAL"), xdg and os.path.join(xdg, "git/config"),
                 os.path.join(home, ".config/git/config"), os.path.join(home, ".gitconfig")):
        if path and path not in files and path != "/dev/null":
            files.append(path)
    return files
