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
  FILES sections); `.` and `source` run a file in the shell itself; only a literal path
  is followed (`~`, `$HOME` and `${HOME}` expanded; a name with another variable, a
  glob or a command substitution is a stated gap), relative names from home, where a
  login shell starts; each sourced file is read for what it sources, at most
  MAX_SOURCED files in all;
- readline reads `$INPUTRC`, else `~/.inputrc`, else `/etc/inputrc`, and `$include`
  names more files (readline's manual, "Conditional Init Constructs");
- a git value names a path where it is one: absolute, or `~/` (git's own expansion of
  pathname values); a command's words are split as the shell splits them, and every
  absolute or `~/` word is taken (`--opt=PATH` too): finding more only protects more.
"""

from __future__ import annotations

import os
import re

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

# `.` or `source` at a command's start: a line's start, after ; & | ( { ! or a keyword.
_SOURCE = re.compile(
    r"""(?:^|[;&|({!]|\bthen\b|\bdo\b|\belse\b)[ \t]*(?:\.|source)[ \t]+"""
    r"""("[^"\n]*"|'[^'\n]*'|[^\s;&|)]+)""", re.MULTILINE)
_INCLUDE = re.compile(r"^[ \t]*\$include[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)


def _literal(word: str, home: str, relative_to: str) -> str | None:
    """A sourced name as the shell opens it, or None where it is not a literal path."""
    if word[:1] in "\"'" and word[-1:] == word[:1]:
        quote, word = word[0], word[1:-1]
        if quote == '"' and "`" in word:
            return None
    for variable in ("${HOME}", "$HOME"):
        if word == variable or word.startswith(variable + "/"):
            word = home + word[len(variable):]
    if word == "~" or word.startswith("~/"):
        word = home + word[1:]
    if not word or any(c in word for c in "$`*?[") or word.startswith("~"):
        return None
    return os.path.normpath(os.path.join(relative_to, word))


def sourced_files(home: str, environ: dict[str, str] | None = None
                  ) -> list[tuple[str, str]]:
    """Each file the person's shells and readline read at their start, followed through
    what they source (`.`, `source`, `$include`): (path, what names it), the startup
    files themselves first. Read, never run; a file that cannot be read names nothing."""
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
        readline = why.startswith("readline") or "inputrc" in os.path.basename(path)
        for named in _named(data.decode("utf-8", "surrogateescape"), home, readline):
            pending.append((named, f"sourced by {shown}"))
    return list(found.items())


def _named(text: str, home: str, readline: bool) -> list[str]:
    """The literal paths `text` sources (one pass of the pattern over the whole text,
    in C: a line-by-line loop cost milliseconds on Debian's bash_completion); a match in
    a comment is left out."""
    named = []
    for match in (_INCLUDE if readline else _SOURCE).finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        before = text[start:match.start(1)]
        if "#" in before and not readline:
            continue  # in a comment (or after a `#` in a word: finding less is a gap)
        path = _literal(match.group(1), home, home)
        if path is not None:
            named.append(path)
    return named


# git keys whose value names work, not settings: a repository trusted or kept, a remote's
# address (a local one's repository below a written folder is held as a repository).
_WORK_KEYS = ("safe.directory", "core.worktree")
_WORK_SUFFIXES = (".url", ".pushurl", ".insteadof", ".pushinsteadof")


def value_paths(key: str, value: str, home: str) -> list[str]:
    """Every absolute or `~/` path a git value names (a command's every word, and
    `--opt=PATH`), normalized; none for a key that names work rather than settings."""
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
            if path.startswith("/") and not path.startswith("//"):
                found.append(os.path.normpath(path.rstrip(";&|)")))
    return list(dict.fromkeys(found))
