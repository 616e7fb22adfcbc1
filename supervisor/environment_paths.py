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
_OPERATOR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?)([-=?+])([^{}]*)\}")
_EXPAND = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
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


def _expand(value: str, environ: Mapping[str, str]) -> str:
    """`$NAME` and `${NAME}` replaced by their value in `environ`; an unknown one kept.
    First `${NAME:-WORD}` and its kin (`-`, `=`, `?`, `+`, with or without `:`) as sh
    expands them with this environment (red team 3: GIT_EDITOR='${X:-$HOME/w}/ed')."""
    if "$" not in value:
        return value
    value = _OPERATOR.sub(lambda m: _operator(m, environ), value)
    return _EXPAND.sub(lambda m: environ.get(m.group(1) or m.group(2), m.group(0)), value)


def _operator(match: re.Match[str], environ: Mapping[str, str]) -> str:
    name, colon, operator, word = match.groups()
    known = environ.get(name)
    is_set = known is not None and (known != "" or not colon)
    if operator == "+":
        return word if is_set else ""
    return known if is_set and known is not None else ("" if operator == "?" else word)


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
    itself, or a URL's authority (`//host/...`)."""
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


def value_paths(value: str, home: str, environ: Mapping[str, str]) -> list[str]:
    """Each absolute or `~/` path `value` names, in order, each once."""
    value = _expand(value, environ)
    parts = value.split(":")
    found: list[str] = []
    listed = all(not p or p.startswith(("/", "~/")) for p in parts)
    if listed:  # a path, or a list of them, spaces kept
        found = [p for p in (_as_path(part, home) for part in parts) if p]
    if not listed or _BLANK.search(value):  # a command (`/x/ed --wait`)
        # a listed part with a blank is kept only where it is there (`/x/My Notes`):
        # `/x/ed --wait` names /x/ed, and holding a missing `ed --wait` would make it
        found = [p for p in found if not _BLANK.search(p) or os.path.lexists(p)]
        found += _command_paths(value, home, 1)  # Linux bounds a value: 128 KiB
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
