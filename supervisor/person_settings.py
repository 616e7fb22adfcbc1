"""What the person's own settings name: the files their shells source and the paths their
git settings give, judged for every folder a sandbox writes.

A name in a table (`~/.bashrc`, `~/.config/git`) misses what those files point at: a
`.bashrc` that runs `. ~/work/team/aliases`, a `~/.gitconfig` whose `include.path` or
`core.hooksPath` names a folder of the person's work. Whatever these name runs as the
person on their next shell or git command, whatever folder it is in, whether or not a
repository is there. So the settings are read here, on the host, by lnk itself (never
run), and every path they name is a candidate: `dotfiles.py` keeps the ones inside a
written folder read-only.

Facts this follows:
- bash, zsh, ksh and dash read the startup files listed in SHELL_STARTUP (their manuals'
  FILES sections); `.` and `source` run a file in the shell itself, found in any form
  the shell takes by reading the text as it does (shell_words.py); a variable takes
  what the files assign it, else the environment's value; relative names from home,
  where a login shell starts; each sourced file is read for what it sources, at most
  MAX_SOURCED files in all;
- fail closed: a name that stays not all literal (a command substitution, a variable
  with no value found, a glob) names the folder it cannot leave, the folder its literal
  part ends in, or the sourcing file's own where it starts unknown (`"$(dirname
  "$0")/lib.sh"`): held whole inside a write grant (docs/runs-as-you.md, section 7);
- readline reads `$INPUTRC`, else `~/.inputrc`, else `/etc/inputrc`, and `$include`
  names more files (readline's manual, "Conditional Init Constructs");
- a git value names a path where it is one: absolute, `~/` (git's own expansion of
  pathname values), or `$HOME/` (the shell git runs a command with expands it), and in
  a repository's analysis a relative word with a `/` (from the work tree, where git runs
  commands); a command's words are split as the shell splits them, and every such word
  is taken (`--opt=PATH` too), whatever the key: finding more only protects more.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from .host_walk import read_small

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
READLINE_STARTUP = ("~/.inputrc", "/etc/inputrc")
MAX_SOURCED = 200
_READ_LIMIT = 1 << 20

_INCLUDE = re.compile(r"^[ \t]*\$include[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
MAX_FOLDER_FILES = 64  # files read in one folder a pattern sources from (`~/.bashrc.d/*`)


class Sources(NamedTuple):
    """What the person's shells and readline read at their start: `files`, each file
    (path, what names it), the startup files themselves first; `folders`, each folder a
    name that is not all literal may source from (path, what names it)."""

    files: list[tuple[str, str]]
    folders: list[tuple[str, str]]


def sourced_files(home: str, environ: dict[str, str] | None = None
                  ) -> list[tuple[str, str]]:
    """The files of shell_sources()."""
    return shell_sources(home, environ).files


def shell_sources(home: str, environ: dict[str, str] | None = None) -> Sources:
    """Each file the person's shells and readline read at their start, followed through
    what they source (`.`, `source`, `$include`), and each folder a sourced name that is
    not all literal leaves open. Read, never run; a file that cannot be read names
    nothing."""
    env = os.environ if environ is None else environ
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
    found: dict[str, str] = {}
    folders: dict[str, str] = {}
    variables: dict[str, list[str]] = {}
    pending = list(starts)
    while pending and len(found) < MAX_SOURCED:
        path, why = pending.pop(0)
        path = os.path.normpath(path)
        if path in found:
            continue
        found[path] = why
        data = read_small(path, limit=_READ_LIMIT)
        if data is None:
            continue
        shown = "~" + path[len(home):] if path.startswith(home + "/") else path
        text = data.decode("utf-8", "surrogateescape")
        if why.startswith("readline") or "inputrc" in os.path.basename(path):
            for match in _INCLUDE.finditer(text):
                named = _included(match.group(1), home)
                if named is not None:
                    pending.append((named, f"included by {shown}"))
            continue
        for named, kind in _sourced(text, path, home, env, variables):
            if kind == "file":
                pending.append((named, f"sourced by {shown}"))
                continue
            folders.setdefault(named, f"a name {shown} sources that is not all literal "
                               "may lead into this folder")
            if kind == "folder" and named not in (home, "/"):
                pending += [(f, f"sourced from a folder by {shown}") for f in
                            _folder_files(named)]
    return Sources(list(found.items()), list(folders.items()))


def _included(word: str, home: str) -> str | None:
    """A readline `$include`'s file (`~/` expanded), or None."""
    if word == "~" or word.startswith("~/"):
        word = home + word[1:]
    return os.path.normpath(os.path.join(home, word)) if word else None


def _sourced(text: str, path: str, home: str, environ: dict[str, str] | os._Environ[str],
             variables: dict[str, list[str]]) -> list[tuple[str, str]]:
    """What the script `text` (the file `path`) sources: (PATH, "file"); where a name
    is not all literal, (the folder its literal part ends in, "folder"), or where it
    starts with what is not known (`"$(dirname "$0")/lib.sh"`, a variable with no
    value found), (the folder of `path` itself, "beside")."""
    from .shell_words import MAX_CANDIDATES, UNKNOWN, commands, values

    script = commands(text)
    for name, word in script.assigned:
        made = values(word.parts, variables, environ, home)
        variables[name] = list(dict.fromkeys(variables.get(name, []) + made))[
            :MAX_CANDIDATES]
    for name, words in script.loops:
        made = [v for w in words for v in values(w.parts, variables, environ, home)]
        variables[name] = list(dict.fromkeys(variables.get(name, []) + made))[
            :MAX_CANDIDATES]
    named: list[tuple[str, str]] = []
    for word in script.sourced:
        for value in values(word.parts, variables, environ, home):
            if UNKNOWN not in value:
                if value:
                    named.append((os.path.normpath(os.path.join(home, value)), "file"))
                continue
            prefix = value[:value.index(UNKNOWN)]
            if not prefix:
                named.append((os.path.dirname(path), "beside"))
            else:
                folder = os.path.join(home, prefix)
                named.append((os.path.normpath(folder[:folder.rfind("/") + 1]), "folder"))
    return named


def _folder_files(folder: str) -> list[str]:
    """The regular files in `folder` a pattern may source, read for what they source
    in turn (at most MAX_FOLDER_FILES)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(e.path for e in entries if e.is_file(follow_symlinks=False)
                          )[:MAX_FOLDER_FILES]
    except OSError:
        return []


# git keys whose value names work, not settings: a repository trusted or kept, a remote's
# address (a local one's repository below a written folder is held as a repository).
_WORK_KEYS = ("safe.directory", "core.worktree")
_WORK_SUFFIXES = (".url", ".pushurl", ".insteadof", ".pushinsteadof")


def value_paths(key: str, value: str, home: str, relative_to: str | None = None
                ) -> list[str]:
    """Every path a git value names (a command's every word, and `--opt=PATH`),
    normalized: absolute, from home (`~/`, and `$HOME/` or `${HOME}/`, which the shell
    git runs a command with expands), and with `relative_to` (the work tree, where git
    runs commands) every relative word with a `/` in it (`tools/run.sh`); none for a
    key that names work rather than settings."""
    if key in _WORK_KEYS or key.endswith(_WORK_SUFFIXES) or not ("/" in value or
                                                               "~" in value):
        return []
    text = value.removeprefix("!").removeprefix(":(optional)")
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
    return list(dict.fromkeys(found))
