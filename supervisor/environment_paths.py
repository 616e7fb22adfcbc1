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
A value of several words, a quote, an operator or a substitution is read as a command
(`Reading.command`: what it names may be a folder whose files its program runs,
`find ~/w -exec`), but a list whose parts with a blank are there.
`$NAME`, `${NAME}` and `${NAME:-WORD}` (and `-`, `=`, `?`, `+`) are expanded from the
same environment first (a program that runs the value through `sh -c` does), with what
sh sets itself (IFS, the prompts: `script_environ`). A path ends
at `:`, `;`, `,`, a quote or a bracket; `//host/...` (a URL's authority) is no path.

Left out, by what they are, not by a list of bad names (`NOT_PATHS`): the variables
that say where the person is (PWD, OLDPWD, HOME) and where programs write their
scratch files (TMPDIR, TMP, TEMP, TEMPDIR); lnk-sandbox's own (LNK_*: its settings,
which every sandbox is denied). What the users of this module leave out by structure
is theirs to say (a value that is home, holds it, is the working directory or holds
it, is a write grant or holds one where it is not read as a command: grants.py).
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
_SH_BLANK = re.compile(r"[ \t\n]+")  # what splits words to sh (`_BLANK`: to any program)
_QUOTING = re.compile(r"['\"\\]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR = re.compile(r"(:?)([-=?+])(.*)", re.DOTALL)  # ${NAME:-WORD} and its kin
_TRIM = re.compile(r"(%%|%|##|#)(.*)", re.DOTALL)  # ${NAME%PATTERN} and its kin
# What only the running shell knows (a substitution's output): a character no value
# of the environment can hold.
UNKNOWN = "\0"
# bash's brace expansion: a `{...}` of one word (no blank) with a `,` or `..` in it.
_BRACES = re.compile(r"(?<!\$)\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")
# A path in a word: `/` or `~/` at the word's start, after one of =|:,;@<>([{!&` (`!`:
# git's shell alias, `GIT_CONFIG_VALUE_0='!~/x'`; `&&~/x`, a backquote), a `-`
# opening the word, or a one-letter option (-I/x); running to the next : ; , quote or
# bracket (a JSON or TOML list: `["/x"]`).
_PATH = re.compile(r"(?:^|(?<=[=|:,;@<>(\[{!&`])|(?<=^-)|(?<=^-[A-Za-z]))"
                   r"((?:~[a-z_][a-z0-9_.-]*)?~?/[^:;,&'\"`()<>|\[\]{}]*)")


class EnvironmentPath(NamedTuple):
    """An absolute path (normalized, `~` expanded) the variable `variable` names.
    `command`: the value is read as a command (`Reading.command`), whose program may run
    any file of a folder it names (`find ~/w -exec`, `cd ~/w && t/ed`): a write grant
    that is such a folder or lies in it is refused (grants.py), where one a path or a
    list names (`PROJECTS=~/src`) is the person's choice."""

    variable: str
    path: str
    command: bool = False


class Reading(NamedTuple):
    """What a value names (`paths`, as `value_paths` gives them) and how it is read:
    `command` False for one word (a path, a `:` list of paths, an option naming one:
    `-/x`, `--dir=/x`) or a list whose parts with a blank are paths that are there
    (`~/My Notes:/x`); True for what a shell runs as a program with its words, or a
    script (a blank between words, a quote, an operator `;&|<>()`, a substitution)."""

    paths: list[str]
    command: bool


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
    if "{" in value:  # bash's `{a,b}`, `{1..3}`: made before all else (`$HOMEa`), UNKNOWN
        value = _BRACES.sub(UNKNOWN, value)
    if "$" not in value and "`" not in value and "\\\n" not in value:
        return value
    out: list[str] = []
    index = 0
    while index < len(value):
        char = value[index]
        if value.startswith("\\\n", index):  # a line joined: no character to sh
            index += 2
        elif char == "\\" and index + 1 < len(value):
            out.append(value[index:index + 2])
            index += 2
        elif value.startswith("$'", index):  # bash's $'\x2f...': what bash makes of it
            end = index + 2
            while end < len(value) and value[end] != "'":
                end += 2 if value[end] == "\\" else 1
            out.append(UNKNOWN)
            index = end + 1
        elif value.startswith('$"', index):  # bash's $"...": the string; dash's: `$` too
            out.append(UNKNOWN)
            index += 1
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
            if value[index + 1] == "0":  # what the caller named the script: git gives
                out.append(UNKNOWN)      # the value itself (`sh -c 'VALUE "$@"' VALUE`)
                index += 2
            elif name is None:
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
    if inner.startswith(("!", "0")):  # bash's ${!NAME} (another's value), and $0
        return UNKNOWN
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


def unbounded(environ: Mapping[str, str], home: str | None = None, *,
              variables: Mapping[str, str] | None = None
              ) -> list[tuple[str, str, str | None]]:
    """(variable, value, bound) of each value that names what no hold bounds: a path or
    a program whose start only the running shell knows (`$(echo ~)/x`, a backquote,
    bash's `${HOME/#/}`/x, `~/w/$(x)`: what it prints may hold `/` and `..`; a command
    `$(printf ...)`), bound None: a launch that writes anything is refused (grants.py),
    as for the shell's startup files; or a pattern's known folder (`~/w/t*/ed`: the
    names it matches are made when it runs), the bound: a write grant that is it or
    lies inside it is refused. `variables`: the ones judged, their `$NAME`s expanded
    from `environ` (all of `environ`'s by default; fish_variables.py's)."""
    home = os.path.normpath(home or environ.get("HOME") or "/")
    judged = environ if variables is None else variables
    found: list[tuple[str, str, str | None]] = []
    for variable in sorted(judged):
        value = judged[variable]
        if variable in NOT_PATHS or variable.startswith(LNK_PREFIX) or not (
                "/" in value or "$" in value or "`" in value) or \
                this_launch(variable, value):
            continue
        cuts: Cuts = []
        value_paths(value, home, environ, cuts=cuts)
        found += [(variable, value, bound) for bound in dict.fromkeys(cuts)]
    return found


def _words(value: str) -> list[str]:
    """`value` split into words as `sh` splits a command line: blanks between words,
    quotes and backslashes kept together and removed. An unclosed quote ends the word
    there (a program would refuse it; its words are judged anyway). What only the
    running shell knows (UNKNOWN), outside quotes, may end in a blank and start a word
    (`cd$(echo " ")$HOME/w`, red team 26g): it ends the word it is in and starts the
    next, so a path after it is one whose start is unknown (`_UNKNOWN_START`)."""
    if not _QUOTING.search(value) and UNKNOWN not in value:
        return _SH_BLANK.split(value.strip(" \t\n")) if value.strip(" \t\n") else []
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
                if value[index] != "\n":  # a line joined inside double quotes too
                    word.append(value[index])
                index += 1
            else:
                word.append(char)
        elif char in "'\"":
            quote, started = char, True
        elif char == "\\" and index < len(value):
            if value[index] != "\n":  # a line joined
                word.append(value[index])
                started = True
            index += 1
        elif char in " \t\n":  # sh's blanks, no other (`\r`, a no-break space)
            if started or word:
                words.append("".join(word))
            word, started = [], False
        elif char == UNKNOWN and (started or word):
            words.append("".join(word) + UNKNOWN)
            word, started = [UNKNOWN], False
        else:
            word.append(char)
    if started or word:
        words.append("".join(word))
    return words


# What sh makes of a path's text that lnk does not: pathname expansion (`*`, `?`, `[`) and
# bash's brace expansion (`{a,b}`), from where each starts (the names it matches only the
# file system of the moment knows).
_PATTERN = re.compile(r"[*?\[{]")
Cuts = list[str | None]  # the known folder of each path cut short; None: not bounded
# A process's root or working folder, or a descriptor open on a folder, as the kernel's
# links give them (`/proc/PID/root`, `/proc/$$/cwd`, `/dev/fd/3/x`): a path through one
# is a path of whichever process opens it, anywhere.
_MAGIC_FOLDER = re.compile(r"/proc/[^/]+/(?:task/[^/]+/)?(?:root|cwd)(?:/|$)|"
                           r"(?:/proc/[^/]+/(?:task/[^/]+/)?fd|/dev/fd)/[^/]+/")


def _as_paths(text: str, home: str, cuts: Cuts | None = None,
              authority: bool = False) -> list[str]:
    """`text` as absolute, normalized paths (`~/` from `home`); none for none, `/`
    itself, or (`authority`: after a scheme's `:`) a URL's authority (`//host/...`);
    `//x` is `/x` anywhere else, as the kernel reads it. A path ending in what only the
    running shell knows (`~/w/$(hostname).sh`, UNKNOWN) names its known folder (`~/w`),
    and is not bounded (None in `cuts`): what a substitution prints may hold `/` and
    `..`. A pattern (`~/w/t*/ed`) names its known folder too, its bound (in `cuts`): a
    grant that is it or lies in it is refused (`unbounded`). A path through `..` names
    the path before it as well (`~/w/x/../ed`: `~/w/x`, which the kernel follows first,
    a link the run could make)."""
    cut = text.find(UNKNOWN) if UNKNOWN in text else None
    if cut is not None and cuts is not None:
        cuts.append(None)
    pattern = _PATTERN.search(text)
    by_pattern = pattern is not None and (cut is None or pattern.start() < cut)
    if pattern is not None and by_pattern:
        cut = pattern.start()
    if cut is not None:
        text = text[:cut]
        text = text[:text.rfind("/") + 1]
    if text.startswith("~/"):
        text = home + text[1:]
    elif text == "~":
        return []
    elif text.startswith("~") and "/" in text:  # `~name/`: name's home, as sh expands it
        import pwd  # only for such a value (a start imports no module it does not need)

        try:
            text = pwd.getpwnam(text[1:text.index("/")]).pw_dir + text[text.index("/"):]
        except (KeyError, ValueError):
            return []
    if not text.startswith("/") or (authority and text.startswith("//")
                                    and not text.startswith("///")):
        return []
    path = os.path.normpath(text)
    path = "/" + path.lstrip("/")
    if by_pattern and cuts is not None:
        cuts.append(path)
    if cuts is not None and _MAGIC_FOLDER.match(path):
        cuts.append(None)  # a folder the kernel links to any other, for the program
        # that opens it (`find /proc/$$/root/home/p/w -exec`: red team 26g)
    found = [] if path == "/" else [path]
    parts = text.split("/")
    if ".." in parts:  # the path the kernel follows before the first `..`
        found = _as_paths("/".join(parts[:parts.index("..")]), home, cuts) + found
    return found


def value_paths(value: str, home: str, environ: Mapping[str, str],
                depth: int = 1, cuts: Cuts | None = None) -> list[str]:
    """Each absolute or `~/` path `value` names, in order, each once; and those its
    command substitutions' scripts name (`substitutions`). `cuts` gets the bound of
    each path cut short (`_as_paths`), and None for each program or path whose start
    only the running shell knows (`_command_paths`)."""
    return read_value(value, home, environ, depth, cuts).paths


# A part of a `:` list that is a relative name (`.`, `~`, `node_modules/.bin`: CDPATH's
# `.:~:~/src`), for telling a list from a command: no option's `=`, no blank, no pattern.
_RELATIVE_PART = re.compile(r"~|[A-Za-z0-9._][A-Za-z0-9._+/-]*")


def read_value(value: str, home: str, environ: Mapping[str, str],
               depth: int = 1, cuts: Cuts | None = None) -> Reading:
    """`value_paths`' paths, and whether the value is read as a command (`Reading`)."""
    original = value
    value, environ = script_environ(value, environ, home, cuts)
    value = _expand(value, environ)
    parts = value.split(":")
    found: list[str] = []
    listed = all(not p or p.startswith(("/", "~/")) for p in parts)
    if listed:  # a path, or a list of them, spaces kept
        found = [p for part in parts for p in _as_paths(part, home, cuts)]
        if len(parts) > 1:  # and the one word sh runs, where it is there: a program in a
            # folder whose name holds `:` (`~/w/t:/ed.sh`, red team 26g), never ~/w/t
            found += [p for p in _as_paths(value, home) if os.path.lexists(p)]
    # Read as a command where a shell acts on it (an operator, what only it knows) or
    # it has several words, but a list whose parts with a blank are there (`/x/My
    # Notes`): one word is a path, a list of them or an option naming one, as a list is.
    command = UNKNOWN in value or bool(_OPERATORS.search(value)) or bool(
        (_BLANK.search(value) or _QUOTING.search(value)) and not all(
            not part or _RELATIVE_PART.fullmatch(part) or (
                part.startswith(("/", "~/")) and (
                    not (_BLANK.search(part) or _QUOTING.search(part))
                    or all(os.path.lexists(p) for p in _as_paths(part, home))))
            for part in parts))
    if not listed or _BLANK.search(value) or _QUOTING.search(value) or UNKNOWN in value \
            or _OPERATORS.search(value):  # `~/w/ed.sh&`, `~/w/ed.sh;x`: a command too
        # a command (`/x/ed --wait`, `~/w/te""am/ed`: red team 4) a listed part with a
        # blank or a quote is kept only where it is there (`/x/My Notes`): `/x/ed
        # --wait` names /x/ed, and holding a missing `ed --wait` would make it. Only
        # sh's blanks split a word: `~/w/ed.sh\r` (a value from a CRLF file) or one
        # with a no-break space is the one program sh runs, held when missing (red
        # team 26g: kept only where it was there, a sandbox made it)
        found = [p for p in found if not (_SH_BLANK.search(p) or _QUOTING.search(p))
                 or os.path.lexists(p)]
        found += _command_paths(value, home, 1, cuts, environ)  # at most 128 KiB
    if depth < MAX_DEPTH:
        for script in substitutions(original):
            found += value_paths(script, home, environ, depth + 1, cuts)
    if command and not (UNKNOWN in value or _OPERATORS.search(value)):
        words = value.split()
        # Options, not a command: `CFLAGS='-O2 -I~/w'`, `PYTEST_ADDOPTS='--rootdir=~/w'`,
        # MAKEFLAGS' ` -- X=~/w`, read by the program they are given to, not run (red
        # team 26g's false refusals); but a quoted option holding a blank is a script
        # the program runs (fzf's `--preview 'run-parts ~/w'`, red team 26h).
        command = bool(words) and (not words[0].startswith("-") or any(
            _BLANK.search(word) for word in _words(value)))
    return Reading(list(dict.fromkeys(found)), command)


# What sudo records for the command it runs: the one variable that is this launch's own
# command line, not a setting of the person's.
SUDO_COMMAND = "SUDO_COMMAND"


def this_launch(variable: str, value: str) -> bool:
    """Whether `value` is sudo's record (SUDO_COMMAND, `/x/bin/lnk sandbox run -- make
    -C ~/w`) of the lnk-sandbox command running now: run now, not later as the person;
    its paths are this run's command's arguments (red team 26g's false refusal of `sudo
    lnk ...`). Only sudo's: any other variable starting with lnk's path is the person's
    setting, run later (`PROMPT_COMMAND='/x/bin/lnk ...\n. ~/w/hook'`, red team 26h)."""
    import sys

    if variable != SUDO_COMMAND:
        return False
    words = value.split(None, 1)
    started = sys.argv[0] if sys.argv else ""
    return bool(words) and os.path.isabs(started) and os.path.isabs(words[0]) and \
        os.path.realpath(words[0]) == os.path.realpath(started)


# sh's reserved words after which a command starts (the grammar's, not a tool's name).
_RESERVED = frozenset(("!", "{", "(", "then", "do", "else", "elif", "if", "while",
                       "until", "time",
                       # and its builtins that run their argument as a command, a
                       # script or a file (red team 26g: `exec $(printf %s/w/ed ~)`,
                       # `eval "$(printf 'cd %s/w && t/ed' ~)"`)
                       "exec", "command", "builtin", "eval", ".", "source"))
# A shell, whose `-c` word is a script: `sh -c "$(...)"` runs what only the shell knows.
_SHELLS = frozenset(("sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "busybox"))
# What only the running shell knows where a command or a path starts: right after an
# operator inside a word (`a;$(x)`), or followed by a `/` (`$(echo ~)/w/ed`).
# Not one inside a relative word (`remotes/$remote/x`, a name the value assigned): what it
# prints cannot make that absolute.
_UNKNOWN_START = re.compile(f"[;&|(!`]{UNKNOWN}|"
                            r"(?:^|(?<=[=|:,;@<>(\[{!&`])|(?<=^-)|(?<=^-[A-Za-z]))"
                            f"{UNKNOWN}/")
_SHELL_TILDE = re.compile(r"(?:^|(?<=[=:;&|(]))~[+-](?:/|$|[;&|)])")
_OPERATORS = re.compile(r"[;&|<>()`]")
_LITERAL_PARAMETER = re.compile(r"\$[A-Za-z_{]")


# What a value does to the shell that runs it before it names a path (red team 6): a name
# it assigns (`X=~/w; $X/t/ed`, `for d in ~/w`, `read`, `export`), whose expansions only
# the running shell then knows; the positional parameters it sets (`set -- ~/w`, a
# function's arguments); a PATH it assigns, whose folders its commands are looked up in.
_ASSIGNS = re.compile(r"(?:^|(?<=[\s;&|(!`'\"]))([A-Za-z_][A-Za-z0-9_]*)\+?=|"
                      r"(?:\bprintf\s+-v\s*|\$\{(?=[A-Za-z_][A-Za-z0-9_]*:?=))"
                      r"([A-Za-z_][A-Za-z0-9_]*)")
_BINDS = re.compile(r"(?:^|(?<=[\s;&|(!`'\"]))(?:for|select|read|getopts|mapfile|readarray|"
                    r"local|export|declare|typeset|readonly|unset)((?:\s+[-A-Za-z0-9_]+)+)")
_SETS = re.compile(r"(?:^|(?<=[\s;&|(!`'\"]))(?:set|shift)(?:$|[\s;&|)])")
_FUNCTION = re.compile(r"\(\s*\)|\bfunction\s")
_WORD_POSITIONAL = re.compile(r"((?:^|[\s;&|(!`])[\"']?)\$(?:[0-9@*]|\{[0-9@*#][^}]*\})"
                              r"(?=[\"']?/)")
_POSITIONAL = re.compile(r"\$(?:[0-9@*#]|\{[0-9@*#]+\})")
_POSITIONAL_PATH = re.compile(r"((?:^|[;&|(!`\n]|\b(?:then|do|else)\s)\s*[\"']?)"
                              r"\$(?:[0-9@*]|\{[0-9@*#][^}]*\})(?=[\"']?/)")
_ASSIGNED_ONCE = re.compile(r"(?:^|(?<=[\s;&|(!`'\"]))([A-Za-z_][A-Za-z0-9_]*)="
                            r"(\"[^\"`$]*(?:\$[^(\"`][^\"`$]*)*\"|'[^']*'|[^\s;&|)'\"`]*)(?=$|[\s;&|)])")
_PATH_ASSIGNED = re.compile(r"(?:^|(?<=[\s;&|(!`'\"]))PATH=([^\s;&|)]*)")


# What every sh sets when it starts (red team 26g): IFS whatever the environment holds
# (dash and bash both ignore an IFS they are given), the prompts and OPTIND where the
# environment has none. Read as empty, `cd${IFS}$HOME/w&&t/ed.sh` or
# `cd${PS4#+}$HOME/w` was one word naming no folder; to sh it is a cd to ~/w.
_SHELL_IFS = " \t\n"


def _shell_sets() -> dict[str, str]:
    """What sh sets where the environment does not; and bash's own strings that hold a
    path or a script (`bash -c 'cd $HOME${BASH%%u*}w'` is a cd to ~/w), UNKNOWN: empty
    to dash, the running bash's to bash."""
    return {"PS1": "# " if os.geteuid() == 0 else "$ ", "PS2": "> ", "PS4": "+ ",
            "OPTIND": "1", **dict.fromkeys(_BASH_SETS, UNKNOWN)}


_BASH_SETS = ("BASH", "BASH_ARGV0", "BASH_COMMAND", "BASH_EXECUTION_STRING",
              "BASH_LOADABLES_PATH", "BASH_SOURCE")


def script_environ(text: str, environ: Mapping[str, str], home: str, cuts: Cuts | None
                   ) -> tuple[str, dict[str, str]]:
    """`text` and `environ` as the script `text` leaves them for its own later words: a
    name it assigns is UNKNOWN (what it holds then only the running shell knows), as
    are the positional parameters where it sets them (`set`, `shift`, a function); HOME
    assigned refuses (`~` is then any folder); a PATH it assigns bounds each of its
    folders, where its commands are looked up (`PATH=~/w:$PATH ed`)."""
    # PWD and OLDPWD are the running shell's folders (where git runs the value, a cd's),
    # not lnk's at launch: `$PWD/t/ed.sh` is unknown. What sh sets itself is what it
    # holds, never empty (`_shell_sets`).
    changed = {**_shell_sets(), **environ, "IFS": _SHELL_IFS, "PWD": UNKNOWN,
               "OLDPWD": UNKNOWN}
    names = [m.group(1) or m.group(2) for m in _ASSIGNS.finditer(text)]
    once = {m.group(1): m.group(2) for m in _ASSIGNED_ONCE.finditer(text)}
    for binds in _BINDS.finditer(text):
        names += [w for w in binds.group(1).split() if _NAME.fullmatch(w)]
    for name in names:
        changed[name] = UNKNOWN
    for name, spelled in once.items():
        # A name assigned once, by a plain `NAME=WORD`, holds WORD as sh makes it (`~/`
        # expanded): GitAlias's `cmd="git branch ..."; $cmd` runs git, `X=~/w;
        # $X/t/ed` names ~/w/t/ed; one the environment sets stays unknown (read before).
        if names.count(name) == 1 and name not in environ and name != "HOME":
            word = spelled[1:-1] if spelled[:1] in "'\"" and spelled[-1:] == spelled[:1] \
                else spelled
            word = home + word[1:] if word.startswith("~/") or word == "~" else word
            changed[name] = _expand(word, changed).replace("\n", " ")
    if _SETS.search(text):
        text = _POSITIONAL.sub(UNKNOWN, text)
    elif _FUNCTION.search(text):  # its arguments (`f ~/w`): a word they start, not
        # `--set-upstream-to=${1:-origin}/x` (GitAlias's `track`)
        text = _WORD_POSITIONAL.sub(lambda m: m.group(1) + UNKNOWN, text)
    # A program a positional parameter starts (`"${1%/*}"/../../t/ed`: git's file, in
    # the repository the person commits in) is one only the running shell knows.
    text = _POSITIONAL_PATH.sub(lambda m: m.group(1) + UNKNOWN, text)
    if cuts is not None:
        if "HOME" in names or "cdable_vars" in text or any(
                m.group(1) == "IFS" and m.group(2).strip("'\"").strip(" \t")
                for m in _ASSIGNED_ONCE.finditer(text)) or (
                "IFS" in names and "IFS" not in once):
            # `~` then any folder; bash's `cd W` going to $W; a word split at `:`
            # (`IFS=:; c=cd:~/w; $c`) making a cd no word of the value is
            cuts.append(None)
        for assigned in _PATH_ASSIGNED.finditer(text):
            for part in _expand(assigned.group(1), environ).split(":"):
                cuts += _as_paths(part, home, cuts)
    return text, changed


# A change of the working folder (`cd ~/w && t/ed.sh`): what follows it may run any file
# there by a relative name, so the folder bounds as a pattern's does (red team 6).
_CHANGES_FOLDER = frozenset(("cd", "pushd", "chdir"))
# A program's own option to change its folder (`env -C ~/w t/ed`, `make -C`, `git -C`,
# `--chdir=`): its folder, where it names one, bounds what follows as a cd's does.
_CHANGES_OPTION = frozenset(("-C", "--chdir", "--directory", "--cwd", "--workdir"))
_SEPARATED = re.compile(r"([;&|()<>\n])")
# A folder that is a link the kernel makes to any other (`/proc/self/fd/3` after
# `exec 3<~/w`, `/proc/self/cwd`, `/dev/fd/3`): a cd there goes anywhere.
_MAGIC = ("/proc/", "/dev/fd/", "/dev/stdin", "/dev/stdout", "/dev/stderr")


def _operands(tokens: list[str]) -> list[str]:
    """The operands of the command whose words are `tokens`, to its end (`;`, `|`, `&&`,
    `&`, a bracket, a line): its options and redirections (`cd >&2 ~/w`, `cd 2>/dev/null
    ~/w`, `cd ~/w>&2`) left out."""
    found: list[str] = []
    redirected = False
    for index, token in enumerate(tokens):
        after = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token in ("<", ">"):
            redirected = True
        elif token == "&" and (tokens[index - 1:index] in (["<"], [">"])):
            continue  # `>&2`
        elif token in (";", "&", "|", "(", ")", "\n"):
            break
        elif redirected:
            redirected = False  # the redirection's file or descriptor
        elif token.isdigit() and after in ("<", ">"):
            continue  # `2>`
        elif token not in ("-L", "-P", "--", "-e"):
            found.append(token)
    return found


def _folder_changes(words: list[str], home: str, environ: Mapping[str, str] | None,
                    cuts: Cuts) -> list[str]:
    """Each folder a `cd` (or `pushd`) among `words` goes to, a bound in `cuts` and
    named (held whole inside a grant): home for none, None for `-` (OLDPWD) or a start
    only the running shell knows, and each CDPATH folder a relative one may be found
    in."""
    before_cuts = len(cuts)
    tokens = [t for w in words for t in _SEPARATED.split(w) if t]
    for index, token in enumerate(tokens):
        option, _, value = token.partition("=")
        if option[:2] == "-C" and len(option) > 2:  # `env -C/x`: the folder attached
            option, value = "-C", token[2:]
        elif option.startswith("--") and len(option) > 2 and any(
                o.startswith(option) for o in _CHANGES_OPTION):  # getopt's `--chd=/x`
            option = next(o for o in _CHANGES_OPTION if o.startswith(option))
        if option in _CHANGES_OPTION:
            target = value or (tokens[index + 1] if index + 1 < len(tokens) else "")
            if target.startswith(("/", "~")):
                cuts += [os.path.dirname(p) for p in _as_paths(target + "/x", home, cuts)]
            elif "$" in target or UNKNOWN in target or ".." in target.split("/"):
                cuts.append(None)  # `f() { env -C "$1" t/ed; }`, `-C ../w`: anywhere
            continue
        # anywhere: `eval cd ~/w`, `x cd` bounds more; an alias's (dash's
        # `alias c='cd ~/w'` then `c`) or a name's (`x=cd ~/w`)
        if token.rpartition("=")[2] not in _CHANGES_FOLDER:
            continue
        for target in _operands(tokens[index + 1:])[:3] or ["~"]:  # each bounds
            if target.startswith(("-", "~+", "~-")) or UNKNOWN in target or "$" in target \
                    or (not target.startswith(("/", "~")) and ".." in target.split("/")) \
                    or (os.path.normpath(target) + "/").startswith(_MAGIC):
                # a positional (`f() { cd "$1"; }`), a way out of the running shell's
                # folder (`cd ../work`: where git runs the value, unknown) or a link the
                # kernel makes (/proc/self/fd/3) goes anywhere
                cuts.append(None)
            elif target.startswith(("/", "~")):  # `cd ~` is home, `cd /` the root
                cuts += [os.path.dirname(p) for p in _as_paths(target + "/x", home, cuts)]
            else:
                for folder in (environ or {}).get("CDPATH", "").split(":"):
                    cuts += _as_paths(os.path.join(folder, target), home, cuts)
    return [c for c in cuts[before_cuts:] if c is not None]


def _command_paths(text: str, home: str, depth: int, cuts: Cuts | None = None,
                   environ: Mapping[str, str] | None = None) -> list[str]:
    """The paths in the words of `text`; a quoted word with a blank is both a word (a
    path with a space: `'/x/my keys/id'`) and a script a shell runs (`sh -c 'col -b |
    ~/bin/pager'`), whose own words are read the same way, MAX_DEPTH deep. A command
    whose program only the running shell knows (`$(printf ...)`, `"${0#*Q}"`: what it
    prints may be any path) and a path that starts unknown give None to `cuts`; a
    path a pattern goes on from (`~/w/te[a]m`) is cut there (`_as_paths`)."""
    found: list[str] = []
    words = _words(text)
    found += [p for p in _folder_changes(words, home, environ, [] if cuts is None else cuts)
              if p != "/"]
    for index, word in enumerate(words):
        before = words[index - 1] if index else ";"
        if cuts is not None and _SHELL_TILDE.search(word):
            cuts.append(None)  # bash's ~+ and ~-: the running shell's folder, or its last
        if environ is not None and depth < MAX_DEPTH and _LITERAL_PARAMETER.search(word):
            # `eval \$HOME/w/ed`, `sh -c "\$HOME/w/ed"`: a shell the value runs expands it
            again, inner = script_environ(word, environ, home, cuts)
            found += _command_paths(_expand(again, inner), home, depth + 1, cuts, inner)
        script = before == "-c" and index > 1 and \
            os.path.basename(words[index - 2]) in _SHELLS
        if cuts is not None and UNKNOWN in word and (_UNKNOWN_START.search(word) or (
                word.startswith(UNKNOWN) and (before in _RESERVED or script
                                              or (before[-1:] or "x") in ";&|("))):
            cuts.append(None)
        whole = []
        for match in _PATH.finditer(word):
            spelled = match.group(1).rstrip(" \t\n")
            if word[match.end():match.end() + 1] in ("[", "{"):
                spelled += "{"  # a pattern goes on: the path is cut there
            authority = match.start() > 0 and word[match.start() - 1] == ":"
            named = _as_paths(spelled, home, cuts, authority)
            rest = word[match.start(1):]
            if rest != match.group(1) and not authority:
                # The word read on past the settings' punctuation: a program in a folder
                # whose name holds `,`, `:` or `;` (`~/w/a,b/ed`), where it is there; its
                # cut (`~/w/a`) then only where that is there too (a list's first part).
                on = [p for p in _as_paths(rest, home) if os.path.lexists(p)]
                if on:
                    named = [p for p in named if os.path.lexists(p)] + on
            whole += named
        found += whole
        if depth < MAX_DEPTH and _BLANK.search(word):
            # a path of the script that is a path with a space cut at it is that path
            found += [p for p in _command_paths(word, home, depth + 1, cuts, environ)
                      if not any(
                w.startswith(p) and w[len(p):len(p) + 1].isspace() for w in whole)]
    return found


def environment_paths(environ: Mapping[str, str], home: str, *,
                      variables: Mapping[str, str] | None = None
                      ) -> tuple[EnvironmentPath, ...]:
    """Every path a variable of `environ` names but NOT_PATHS' and lnk's own, by
    variable name, then as the value names them, each with how its value is read
    (`Reading.command`); none that is home or holds it: every grant in home lies in
    it, and `fd -t d . ~` (fzf's FZF_ALT_C_COMMAND) is a common command. `variables`:
    the ones judged instead, their `$NAME`s expanded from `environ` (fish's universal
    variables: fish_variables.py)."""
    home = os.path.normpath(home)
    judged = environ if variables is None else variables
    found: list[EnvironmentPath] = []
    for variable in sorted(judged):
        if variable in NOT_PATHS or variable.startswith(LNK_PREFIX):
            continue
        value = judged[variable]
        if "/" not in value or this_launch(variable, value):
            continue  # no path: most variables (LANG, TERM, SHLVL...), read no further
        reading = read_value(value, home, environ)
        for path in reading.paths:
            if not (home == path or home.startswith(path.rstrip("/") + "/")):
                found.append(EnvironmentPath(variable, path, reading.command))
    return tuple(found)
