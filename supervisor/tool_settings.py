"""What the person's other tools' settings name: every absolute or `~/` path in home's
configuration files, judged for every folder a sandbox writes.

person_settings.py reads the shells' and git's settings; a red team (issue 26, item 8)
got out through the next tools: `~/.ssh/config`'s `Include` of a team's file in a
written folder (whose `ProxyCommand` ssh then ran), nvim's `init.vim` `source`-ing one.
Every tool has its own way to name a file it reads or runs (ssh's `Include`,
`ProxyCommand`, `Match exec`, `PKCS11Provider`; vim's `source`, `runtimepath`, lua's
`dofile`; tmux's `source-file`, `run-shell`; psql's `\\i`; kubeconfig's `exec`; AWS's
`credential_process`), and a list of keys would miss the next. So, as for git's values,
the rule is the class: each file that runs as the person (runs_as_you.HOME_PLACES' files,
and the entry files of the editors' places: EDITOR_STARTUP) is read as text, and every
word that is a path, absolute, or from home (`~/`, `$HOME/`, `${HOME}/`, ssh's `%d/`),
is a candidate; an existing file among them is read in turn for what it names (at most
MAX_READ files). Finding more only protects more: a path named in a comment is held too.

- A word with a pattern in it (`*`, `?`, `[`, or ssh's `%h` and the like) names every
  path its literal part's folder may hold: that folder (fail closed, as for the shell).
- A word naming a folder that is there is left out: settings name folders to work in
  (tmux's `new-session -c ~/work/proj`), and holding those would keep a sandbox from
  its work; a folder on a tool's code path (vim's `runtimepath+=~/work/plugin`) is a
  stated gap (docs/runs-as-you.md, section 7).
- ssh's `Include` with a relative name is relative to `~/.ssh` (the user's file) or
  `/etc/ssh` (the system's), ssh_config(5).
- Left out: `~/.gitconfig` (git's values are judged by person_settings.value_paths, which
  knows which keys name work, `safe.directory`), and `~/.claude.json`, a state file that
  lists every project folder the person opened, not what runs.
"""

from __future__ import annotations

import os
import re

from .host_walk import read_small

# The editors' own entry files inside their places (vim's and nvim's manuals, "vimrc",
# "config"; tmux(1); Emacs' "Init File"), and the system's files read as the person.
EDITOR_STARTUP = (
    "~/.config/nvim/init.vim", "~/.config/nvim/init.lua", "~/.vim/vimrc", "~/.vim/gvimrc",
    "~/.gvimrc", "~/.exrc", "~/.config/tmux/tmux.conf", "~/.emacs.d/init.el",
    "~/.config/emacs/init.el", "~/.config/gdb/gdbinit",
    "/etc/ssh/ssh_config", "/etc/vim/vimrc", "/etc/vim/vimrc.local", "/etc/vim/gvimrc",
    "/etc/xdg/nvim/sysinit.vim", "/usr/share/nvim/sysinit.vim", "/etc/tmux.conf",
)
# Read by their own rules: the shells' files by person_settings.py (which knows which
# words are commands: `cd ~/work/proj` names no code), git's by value_paths.
LEFT_OUT = ("~/.gitconfig", "~/.claude.json", "~/.bash_aliases", "~/.cargo/env",
            "~/.p10k.zsh", "~/.inputrc")
MAX_READ = 200
_READ_LIMIT = 1 << 20

# A path word: after a line's start, a blank, a quote, `=`, `(`, `,`, `[`, `{` or `:` (a
# YAML key, a PATH-like list); absolute or from home; to the next blank, quote, `:` or
# closing punctuation.
_PATH = re.compile(r"""(?:^|(?<=[\s'"=(,\[{:]))"""
                   r"""((?:~|\$HOME|\$\{HOME\}|%d)?/[^\s'"`,;:()\[\]{}|<>]*)""",
                   re.MULTILINE)
_SSH_INCLUDE = re.compile(r"^[ \t]*include(?:[ \t]*=[ \t]*|[ \t]+)(.+?)[ \t]*$",
                          re.MULTILINE | re.IGNORECASE)
_PATTERN = re.compile(r"[*?\[]|%[^d%]")


def tool_paths(home: str, places: tuple[str, ...] | None = None
               ) -> list[tuple[str, str, str]]:
    """Each path the person's tools' settings name: (path, why, "file" or "folder")."""
    if places is None:
        from .runs_as_you import HOME_PLACES

        places = tuple(p.name for p in HOME_PLACES if p.kind == "file")
    from .person_settings import SHELL_STARTUP

    starts = [name for name in (*places, *EDITOR_STARTUP)
              if name not in LEFT_OUT and name not in SHELL_STARTUP]
    pending = [home + name[1:] if name.startswith("~") else name for name in starts]
    read: set[str] = set()
    named: dict[str, tuple[str, str]] = {}
    while pending and len(read) < MAX_READ:
        path = pending.pop(0)
        if path in read:
            continue
        read.add(path)
        data = read_small(path, limit=_READ_LIMIT)
        if data is None or b"\0" in data[:4096]:
            continue  # missing, or a program rather than settings
        text = data.decode("utf-8", "surrogateescape")
        shown = "~" + path[len(home):] if path.startswith(home + "/") else path
        for found, kind in _named(text, path, home):
            if found in named or found in (home, "/"):
                continue
            named[found] = (f"named in {shown}: your tool reads or runs it there", kind)
            if not found.startswith((home + "/", "/etc/")):
                continue  # a program or the system's data: not read for what it names
            if kind == "file":
                pending.append(found)
            else:  # a pattern's folder (`Include ~/.ssh/config.d/*`): each file there
                from .person_settings import _folder_files

                pending += _folder_files(found)
    return [(path, why, kind) for path, (why, kind) in named.items()]


def _named(text: str, path: str, home: str) -> list[tuple[str, str]]:
    """The paths `text` (the file `path`) names: (path, kind)."""
    words = [m.group(1) for m in _PATH.finditer(text)]
    if os.path.basename(path) in ("config", "ssh_config") and "ssh" in path:
        base = os.path.dirname(path)  # ~/.ssh or /etc/ssh: a relative Include's folder
        for match in _SSH_INCLUDE.finditer(text):
            for quoted in match.group(1).split():
                name = quoted.strip("\"'")
                if not name.startswith(("/", "~")):
                    words.append(os.path.join(base, name))
    found = []
    for spelled in words:
        word = spelled
        for prefix in ("$HOME", "${HOME}", "%d", "~"):
            if spelled.startswith(prefix + "/"):
                word = home + spelled[len(prefix):]
        word = word.rstrip(".:")
        pattern = _PATTERN.search(word)
        if pattern:
            folder = word[:pattern.start()]
            found.append((os.path.normpath(folder[:folder.rfind("/") + 1] or "/"), "folder"))
        elif len(word) > 1 and not word.startswith("//"):
            normal = os.path.normpath(word)
            if not os.path.isdir(normal) or os.path.islink(normal):
                found.append((normal, "file"))
    return found
