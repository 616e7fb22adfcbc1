"""The paths the person's launch environment names, judged by structure, not by name.

A variable of the environment lnk starts in is the person's own setting, whatever its
name: `GNUPGHOME=~/gnupg` moves gpg's keys, `KUBECONFIG=~/kube/config` kubectl's
credentials, `LESSOPEN='|~/bin/lessfilter %s'` names a program less runs on every file,
`VIMINIT='source ~/x.vim'` a file vim runs, `EDITOR=~/bin/ed` a program git runs. A
table of such names fails open on the next tool nobody listed (a red team read eight
tools' secrets and ran three programs through variables no table had). So every
variable is judged by what its value is: each absolute or `~/` path in it is a path
the person's programs read as theirs (home_hidden.py hides it under a read grant of
home, home_places.py keeps it read-only inside a write grant).

A value is read as a shell would hand it to a program:
- a list of paths (every part between `:` absolute, `~/` or empty: PATH's form,
  KUBECONFIG's) gives each part, spaces kept;
- anything else is read as a command or options (`nvim -u ~/x`, `|~/bin/f %s`,
  `--require=/x/hook.js`, `-I/x/lib`, `unix:path=/run/x.sock`): split into words as
  `sh` splits them (quotes and backslashes; a quoted word with a blank is read again as
  the script `sh -c` would run), and in each word every absolute, `~/` or `~name/`
  path that starts it or follows one of `=|:,;@<>([{!&` and a backquote, a `-`
  opening the word or a
  one-letter option (`-I`).
`$NAME`, `${NAME}` and `${NAME:-WORD}` (and `-`, `=`, `?`, `+`) are expanded from the
same environment first (a program that runs the value through `sh -c` does). A path ends
at `:`, `;`, `,`, a quote or a bracket; `//host/...` (a URL's authority) is no path.

Left out, by what they are, not by a list of bad names (`NOT_PATHS`): the variables
that say where the person is (PWD, OLDPWD, HOME) and where programs write their
scratch files (TMPDIR, TMP, TEMP, TEMPDIR); lnk-sandbox's own (LNK_*: its settings,
which every sandbox is denied). What the users of this module leave out by structure
is theirs to say (a value that is home, holds it, is the working directory or holds
it, is a write grant or holds one).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from typing import NamedTuple

# Variables whose value is never judged, each with its reason (docs/runs-as-you.md).
NOT_PATHS: Mapping[str, str] = {
    "PWD": "where the person is: the working directory, which a grant names",
    "OLDPWD": "where the person was: the shell's last working directory",
    "HOME": "home itself: every rule of home's already starts there",
    "TMPDIR": "where programs write scratch files (the sandbox has its own)",
    "TMP": "the same, as some programs name it",
    "TEMP": "the same",
    "TEMPDIR": "the same",
}
LNK_PREFIX = "LNK_"  # lnk-sandbox's own variables: its settings, denied to every sandbox
MAX_DEPTH = 3  # scripts in quoted scripts read (sh -c "bash -c '...'")

_BLANK = re.compile(r"\s")
_QUOTING = re.compile(r"['\"\\]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR = re.compile(r"(:?)([-=?+])(.*)", re.DOTALL)  # ${NAME:-WORD} and its kin
_TRIM = re.compile(r"(%%|%|##|#)(.*)", re.DOTALL)  # ${NAME%PATTERN} and its kin
# What only the running shell knows (a substitution's output): a character no value
# of the environment can hold.
UNKNOWN = "\0"
# A path in a word: `/` or `~/` at the word's start, after one of =|:,;@<>([{!&` (`!`:
# git's shell alias, `GIT_CONFIG_VALUE_0='!~/x'`; `&&~/x`, a backquote), a `-`
# opening the word, or a one-letter option (-I/x); running to the next : ; , quote or
# bracket (a JSON or TOML list: `["/x"]`).
_PATH = re.compile(r"(?:^|(?<=[=|:,;@<>(\[{!&`])|(?<=^-)|(?<=^-[A-Za-z]))"
                   r"((?:~[a-z_][a-z0-9_.-]*)?~?/[^:;,'\"`()<>|\[\]{}]*)")


class EnvironmentPath(NamedTuple):
    """An absolute path (normalized, `~` expanded) the variable `variable` names."""

    variable: str
    path: str


def _expand(value: str, environ: Mapping[str, str], depth: int = 0) -> str:
    """`value` with its parameter expansions done as `sh -c` does them with this
    environment (red team 4: a list of the forms fails open on the next one). `$NAME`,
    `${NAME}` (an unset one is empty, as sh makes it), `${NAME:-WORD}` and its kin (`-`,
    `=`, `?`, `+`, with or without `:`), the trims `%`, `%%`, `#`, `##` matched as the
    shell matches, `${#NAME}`, nested. What only the running shell knows (`$(...)`, a
    backquote, `$((...))`, bash's `${NAME/...}` and `${NAME:1}`) is UNKNOWN: the paths
    it starts cannot be bounded (`unbounded`), and one it ends in is cut there
    (`value_paths`: its known folder is named). A positional or special parameter
    (`"$1"`, `$@`) is kept as written: a tool's argument, never a path's start."""
    if "$" not in value and "`" not in value:
        return value
    out: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value):
            out.append(value[index:index + 2])
            index += 2
        elif char == "`":
            end = index + 1
            while end < len(value) and value[end] != "`":
                end += 2 if value[end] == "\\" else 1
            out.append(UNKNOWN)
            index = end + 1
        elif char != "$" or index + 1 >= len(value):
            out.append(char)
            index += 1
        elif value[index + 1] in "({":
            end = _closing(value, index + 1)
            inner = value[index + 2:end]
            out.append(UNKNOWN if value[index + 1] == "(" or end >= len(value) or
                       depth > MAX_DEPTH else _parameter(inner, environ, depth))
            index = end + 1
        else:
            name = _NAME.match(value, index + 1)
            if name is None:
                out.append(char)
                index += 1
            else:
                out.append(environ.get(name.group(0), ""))
                index = name.end()
    return "".join(out)


def substitutions(value: str) -> list[str]:
    """The scripts of `value`'s command substitutions (`$(...)`, backquotes), each read
    as a script of its own by the callers: what `_expand` makes UNKNOWN still names
    what it runs (`$(~/w/x.sh)`, red team 3's git alias)."""
    found: list[str] = []
    index = 0
    while index < len(value):
        if value[index] == "\\":
            index += 2
        elif value.startswith("$(", index):
            end = _closing(value, index + 1)
            found.append(value[index + 2:end])
            index = end + 1
        elif value[index] == "`":
            end = value.find("`", index + 1)
            end = len(value) if end < 0 else end
            found.append(value[index + 1:end])
            index = end + 1
        else:
            index += 1
    return found


def _closing(value: str, start: int) -> int:
    """The index of the bracket closing the one at `start` (`(` or `{`), nesting counted
    and escapes skipped; len(value) when it is never closed."""
    opening = value[start]
    closing = ")" if opening == "(" else "}"
    level = 0
    index = start
    while index < len(value):
        char = value[index]
        if char == "\\":
            index += 2
            continue
        if char == opening:
            level += 1
        elif char == closing:
            level -= 1
            if level == 0:
                return index
        index += 1
    return len(value)


def _parameter(inner: str, environ: Mapping[str, str], depth: int) -> str:
    """What `${INNER}` expands to (`_expand`)."""
    if inner.startswith("#") and _NAME.fullmatch(inner[1:]):
        return str(len(environ.get(inner[1:], "")))
    name = _NAME.match(inner)
    if name is None:
        return "${" + inner + "}"  # a positional or special one: an argument, kept
    known = environ.get(name.group(0))
    rest = inner[name.end():]
    if not rest:
        return known or ""
    operator = _OPERATOR.fullmatch(rest)
    if operator is not None:
        colon, kind, word = operator.groups()
        is_set = known is not None and (known != "" or not colon)
        if kind == "+":
            return _expand(word, environ, depth + 1) if is_set else ""
        if is_set and known is not None:
            return known
        return "" if kind == "?" else _expand(word, environ, depth + 1)
    trim = _TRIM.fullmatch(rest)
    if trim is None:
        return UNKNOWN  # bash's ${X/a/b}, ${X:1}, ${X^^}...: not sh's, not modelled
    kind, pattern = trim.groups()
    text = known or ""
    pattern = _QUOTING.sub("", _expand(pattern, environ, depth + 1))
    if UNKNOWN in pattern:
        return UNKNOWN
    cuts = range(len(text) + 1)
    if kind in ("%", "%%"):  # a suffix: the shortest (%) or the longest (%%) matched
        order = reversed(cuts) if kind == "%" else iter(cuts)
        cut = next((i for i in order if fnmatch.fnmatchcase(text[i:], pattern)), None)
        return text if cut is None else text[:cut]
    order = iter(cuts) if kind == "#" else reversed(cuts)  # a prefix, the same
    cut = next((i for i in order if fnmatch.fnmatchcase(text[:i], pattern)), None)
    return text if cut is None else text[cut:]


def unbounded(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, value) of each value a path of which starts with what only the running
    shell knows (`$(echo ~)/x`, a backquote, bash's `${HOME/#/}`/x): it may name any
    file, so no hold bounds it, and a launch that writes anything is refused (grants.py),
    as for the shell's startup files."""
    found = []
    for variable in sorted(environ):
        value = environ[variable]
        if variable in NOT_PATHS or variable.startswith(LNK_PREFIX) or "/" not in value:
            continue
        if ("$" in value or "`" in value) and UNKNOWN + "/" in _expand(
                value, environ).replace(UNKNOWN + UNKNOWN, UNKNOWN):
            found.append((variable, value))
    return found


def _words(value: str) -> list[str]:
    """`value` split into words as `sh` splits a command line: blanks between words,
    quotes and backslashes kept together and removed. An unclosed quote ends the word
    there (a program would refuse it; its words are judged anyway)."""
    if not _QUOTING.search(value):
        return value.split()  # most values: no quote, no backslash
    words: list[str] = []
    word: list[str] = []
    started = False
    quote = ""
    index = 0
    while index < len(value):
        char = value[index]
        index += 1
        if quote:
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and index < len(value):
                word.append(value[index])
                index += 1
            else:
                word.append(char)
        elif char in "'\"":
            quote, started = char, True
        elif char == "\\" and index < len(value):
            word.append(value[index])
            index += 1
            started = True
        elif char.isspace():
            if started or word:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(char)
    if started or word:
        words.append("".join(word))
    return words


def _as_path(text: str, home: str) -> str | None:
    """`text` as an absolute, normalized path (`~/` from `home`); None for none, `/`
    itself, or a URL's authority (`//host/...`). A path ending in what only the running
    shell knows (`~/w/$(hostname).sh`, UNKNOWN) names its known folder (`~/w`)."""
    if UNKNOWN in text:
        text = text[:text.index(UNKNOWN)]
        text = text[:text.rfind("/") + 1]
    if text.startswith("~/"):
        text = home + text[1:]
    elif text == "~":
        return None
    elif text.startswith("~") and "/" in text:  # `~name/`: name's home, as sh expands it
        import pwd  # only for such a value (a start imports no module it does not need)

        try:
            text = pwd.getpwnam(text[1:text.index("/")]).pw_dir + text[text.index("/"):]
        except (KeyError, ValueError):
            return None
    if not text.startswith("/") or (text.startswith("//") and not text.startswith("///")):
        return None
    path = os.path.normpath(text)
    path = path[1:] if path.startswith("//") else path
    return None if path == "/" else path


def value_paths(value: str, home: str, environ: Mapping[str, str],
                depth: int = 1) -> list[str]:
    """Each absolute or `~/` path `value` names, in order, each once; and those its
    command substitutions' scripts name (`substitutions`)."""
    original = value
    value = _expand(value, environ)
    parts = value.split(":")
    found: list[str] = []
    listed = all(not p or p.startswith(("/", "~/")) for p in parts)
    if listed:  # a path, or a list of them, spaces kept
        found = [p for p in (_as_path(part, home) for part in parts) if p]
    if not listed or _BLANK.search(value) or _QUOTING.search(value):  # a command
        # (`/x/ed --wait`, `~/w/te""am/ed`: red team 4) a listed part with a blank or a
        # quote is kept only where it is there (`/x/My Notes`): `/x/ed --wait` names
        # /x/ed, and holding a missing `ed --wait` would make it
        found = [p for p in found if not (_BLANK.search(p) or _QUOTING.search(p))
                 or os.path.lexists(p)]
        found += _command_paths(value, home, 1)  # Linux bounds a value: 128 KiB
    if depth < MAX_DEPTH:
        for script in substitutions(original):
            found += value_paths(script, home, environ, depth + 1)
    return list(dict.fromkeys(found))


def _command_paths(text: str, home: str, depth: int) -> list[str]:
    """The paths in the words of `text`; a quoted word with a blank is both a word (a
    path with a space: `'/x/my keys/id'`) and a script a shell runs (`sh -c 'col -b |
    ~/bin/pager'`), whose own words are read the same way, MAX_DEPTH deep."""
    found: list[str] = []
    for word in _words(text):
        whole = [p for p in (_as_path(m.group(1).rstrip(), home)
                             for m in _PATH.finditer(word)) if p]
        found += whole
        if depth < MAX_DEPTH and _BLANK.search(word):
            # a path of the script that is a path with a space cut at it is that path
            found += [p for p in _command_paths(word, home, depth + 1) if not any(
                w.startswith(p) and w[len(p):len(p) + 1].isspace() for w in whole)]
    return found


def environment_paths(environ: Mapping[str, str], home: str) -> tuple[EnvironmentPath, ...]:
    """Every path a variable of `environ` names but NOT_PATHS' and lnk's own, by
    variable name, then as the value names them; none that is home or holds it."""
    home = os.path.normpath(home)
    found: list[EnvironmentPath] = []
    for variable in sorted(environ):
        if variable in NOT_PATHS or variable.startswith(LNK_PREFIX):
            continue
        value = environ[variable]
        if "/" not in value:
            continue  # no path: most variables (LANG, TERM, SHLVL...), read no further
        for path in value_paths(value, home, environ):
            if not (home == path or home.startswith(path.rstrip("/") + "/")):
                found.append(EnvironmentPath(variable, path))
    return tuple(found)
