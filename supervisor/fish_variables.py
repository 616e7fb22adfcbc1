"""fish's universal variables: the person's settings that no launch environment shows.

`set -U NAME VALUE` and `fish_add_path DIR` (fish 3.2+: it adds to the universal
`fish_user_paths`, which every fish puts first on PATH) keep their values in one file
that every fish reads at its start; a program lnk starts from another shell (an
agent's) never sees them in its environment. A red team made `~/work/bin/git` in a
write grant of `~/work`, where `fish_add_path ~/work/bin` had put a folder on the
person's PATH, and their next `git` in fish ran it. So the file is read here, on the
host, by lnk itself, and each variable is judged as the launch environment's are
(environment_paths.py: every path a value names, by structure, whatever the name);
`fish_user_paths` and a universal `PATH` are PATH's folders (home_places.py: holders).

Facts (fish's src/env_universal_common.rs and its unescape_string, 3.x and 4.x):
- the file is `$XDG_CONFIG_HOME/fish/fish_variables`, else `~/.config/fish/fish_variables`
  (fish's path_get_config); both are read here, as lnk may start with another
  XDG_CONFIG_HOME than the person's fish;
- one variable a line; empty lines and those starting with `#` are skipped; a leading
  comment `# VERSION: V` selects the 3.0 format (any V), none the 2.x one;
- 3.0: `SETUVAR`, flags (`--export`, `--path`, an unknown `-...` skipped), `NAME:VALUE`;
  2.x: `SET NAME:VALUE` or `SET_EXPORT NAME:VALUE`; NAME runs to the first `:`;
- VALUE is unescaped as fish unescapes a script's word: fish writes `\\xHH` for every
  byte but letters, digits, `/` and `_` (consecutive `\\x` bytes are one UTF-8 text),
  `\\u` and four hex digits, `\\U` and eight; it reads also octal,
  `\\a\\b\\e\\f\\n\\r\\t\\v`, `\\c` and a letter, any other escaped character as
  itself, and quotes; a value it cannot unescape sets nothing;
- a list's elements are joined by \\x1e (the record separator); `\\x1d` alone is the
  empty list;
- exported, a list is joined by `:` for a path variable (a name ending in PATH, or
  `--path`), by a space otherwise: what a program then gets in its environment.
fish reads up to 16 MiB; a file longer than MAX_BYTES (a real one holds a few KiB)
refuses a launch that writes anything (person_settings.py's refusals), never read in
part. Read once per start (home_places.found_once): well under a millisecond.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import NamedTuple

from .environment_paths import EnvironmentPath, environment_paths, unbounded
from .host_walk import read_small

MAX_BYTES = 1 << 20  # a longer file refuses a launch that writes anything
FILE = "fish/fish_variables"
LABEL = " in fish_variables"  # the variable named where the environment's are: `EDITOR in
# fish_variables`; what reads it back (`hint`) tells it from the environment's by this
# fish's PATH variables: each absolute element a folder of the person's PATH in fish
PATH_VARIABLES = ("fish_user_paths", "PATH")
# fish's own lists of folders it runs files from (fish's "Autoloading functions"): each a
# holder, as a code path's folder is (home_places.CODE_PATHS)
FISH_PATHS = (
    ("fish_function_path", "fish runs NAME.fish there when you type NAME"),
    ("fish_complete_path", "fish runs NAME.fish there when you complete NAME's words"),
)
_ARRAY_SEP = "\x1e"
_EMPTY_LIST = "\x1d"
_VERSION = re.compile(r"# VERSION: (\S{1,64})")
_WRITTEN = re.compile(r"(?:[\x00-\x21\x23-\x26\x28-\x5b\x5d-\x7f]|\\x[0-9a-fA-F]{2})*")
_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")
_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
           "v": "\v"}


class Universal(NamedTuple):
    """One universal variable: its elements, and whether fish exports it and reads it
    as a path variable (`--path`, or a name ending in PATH)."""

    name: str
    values: tuple[str, ...]
    exported: bool = False
    path: bool = False

    def value(self) -> str:
        """The value as an exported list is given to a program (fish's rule); fish's
        PATH variables' folders as PATH's, the form fish gives them to PATH."""
        colons = self.path or self.name.endswith("PATH") or self.name in PATH_VARIABLES
        return (":" if colons else " ").join(self.values)


class FishVariables(NamedTuple):
    """The files read, each universal variable by name (the later file's last), and
    what refuses a launch that writes anything: (where, what, change), as
    person_settings.Sources.refusals."""

    files: tuple[str, ...]
    variables: Mapping[str, Universal]
    refusals: tuple[tuple[str, str, str], ...]


def _unescape(text: str) -> str | None:
    """`text` as fish's unescape_string reads a word (its script style, nothing special
    expanded); None where fish refuses it (a trailing backslash, a bad numeric escape)."""
    if _WRITTEN.fullmatch(text):  # as fish writes it: ASCII, `\xHH` its only escape
        return _BYTE.sub(lambda m: chr(int(m.group(1), 16)), text).encode(
            "latin-1").decode("utf-8", "surrogateescape")
    out: list[str] = []
    raw = bytearray()  # consecutive \x bytes: one UTF-8 text together (fish: `\xc3\xb6`)
    quote = ""
    index = 0
    while index < len(text):
        char = text[index]
        if raw and not (char == "\\" and text[index + 1:index + 2] in ("x", "X")):
            out.append(raw.decode("utf-8", "surrogateescape"))
            raw.clear()
        if quote == "'":
            if char == "\\" and text[index + 1:index + 2] in ("\\", "'"):
                out.append(text[index + 1])
                index += 2
                continue
            if char == "\\" and index + 1 == len(text):
                return None
            if char == "'":
                quote = ""
            else:
                out.append(char)
            index += 1
            continue
        if quote == '"':
            following = text[index + 1:index + 2]
            if char == "\\" and following in ("\\", "$", '"', "\n"):
                out.append("" if following == "\n" else following)
                index += 2
                continue
            if char == "\\" and not following:
                return None
            if char == '"':
                quote = ""
            else:
                out.append(char)
            index += 1
            continue
        if char in "'\"":
            quote = char
            index += 1
            continue
        if char != "\\":
            out.append(char)
            index += 1
            continue
        kind = text[index + 1:index + 2]
        index += 2
        if not kind:
            return None
        if kind in "01234567uUxX":
            base, digits, top = {"u": (16, 4, 0xFFFF), "U": (16, 8, 0x10FFFF),
                                 "x": (16, 2, 0xFF), "X": (16, 2, 0xFF)}.get(
                kind, (8, 3, 0x7F))
            if base == 8:
                index -= 1  # the first digit is the escape's own
            start = index
            allowed = "01234567" if base == 8 else "0123456789abcdefABCDEF"
            while index < len(text) and index - start < digits and text[index] in allowed:
                index += 1
            if index == start or int(text[start:index], base) > top:
                return None
            number = int(text[start:index], base)
            if kind in "xX":
                raw.append(number)
            else:
                out.append(chr(number))
        elif kind in _SIMPLE:
            out.append(_SIMPLE[kind])
        elif kind == "c":
            letter = text[index:index + 1]
            if not letter or not ("a" <= letter <= chr(ord("a") + 32)
                                  or "A" <= letter <= chr(ord("A") + 32)):
                return None
            out.append(chr(ord(letter) - (ord("a") if letter >= "a" else ord("A")) + 1))
            index += 1
        elif kind != "\n":  # a backslash-newline is nothing; any other is the character
            out.append(kind)
    if raw:
        out.append(raw.decode("utf-8", "surrogateescape"))
    return "".join(out)


def _flag(cursor: str, word: str) -> str | None:
    """`cursor` past `word` where it starts with it, followed by a blank or the end."""
    if cursor.startswith(word) and cursor[len(word):len(word) + 1] in ("", " ", "\t"):
        return cursor[len(word):]
    return None


def parse(data: bytes) -> dict[str, Universal]:
    """Each variable `data` (a fish_variables file's bytes) sets, as fish reads it."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    version = None
    for line in lines:  # the leading comments, for `# VERSION: ...`
        if not line:
            continue
        if not line.startswith("#"):
            break
        match = _VERSION.match(line)
        if match is not None:
            version = match.group(1)
            break
    found: dict[str, Universal] = {}
    for line in lines:
        if not line or line.startswith("#"):
            continue
        exported = path = False
        if version is not None:
            cursor = _flag(line, "SETUVAR")
            if cursor is None:
                continue
            while True:
                cursor = cursor.lstrip(" \t")
                if not cursor.startswith("-"):
                    break
                if (after := _flag(cursor, "--export")) is not None:
                    exported, cursor = True, after
                elif (after := _flag(cursor, "--path")) is not None:
                    path, cursor = True, after
                else:  # a flag of a later fish: skipped, as fish skips it
                    cursor = re.sub(r"^[^ \t]*", "", cursor)
        else:
            cursor = _flag(line, "SET_EXPORT")
            exported = cursor is not None
            cursor = cursor if cursor is not None else _flag(line, "SET")
            if cursor is None:
                continue
        name, colon, escaped = cursor.lstrip(" \t").partition(":")
        value = _unescape(escaped) if colon else None
        if value is None:
            continue
        values = () if value == _EMPTY_LIST else tuple(value.split(_ARRAY_SEP))
        found[name] = Universal(name, values, exported, path)
    return found


def files(home: str, environ: Mapping[str, str]) -> list[str]:
    """Where fish keeps its universal variables for this home: XDG_CONFIG_HOME's (when
    absolute) and home's ~/.config, each once."""
    configs = [os.path.join(home, ".config")]
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg.startswith("/"):
        configs.insert(0, os.path.normpath(xdg))
    return list(dict.fromkeys(os.path.join(c, FILE) for c in configs))


def universal_variables(home: str, environ: Mapping[str, str] | None = None
                        ) -> FishVariables:
    """The person's fish universal variables (`FishVariables`); once per start within
    home_places.found_once."""
    home = os.path.normpath(home)
    if environ is None:
        from .once_per_start import found_once_for

        return found_once_for("fish_variables", home, lambda: _read(home, os.environ))
    return _read(home, environ)


def _read(home: str, environ: Mapping[str, str]) -> FishVariables:
    read: list[str] = []
    variables: dict[str, Universal] = {}
    refusals: list[tuple[str, str, str]] = []
    for path in files(home, environ):
        data = read_small(path, limit=MAX_BYTES + 1)
        if data is None:
            continue
        read.append(path)
        if len(data) > MAX_BYTES:
            refusals.append((f"{path} (fish's universal variables)", f"it is longer "
                             f"than {MAX_BYTES} bytes, more than lnk reads",
                             "erase the universal variables fish does not need "
                             "(`set -eU NAME`)"))
            continue
        variables.update(parse(data))
    return FishVariables(tuple(read), variables, tuple(refusals))


def folders(home: str, *names: str) -> list[str]:
    """The absolute folders the universal variables `names` list, each once, in order
    (PATH_VARIABLES: what fish puts on the person's PATH; a code path's: where fish's
    programs load code from); an element is a folder, or a `:` list of them (fish
    keeps a list imported from an environment's PATH whole)."""
    fish = universal_variables(home).variables
    found = [os.path.normpath(part) for name in names if name in fish
             for value in fish[name].values for part in value.split(":")
             if part.startswith("/")]
    return list(dict.fromkeys(found))


def relative_path_entries(home: str) -> list[str]:
    """What fish's PATH variables name relative to wherever the person is (fish's
    PATH takes them as they are: `bin`, `.`, an empty element)."""
    fish = universal_variables(home).variables
    return list(dict.fromkeys(part or "." for name in PATH_VARIABLES if name in fish
                              for value in fish[name].values
                              for part in value.split(":") if not part.startswith("/")))


def label(name: str) -> str:
    return name + LABEL


def _values(home: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each universal variable's value as a program gets it, and the environment its
    `$NAME`s expand from: lnk's own, with what fish exports on top."""
    fish = universal_variables(home)
    values = {name: variable.value() for name, variable in fish.variables.items()}
    environ = {**os.environ, **{n: values[n] for n, v in fish.variables.items()
                                if v.exported}}
    return values, environ


def named_paths(home: str) -> tuple[EnvironmentPath, ...]:
    """Every path a universal variable names, as environment_paths reads the launch
    environment's, each variable `label`led."""
    values, environ = _values(home)
    if not values:
        return ()
    return tuple(p._replace(variable=label(p.variable))
                 for p in environment_paths(environ, home, variables=values))


def unbounded_paths(home: str) -> list[tuple[str, str, str | None]]:
    """environment_paths.unbounded for the universal variables, each `label`led."""
    values, environ = _values(home)
    if not values:
        return []
    return [(label(variable), value, bound)
            for variable, value, bound in unbounded(environ, home, variables=values)]


def hint(variable: str) -> str:
    """How the person stops `variable` (an environment's, or one `label` names) from
    naming what it names."""
    if variable.endswith(LABEL):
        name = variable[:-len(LABEL)]
        return f"erase or change fish's universal {name} (`set -eU {name}` in fish)"
    return f"start lnk without {variable} (`env -u {variable} lnk ...`)"
