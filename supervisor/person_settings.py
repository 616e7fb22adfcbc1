"""What the person's own settings name: the files their shells read and run and the paths
their git settings give, judged for every folder a sandbox writes.

A name in a table (`~/.bashrc`, `~/.config/git`) misses what those files point at: a
`.bashrc` that runs `. ~/work/team/aliases`, a `~/.gitconfig` whose `include.path` or
`core.hooksPath` names a folder of the person's work. Whatever these name runs as the
person on their next shell or git command, whatever folder it is in, whether or not a
repository is there. So the settings are read here, on the host, by lnk itself (never
run), and every path they name is a candidate: `dotfiles.py` keeps the ones inside a
written folder read-only, `grants.py` refuses a grant that is one.

The shells' files are judged by structure (docs/runs-as-you.md, section 7), not by the
forms a list knows:
- bash, zsh, ksh and dash read the startup files listed in SHELL_STARTUP (their manuals'
  FILES sections); the text is read as the shell reads it (shell_words.py), every
  quoted string and here-document again as a script (it may be run later);
- every word anywhere that is a path, absolute or from home, is `named` (held inside a
  written folder); what `.`/`source` names is read in turn; a folder put on PATH, and
  the folder a sourced or run name not all literal lies in, `runs_in` (a grant that is
  or lies inside one is refused);
- fail closed: what cannot be bounded (a name found from the folder the shell is in, a
  sourced name whose start only the running shell knows, a reader's bound) is one of
  `refusals`, and a launch that writes anything is refused naming the file and line;
- readline reads `$INPUTRC`, else `~/.inputrc`, else `/etc/inputrc`, and `$include`
  names more files (readline's manual, "Conditional Init Constructs");
- a git value names a path where it is one: absolute, `~/` (git's own expansion of
  pathname values), or `$HOME/` (the shell git runs a command with expands it), and in
  a repository's analysis a relative word with a `/` (from the work tree, where git runs
  commands); a command's words are split as the shell splits them, and every such word
  is taken (`--opt=PATH` too), whatever the key: finding more only protects more.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import TYPE_CHECKING, NamedTuple

from .errors import LaunchError
from .host_walk import read_small

if TYPE_CHECKING:
    from collections.abc import Callable

    from .shell_words import Script, Word

# The shells' startup files (bash(1), zsh(1) STARTUP/SHUTDOWN FILES, dash(1), ksh(1),
# tcsh(1), Xsession(5)), home's and the system's: each is read for what it sources.
SHELL_STARTUP = (
    "~/.profile", "~/.bash_profile", "~/.bash_login", "~/.bashrc", "~/.bash_logout",
    "~/.bash_aliases", "~/.zshenv", "~/.zprofile", "~/.zshrc", "~/.zlogin", "~/.zlogout",
    "~/.kshrc", "~/.mkshrc", "~/.tcshrc", "~/.cshrc", "~/.login", "~/.xsessionrc",
    "~/.xprofile", "~/.config/fish/config.fish",
    "/etc/profile", "/etc/bash.bashrc", "/etc/zsh/zshenv", "/etc/zsh/zprofile",
    "/etc/zsh/zshrc", "/etc/zsh/zlogin", "/etc/zshenv", "/etc/zshrc",
)
# fish's folders of startup files (fish(1) "Configuration files"; functions autoload).
FISH_FOLDERS = ("~/.config/fish/conf.d", "~/.config/fish/functions")
READLINE_STARTUP = ("~/.inputrc", "/etc/inputrc")
MAX_SOURCED = 400  # files read in all; more refuses the launch (Sources.refusals)
_READ_LIMIT = 1 << 20  # a startup file's bytes read; a longer one refuses the launch

_NAME = re.compile(r"[\w.+~-][\w./+~-]*")  # a relative name as people write them
_SEPARATED = re.compile(r"[\s;&|()<>`'\"]+")  # what splits a string run later
# A readline line's words: split at blanks, quotes, `:` and each backslash escape of a
# key or macro (`\C-j`, `\M-x`, `\e`, `\n`, `\x0a`, `\012`): a macro typing a path
# before `\C-j` (accept-line) names the path (red team 3 ran it on the next Enter).
_MACRO_SPLIT = re.compile(r"[\s\"':]+|\\(?:[CM]-|x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)")
_INCLUDE = re.compile(r"^[ \t]*\$include[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
MAX_FOLDER_FILES = 256  # files read in one folder a pattern sources from (`~/.bashrc.d/*`)


class Sources(NamedTuple):
    """What the person's shells and readline read at their start: `files`, each file
    (path, what names it), the startup files themselves first; `folders`, each folder a
    name that is not all literal may source from (path, what names it); `named`, every
    path any word of these files names, anywhere (path, what names it): held inside a
    written folder, the file, or a folder whole (docs/runs-as-you.md, section 7);
    `runs_in`, each folder the shell runs what is in it from: a PATH folder the files
    add, the folder a sourced or run name not all literal lies in (a write grant that
    is or lies inside one is refused; one inside a grant held whole); `refusals`, what
    lnk cannot bound (a name found from the folder the shell is in, a name whose start
    only the running shell knows, a reader's bound): each refuses a launch that writes
    anything."""

    files: list[tuple[str, str]]
    folders: list[tuple[str, str]]
    named: list[tuple[str, str]]
    runs_in: list[tuple[str, str]]
    refusals: list[tuple[str, str, str]]  # (where: file and line, what, change)


def sourced_files(home: str, environ: dict[str, str] | None = None
                  ) -> list[tuple[str, str]]:
    """The files of shell_sources()."""
    return shell_sources(home, environ).files


def shell_sources(home: str, environ: dict[str, str] | None = None) -> Sources:
    """Each file the person's shells and readline read at their start, followed through
    what they source (`.`, `source`, `$include`), each folder a sourced name that is
    not all literal leaves open, every path a word names, each PATH folder, and what
    cannot be bounded. Read, never run; a file that cannot be read names nothing. Once
    per start within home_places.found_once (the grants' check, then each written
    folder's analysis, ask)."""
    home = os.path.normpath(home)
    if environ is None:
        from .once_per_start import found_once_for

        return found_once_for("shell_sources", home,
                              lambda: _read_sources(home, os.environ))
    return _read_sources(home, environ)


class _Reading:
    """What the startup files name so far, as they are read one by one."""

    def __init__(self, home: str, env: dict[str, str] | os._Environ[str]) -> None:
        self.home, self.env = home, env
        self.found: dict[str, str] = {}
        self.folders: dict[str, str] = {}
        self.named: dict[str, str] = {}
        self.runs_in: dict[str, str] = {}
        self.refusals: list[tuple[str, str, str]] = []
        self.variables: dict[str, list[str]] = {}
        self.pending: list[tuple[str, str]] = []
        self.candidates: set[str] = set()  # files read as what a pattern may source
        self.readline: set[str] = set()  # files a readline file `$include`s, read as its
        self.cds: dict[str, None] = {home: None}  # home, and each folder a `cd` names
        # A hook's reading (hook_text.py): the work tree's top, where git runs the hook
        # and a relative name is found (githooks(5)); and what relative names name
        # there, held where a file is (a word of a hook is often no path: `s/a/b/`).
        self.top: str | None = None
        self.relative: dict[str, str] = {}

    def shown(self, path: str) -> str:
        home = self.home
        return "~" + path[len(home):] if path.startswith(home + "/") else path

    def refuse(self, where: str, what: str, change: str) -> None:
        self.refusals.append((where, what, change))


def _read_sources(home: str, env: dict[str, str] | os._Environ[str]) -> Sources:
    starts: list[tuple[str, str]] = []
    zdotdir = env.get("ZDOTDIR", "")
    for name in SHELL_STARTUP:
        path = home + name[1:] if name.startswith("~") else name
        starts.append((path, "a shell's startup file"))
        if zdotdir.startswith("/") and name.startswith("~/.z"):
            starts.append((os.path.join(zdotdir, name[2:]), "a shell's startup file"))
    for variable in ("ENV", "BASH_ENV"):
        if env.get(variable, "").startswith("/"):
            starts.append((env[variable], f"${variable}, run by every shell of its kind"))
    inputrc = env.get("INPUTRC", "")
    for name in ((inputrc,) if inputrc.startswith("/") else READLINE_STARTUP):
        path = home + name[1:] if name.startswith("~") else name
        starts.append((path, "readline's startup file"))
    reading = _Reading(home, env)
    reading.pending = list(starts)
    for name in FISH_FOLDERS:  # fish sources conf.d/*.fish at every start, autoloads
        folder = home + name[1:]  # functions/NAME.fish when NAME is typed (red team 3)
        files = [f for f in _folder_files(folder, 1 << 16) if f.endswith(".fish")]
        if len(files) > MAX_FOLDER_FILES:
            reading.refuse(f"{reading.shown(folder)} (fish's startup files)", "it holds "
                           f"more than {MAX_FOLDER_FILES} files, more than lnk reads",
                           "keep fewer files there")
            files = files[:MAX_FOLDER_FILES]
        reading.pending += [(f, "fish's startup file") for f in files]
    follow(reading)
    return Sources(list(reading.found.items()), list(reading.folders.items()),
                   list(reading.named.items()), list(reading.runs_in.items()),
                   reading.refusals)


def follow(reading: _Reading, *, prepare: Callable[[str], str] | None = None) -> None:
    """Read each pending file in turn, and what it sources: as readline's where it is
    one, else as a shell script (its text through `prepare` first: a hook's)."""
    while reading.pending:
        path, why = reading.pending.pop(0)
        path = os.path.normpath(path)
        if path in reading.found:
            continue
        if len(reading.found) >= MAX_SOURCED:
            reading.refuse(f"{reading.shown(path)} ({why})", f"more than {MAX_SOURCED} "
                           "files are sourced from your shells' startup files, more than "
                           "lnk reads", "source fewer files, or join some")
            break
        reading.found[path] = why
        data = read_small(path, limit=_READ_LIMIT + 1)
        if data is None:
            continue
        shown = reading.shown(path)
        if reading.top is not None and b"\0" in data[:8192]:
            continue  # a program, not a script: nothing in it is read (a stated gap)
        if len(data) > _READ_LIMIT:
            reading.refuse(f"{shown} ({why})", f"it is longer than {_READ_LIMIT} bytes, "
                           "more than lnk reads", "make it shorter, or split it")
            continue
        text = data.decode("utf-8", "surrogateescape")
        if reading.top is None and (why.startswith("readline") or path in reading.readline
                                    or "inputrc" in os.path.basename(path)):
            _readline(reading, text, path, shown)
            continue
        _script(reading, prepare(text) if prepare else text, path, shown)


def _readline(reading: _Reading, text: str, path: str, shown: str) -> None:
    """readline's file: what `$include` names; a macro bound to `shell-...`, any word
    that is a path: named."""
    for match in _INCLUDE.finditer(text):
        named = _included(match.group(1), reading.home)
        if named is not None:
            # read as readline reads it, whatever its name (red team 26f: a macro in
            # ~/.config/readline/keys was read as a shell's words, the path it types cut)
            reading.readline.add(os.path.normpath(named))
            reading.pending.append((named, f"included by {shown}"))
    for number, line in enumerate(text.splitlines(), 1):
        for word in _MACRO_SPLIT.split(line):
            value = _included(word, reading.home) if word.startswith(("~/", "/")) else None
            if value is not None:
                reading.named.setdefault(value, f"named by {shown} line {number}")


def _included(word: str, home: str) -> str | None:
    """A readline `$include`'s file (`~/` expanded), or None."""
    if word == "~" or word.startswith("~/"):
        word = home + word[1:]
    return os.path.normpath(os.path.join(home, word)) if word else None


def _pieces(value: str) -> list[str]:
    """What in a word's value may be a path: the whole, what follows its first `=`
    (`--opt=PATH`, `NAME=PATH`), and each `:`-separated element of either (a PATH)."""
    found = [value, *_SEPARATED.split(value)[1:]]  # `a;~/w/p`: a string run later
    if "=" in value:
        found.append(value.partition("=")[2])
    return list(dict.fromkeys(found + [e for f in found if ":" in f for e in f.split(":")]))


def _home(value: str, home: str) -> str:
    """`~` and `~/` as home: the shell expands them after `=` and each `:` of an
    assignment too."""
    return home + value[1:] if value == "~" or value.startswith("~/") else value


def _held(value: str) -> str | None:
    """The path an absolute value names (where its start is known: up to its last `/`
    before what is not known, a folder), normalized; None for a relative value."""
    from .shell_words import first_unknown

    cut = first_unknown(value)
    if cut == 0 or not value.startswith("/") or value.startswith("//"):
        return None
    if cut > 0:
        value = value[:value.rfind("/", 0, cut) + 1]
    return os.path.normpath(value.rstrip(";&|)"))


def _script(reading: _Reading, text: str, path: str, shown: str) -> None:
    """A shell script's file: what it sources (followed), what its words name, what
    it puts on PATH, and what cannot be bounded."""
    from .shell_words import (
        ARGUMENT,
        BESIDE,
        MAX_SCRIPTS,
        UNKNOWN,
        commands,
        first_unknown,
        render,
        values,
    )

    home, env, variables = reading.home, reading.env, reading.variables
    beside = list(dict.fromkeys((os.path.dirname(path),
                                 os.path.dirname(os.path.realpath(path)))))

    def placed(made: list[str]) -> list[str]:
        """Values as this file made them: its own folder where it said so."""
        return list(dict.fromkeys(f + v[1:] if v.startswith(BESIDE) else v
                                  for v in made for f in (beside if v.startswith(BESIDE)
                                                          else [""])))

    script = commands(text)
    if script.cut:
        reading.refuse(shown, f"it holds more than {MAX_SCRIPTS} scripts (substitutions, "
                       "strings), more than lnk reads", "make it simpler, or split it")
    for name, word in script.assigned:
        made = placed(values(word.parts, variables, env, home))
        variables[name] = _capped(variables.get(name, []) + made)
        if name in _code_variables():
            _code_variable(reading, script, name, word, made=made, shown=shown)
    for name, words in script.loops:
        made = placed([v for w in words for v in values(w.parts, variables, env, home)])
        variables[name] = _capped(variables.get(name, []) + made)
    runs = {id(w) for w in script.sourced} | {id(w) for w in script.run}
    for word in script.words:
        if all(isinstance(p, str) and "/" not in p and "~" not in p for p in word.parts):
            continue  # names no path: most words
        made = values(word.parts, variables, env, home)
        for value in placed(made) if reading.top is not None else made:
            # (a hook's `"$(dirname "$0")/impl.sh"`: the file beside it, where its
            # link leads too)
            for piece in _pieces(value) if "/" in value else ():
                held = _held(_home(piece, home))
                where = f"{shown} line {word.line}"
                if held is None and reading.top is not None:
                    _from_top(reading, piece, f"named by {where}")
                if held is None or held in ("/", home):
                    continue
                if first_unknown(piece) < 0:
                    if not os.path.isdir(held) or os.path.islink(held):
                        reading.named.setdefault(held, f"named by {where}")
                elif id(word) in runs:  # `~/w/bin/$x`: what the shell runs is in there
                    reading.runs_in.setdefault(held, f"a name {where} sources or runs "
                                               "is not all literal: what is in this "
                                               "folder may run")
                else:
                    reading.folders.setdefault(held, f"a word of {where} is not all "
                                               "literal and may name what is here")
    for word in script.cds:
        for value in (_home(v, home) for v in values(word.parts, variables, env, home)):
            if value and first_unknown(value) < 0 and (value.startswith("/") or
                                                       reading.top is not None):
                reading.cds[os.path.normpath(os.path.join(reading.top or "/", value))] = None
    for word in script.run:  # `cd ~/w && ./run.sh`: from home, and each `cd`'s folder
        if word.string or script.on_demand(word):
            continue  # text, or what the person types: as if they typed it
        for value in values(word.parts, variables, env, home):
            if "/" in value and not value.startswith("/") and first_unknown(value) < 0:
                for folder in reading.cds:
                    (reading.named if reading.top is None else reading.relative).setdefault(
                        os.path.normpath(os.path.join(folder, value)),
                        f"run by {shown} line {word.line}")
    # A hook's names are judged wherever it lies: a name it sources whose start is not
    # known refuses (a system file's is taken as its own folder, below).
    in_home = reading.top is not None or (path.startswith(home + "/")
                                          and path not in reading.candidates)
    for word in script.sourced:
        # (as a message shows it: what only the shell knows, a substitution's output)
        where = f"{shown} line {word.line}"
        spelled = render(word.parts).replace(UNKNOWN, "$(...)")
        # What the person types runs where they choose; a string may be only text; a
        # system file is the system's: a name found from the shell's folder there
        # holds at home only (docs/runs-as-you.md, section 7: the stated gap).
        demand = script.on_demand(word) or word.string or not in_home
        for value in values(word.parts, variables, env, home):
            cut = first_unknown(value)
            if reading.top is not None and value and cut != 0 and not value.startswith("/"):
                _sourced_from_top(reading, value, cut, shown, where)
                continue
            if cut < 0 and value.startswith("/"):
                reading.pending.append((value, f"sourced by {shown}"))
            elif cut < 0 and value:
                found = _on_path(value, reading)
                if found is not None:
                    reading.pending.append((found, f"sourced by {shown} (found on PATH)"))
                elif demand or not _NAME.fullmatch(value):
                    reading.pending.append((os.path.normpath(os.path.join(home, value)),
                                            f"sourced by {shown}"))
                else:
                    reading.pending += [(os.path.normpath(os.path.join(folder, value)),
                                         f"sourced by {shown}") for folder in reading.cds]
                    reading.refuse(where, f"`. {spelled}` is found from the folder the "
                                   "shell is in, which may be one this run writes (a "
                                   "terminal opened in the project): your next shell "
                                   "there would run what the run puts there",
                                   f"name it from home (`~/{value.removeprefix('./')}`) or "
                                   "by its full path")
            elif cut == 0 and value[0] == ARGUMENT:
                continue  # what the function's caller gives: its words are judged
            elif cut == 0 and (value[0] == BESIDE or not in_home):
                # the sourcing file's own folder (or, in a system file, where it lies)
                for folder in beside:
                    reading.folders.setdefault(folder, f"a name {shown} sources that is "
                                               "not all literal may lead into this folder")
                    rest = value[1:]
                    if first_unknown(rest) < 0 and rest.startswith("/"):
                        reading.pending.append((folder + rest, f"sourced by {shown}"))
            elif cut == 0 and not word.string:
                reading.refuse(where, f"`. {spelled}` sources a name whose start only the "
                               "running shell knows: lnk cannot tell whether it lies in a "
                               "folder this run writes", "write its start as a path (`~/`, "
                               "`$HOME/`, `/...`), or a variable the file sets to one")
            elif not value.startswith("/"):
                if not demand and _NAME.fullmatch(value[:cut]):
                    reading.refuse(where, f"`. {spelled}` is found from the folder the "
                                   "shell is in, which may be one this run writes",
                                   "name it from home (`~/...`) or by its full path")
            else:
                prefix = value[:cut]
                folder = os.path.normpath(prefix[:prefix.rfind("/") + 1])
                reading.folders.setdefault(folder, f"a name {shown} sources that is not "
                                           "all literal may lead into this folder")
                reading.runs_in.setdefault(folder, f"a name {where} sources is not all "
                                           "literal: what is in this folder may run")
                if folder not in (home, "/"):
                    _folder(reading, folder, value[len(folder):], where)


# Variables whose each `:`-element is a folder the shell or a program runs code from, as
# the person, in every shell they start (zsh: lowercase arrays tied to them).
_FOLDER_LISTS = ("PATH", "path", "FPATH", "fpath", "BASH_LOADABLES_PATH")


def _code_variables() -> dict[str, str]:
    """Each variable a startup file may set that names code: its kind ("list" of
    folders, "folder", "file") with the environment's own (home_places.py)."""
    from .home_places import CODE_PATHS, CODE_PLACES

    found = dict.fromkeys((*_FOLDER_LISTS, *(n for n, _ in CODE_PATHS)), "list")
    found.update((n, kind) for n, kind, _ in CODE_PLACES)
    return found


def _code_variable(reading: _Reading, script: Script, name: str, word: Word, *,
                   made: list[str], shown: str) -> None:
    """A startup file sets `name`, a variable naming code, to the values `made`: each
    folder is one the shell runs from (`runs_in`), each file is named; an element found
    from the folder the shell is in refuses the launch, as a relative sourced name."""
    from .shell_words import first_unknown, render

    home, where = reading.home, f"{shown} line {word.line}"
    kind = _code_variables()[name]
    inherited = set(reading.env.get(name, "").split(":"))
    for value in made:
        elements = value.split(":") if kind == "list" and name.isupper() else [value]
        for element in (_home(e, home) for e in elements):
            cut = first_unknown(element)
            if (element in inherited and element) or cut == 0:
                continue  # lnk's own environment's (home_places judges it), or inherited
            held = _held(element)
            if held is None and reading.top is not None and element and cut < 0 and \
                    not element.startswith("~"):  # a hook's: from the top (hook_text.py)
                held = os.path.normpath(os.path.join(reading.top, element))
            if held is not None and kind == "file":
                reading.named.setdefault(held, f"{name} names it in {where}")
            elif held is not None:
                reading.runs_in.setdefault(held, f"{name} names it in {where}")
    if word.string or script.on_demand(word) or reading.top is not None:
        return  # a hook's relative element is from the top: hook_text.py, not held
    # A relative element written in the line itself (`.`, `node_modules/.bin`, an empty
    # one: `$PATH:`); one a variable's value makes is left to the values above, since
    # loops that rebuild PATH (asdf.sh) make empty ones no shell ever sees.
    for element in _elements(render(word.parts)) if kind == "list" else []:
        if "$" not in element and first_unknown(element) < 0 and not element.startswith(
                ("/", "~")):
            reading.refuse(where, f"{name} gets {element or 'an empty element'!r}, found "
                           "from the folder the shell is in, which may be one this run "
                           "writes: what you run there would run what the run puts there",
                           "name it by its full path (`$HOME/...`)")
            break


def _from_top(reading: _Reading, value: str, why: str) -> None:
    """A relative word of a hook that may be a path: from the work tree's top, where git
    runs the hook (held where a file is there: hook_text.py)."""
    from .shell_words import first_unknown

    if reading.top is None or first_unknown(value) >= 0 or "/" not in value or \
            "://" in value or value.startswith(("-", "~", "$", "/")) or \
            _SEPARATED.search(value) or "=" in value:
        return  # `--opt=PATH` and `NAME=PATH` give their path as a piece of its own
    reading.relative.setdefault(os.path.normpath(os.path.join(reading.top, value)), why)


def _sourced_from_top(reading: _Reading, value: str, cut: int, shown: str,
                      where: str) -> None:
    """A name a hook sources that is not absolute: found on PATH first where it has no
    `/` (bash's `.`), and from the folder its shell is in, the work tree's top (or a
    folder a `cd` of it names); read in turn. A pattern's known folder there is open
    (held whole); one that is the top itself bounds nothing: refused."""
    assert reading.top is not None
    if cut < 0:
        found = _on_path(value, reading)
        if found is not None:
            reading.pending.append((found, f"sourced by {shown} (found on PATH)"))
        for folder in reading.cds:
            path = os.path.normpath(os.path.join(folder, value))
            reading.relative.setdefault(path, f"sourced by {where}")
            reading.pending.append((path, f"sourced by {shown}"))
        return
    prefix = value[:cut]
    folder = os.path.normpath(os.path.join(reading.top, prefix[:prefix.rfind("/") + 1]))
    if folder == reading.top:
        reading.refuse(where, f"it sources a name from the work tree's top that is not "
                       f"all literal ({value[:cut]}...): any file there, which the run may "
                       "write", "name the file in full, or keep it in a folder of its own")
        return
    reading.folders.setdefault(folder, f"a name {shown} sources that is not all literal "
                               "may lead into this folder")
    reading.runs_in.setdefault(folder, f"a name {where} sources is not all literal: what "
                               "is in this folder may run")
    _folder(reading, folder, value[prefix.rfind("/") + 1:], where)


def _elements(text: str) -> list[str]:
    """The `:`-separated elements of a value's text, a `${...}` whole."""
    found, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == ":" and depth == 0:
            found.append(text[start:index])
            start = index + 1
    return [*found, text[start:]]


def _capped(made: list[str]) -> list[str]:
    """A variable's values, each once; past MAX_CANDIDATES, one more that is not known
    (never cut short unsaid: a name built from it then starts or goes on unknown)."""
    from .shell_words import MAX_CANDIDATES, UNKNOWN

    made = list(dict.fromkeys(made))
    return made if len(made) <= MAX_CANDIDATES else [*made[:MAX_CANDIDATES], UNKNOWN]


def _on_path(name: str, reading: _Reading) -> str | None:
    """Where bash finds a sourced name without a `/` on PATH (lnk's and what the files
    put there), or None: it then looks in the folder it is in."""
    if "/" in name:
        return None
    folders = [*reading.env.get("PATH", "").split(":"), *reading.runs_in]
    for folder in folders:
        if folder.startswith("/") and os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def _folder(reading: _Reading, folder: str, rest: str, where: str) -> None:
    """A folder a pattern sources from: its files the pattern's `rest` may match (what
    is not known matching anything), read for what they source in turn; more than
    MAX_FOLDER_FILES refuses the launch."""
    from .shell_words import NOT_KNOWN

    pattern = "".join("*" if c in NOT_KNOWN else "[*]" if c == "*" else
                      "[?]" if c == "?" else "[[]" if c == "[" else c
                      for c in rest.lstrip("/"))
    files = [f for f in _folder_files(folder, 1 << 16) if "/" in pattern
             or fnmatch.fnmatchcase(os.path.basename(f), pattern)]
    if len(files) > MAX_FOLDER_FILES:
        reading.refuse(where, f"it sources from {reading.shown(folder)}, which holds more "
                       f"than {MAX_FOLDER_FILES} files, more than lnk reads",
                       "keep fewer files there")
        files = files[:MAX_FOLDER_FILES]
    reading.candidates.update(files)
    reading.pending += [(f, f"sourced from a folder by {where}") for f in files]


def _folder_files(folder: str, limit: int = 64) -> list[str]:
    """The regular files in `folder` a pattern may source (at most `limit`)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.path for e in entries if e.is_file(follow_symlinks=False)
                          )[:limit]
    except OSError:
        return []


# git keys whose value names work, not settings: a repository trusted or kept, a remote's
# address (a local one's repository below a written folder is held as a repository).
_WORK_KEYS = ("safe.directory", "core.worktree")
_WORK_SUFFIXES = (".url", ".pushurl", ".insteadof", ".pushinsteadof")
_EXT = "ext::"  # git-remote-ext(1): the rest is a program and its arguments


# The repository's top as a git value's shell finds it: relative, as git runs the value
# there (an alias runs at the top).
_TOPLEVEL = re.compile(r"""["']?\$\(git rev-parse --show-(?:toplevel|cdup)\)["']?""")
# The repository's own git folder (`!ls $(git rev-parse --git-dir)/hooks`): held at every
# written top and below it as .git is (dotfiles.py), whatever it holds.
_GIT_DIR = re.compile(
    r"""["']?\$\(git rev-parse --(?:git-dir|absolute-git-dir|git-common-dir)\)["']?""")


class SettingsUnbounded(LaunchError):
    """A git value names a path whose start only the shell git runs it with knows (a
    command's output): it may be any file, so no hold bounds it (red team 4); the
    launch is refused (exit status 125), as for the shells' startup files."""

    def __init__(self, key: str, value: str):
        super().__init__(
            f"your git settings' {key} names a path whose start only the shell git runs "
            f"it with knows ({value!r}: a command's output), which may be a file this run "
            "writes", hint="write the path out (`~/x` or `$HOME/x`); lnk judges every path "
            "your git settings name, and refuses what it cannot bound "
            "(docs/runs-as-you.md)")
        self.key = key


def value_paths(key: str, value: str, home: str, relative_to: str | None = None,
                bounds: list[str] | None = None) -> list[str]:
    """Every path a git value names (a command's every word, and `--opt=PATH`),
    normalized: absolute, from home (`~/`, and `$HOME/` or `${HOME}/`, which the shell
    git runs a command with expands), and with `relative_to` (the work tree, where git
    runs commands) every relative word with a `/` in it (`tools/run.sh`); none for a
    key that names work rather than settings. git's ext:: transport runs a program: the
    command of an `ext::` url, or of the url subsection an insteadOf rewrites to
    (`[url "ext::/x/run %S"] insteadOf = team:`), is read as a command's value.
    `bounds` gets the known folder of each pattern (`~/w/t*/ed`): any file in it."""
    ext = value[len(_EXT):] if value.startswith(_EXT) else None
    if key.startswith("url." + _EXT) and key.endswith(_WORK_SUFFIXES[2:]):
        ext = key[len("url." + _EXT):key.rindex(".")]
    if ext is not None:
        return value_paths("core.ext", ext, home, relative_to, bounds)
    if key in _WORK_KEYS or key.endswith(_WORK_SUFFIXES) or not ("/" in value or
                                                               "~" in value):
        return []
    text = _GIT_DIR.sub(".git", _TOPLEVEL.sub(
        ".", value.removeprefix("!").removeprefix(":(optional)")))
    words = text.split()
    if any(c in text for c in "\"'\\"):
        # Quoted: split as the shell does; shlex is imported only then, since a default
        # start imports no module it does not need (test_start_path.py).
        import shlex

        try:
            words = shlex.split(text, comments=False)
        except ValueError:
            pass
    found = []
    for word in words:
        for part in (word, word.partition("=")[2]):
            path = home + part[1:] if part == "~" or part.startswith("~/") else part
            for variable in ("$HOME/", "${HOME}/"):
                if part.startswith(variable):
                    path = home + "/" + part[len(variable):]
            path = path.rstrip(";&|)")
            if path.startswith("/") and not path.startswith("//"):
                found.append(os.path.normpath(path))
            elif relative_to is not None and "/" in path and "://" not in path and \
                    not path.startswith(("-", "~", "$", "(", "{")):
                found.append(os.path.normpath(os.path.join(relative_to, path)))
    # And every path as the environment rule reads a command (environment_paths.py): a
    # quoted script read again as the script `sh -c` runs (`!sh -c 'git x && ~/w/y'`,
    # textconv `sh -c '~/w/c "$0"'`), a path after `$(`, `;`, `&`, a backquote, or a
    # one-letter option (`ssh -F$HOME/w/c`): red team 3 ran each from a grant.
    # Its parameters expanded as the shell git runs it with expands them, with the
    # launch environment (red team 4: `${HOME%/}/w/ed`, `${A:-${B:-$HOME}}/w/ed`).
    # A path whose start only that shell knows (`$(echo ~)/w/ed`) may be any file: the
    # launch is refused (SettingsUnbounded), but for the repository's own top, which git
    # runs such a value in (`!$(git rev-parse --show-toplevel)/x`: a relative program).
    # So is a program whose start only it knows (`$(printf ...)`, `"${0#*Q}"`: git gives
    # $0 the value itself), and a path through one (red team 5). A pattern's folder
    # (`~/w/t*/ed`) is named a folder (`bounds`): the names it matches are any there.
    # What the value assigns, sets or changes to (`cd`) first is read as it leaves the
    # shell for its later words (red team 6: environment_paths.script_environ).
    from .environment_paths import Cuts, _command_paths, _expand, script_environ, substitutions

    cuts: Cuts = []
    text, environ = script_environ(text, {**os.environ, "HOME": home}, home, cuts)
    found += _command_paths(_expand(text, environ), home, 1, cuts, environ)
    for script in substitutions(text):  # what a substitution runs (`$(~/w/x.sh)`)
        found += _command_paths(_expand(script, environ), home, 2, cuts, environ)
    if None in cuts:
        raise SettingsUnbounded(key, value)
    if bounds is not None:
        bounds += [c for c in cuts if c is not None]
    return list(dict.fromkeys(found))
