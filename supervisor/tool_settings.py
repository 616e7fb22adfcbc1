"""What the person's other tools' settings name: every path in home's configuration files,
judged for every folder a sandbox writes.

person_settings.py reads the shells' and git's settings; a red team (issue 26, item 8)
got out through the next tools: `~/.ssh/config`'s `Include` of a team's file in a
written folder (whose `ProxyCommand` ssh then ran), nvim's `init.vim` `source`-ing one.
Every tool has its own way to name a file it reads or runs (ssh's `Include`,
`ProxyCommand`, `Match exec`, `PKCS11Provider`; vim's `source`, `runtimepath`, lua's
`dofile`; tmux's `source-file`, `run-shell`; psql's `\\i`; kubeconfig's `exec`; AWS's
`credential_process`; hg's `[hooks]`), and a list of keys would miss the next. So, as
for git's values, the rule is the class: each file that runs as the person
(runs_as_you.HOME_PLACES' files, and EDITOR_STARTUP: the editors' entry files, the other
version-control systems' user settings, the system's) is read as text, and every path
word in it is a candidate; an existing file among them is read in turn for what it
names. Finding more only protects more: a path named in a comment is held too.

- Words are split as the tools split them (`words`): quotes and a backslash keep blanks
  in a name (`my\\ team`, `"~/my team/x"`); a path starts after any character no name
  ends in (lesskey's `LESSOPEN=|~/x`), absolute or from home (`~/`, `$HOME/`,
  `${HOME}/`, ssh's `%d/`), and ends at the settings' punctuation. A line naming home in
  the settings' own language (`os.getenv("HOME") .. "/work/x"`) joins it to each
  absolute-looking string there; a path up to the line's end, blanks unquoted (gdb's
  `source ~/my  team/x`), counts where it is there.
- A word with a pattern in it (`*`, `?`, `[`, or ssh's `%h` and the like) names every
  path its literal part's folder may hold: that folder (fail closed, as for the shell),
  and each file there is read.
- A word naming a folder that is there is held as a folder: a tool may run what is in
  it (gdb's `add-auto-load-safe-path`, vim's `runtimepath+=`).
- ssh's `Include` with a relative name is relative to `~/.ssh` (the user's file) or
  `/etc/ssh` (the system's), ssh_config(5); Mercurial's files are read by
  hg_settings.named_paths too (a relative `%include`, `python:FILE:func` hooks).
- Bounds (MAX_READ, MAX_FOLDER_FILES): one reached refuses the launch (SettingsBound,
  exit status 125) rather than leave the rest unread.
- Left out: `~/.gitconfig` (git's values are judged by person_settings.value_paths, which
  knows which keys name work, `safe.directory`), and `~/.claude.json`, a state file that
  lists every project folder the person opened, not what runs.
"""

from __future__ import annotations

import os
import re

from .errors import LaunchError
from .host_walk import read_small

# The editors' own entry files inside their places (vim's and nvim's manuals, "vimrc",
# "config"; tmux(1); Emacs' "Init File"), the other version-control systems' user
# settings (hgrc(5) "Files"; Sapling's and Jujutsu's configuration pages), the
# system's files read as the person, and the debuggers' and REPLs' home startup
# files. A name with `*` is each file its folder holds; `**`, each file below it.
EDITOR_STARTUP = (
    "~/.config/nvim/init.vim", "~/.config/nvim/init.lua", "~/.vim/vimrc", "~/.vim/gvimrc",
    # Every file of nvim's settings folder, and of vim's folders it runs at a start or
    # for a file type (`:h runtimepath`): plugin/*.vim runs at every start, lua/ what
    # init.lua requires by name (red team 4 planted through both). vim's pack/ and the
    # plugin managers' folders are other people's plugins: docs/runs-as-you.md.
    "~/.config/nvim/**", "~/.vim/plugin/**", "~/.vim/after/**", "~/.vim/ftplugin/**",
    "~/.vim/autoload/**", "~/.vim/ftdetect/**", "~/.vim/indent/**", "~/.vim/syntax/**",
    "~/.gvimrc", "~/.exrc", "~/.config/tmux/tmux.conf", "~/.emacs.d/init.el",
    "~/.config/emacs/init.el", "~/.config/gdb/gdbinit",
    "~/.hgrc", "~/.config/hg/hgrc", "~/.config/sapling/sapling.conf",
    "~/.jjconfig.toml", "~/.config/jj/config.toml", "~/.config/jj/conf.d/*",
    "/etc/ssh/ssh_config", "/etc/vim/vimrc", "/etc/vim/vimrc.local", "/etc/vim/gvimrc",
    "/etc/xdg/nvim/sysinit.vim", "/usr/share/nvim/sysinit.vim", "/etc/tmux.conf",
    "/etc/mercurial/hgrc", "/etc/mercurial/hgrc.d/*",
    # The home copies of the folder startup files (runs_as_you._FOLDER_STARTUP): each
    # runs as its tool's code at every start (red team 3 ran what ~/.pdbrc and ~/.perldb
    # named from a grant).
    "~/.pdbrc", "~/.perldb", "~/.lldbinit", "~/.irbrc", "~/.pryrc", "~/.byebugrc",
    "~/.Rprofile", "~/.octaverc", "~/.ghci", "~/.ocamlinit", "~/.iex.exs",
)
# Read by their own rules: the shells' files by person_settings.py (which knows which
# words are commands: `cd ~/work/proj` names no code), git's by value_paths.
LEFT_OUT = ("~/.gitconfig", "~/.claude.json", "~/.bash_aliases", "~/.cargo/env",
            "~/.p10k.zsh", "~/.inputrc")
# Bounds of the reading. One reached refuses the launch (SettingsBound): cutting the
# reading short would leave what the rest names writable, unsaid.
MAX_READ = 2000  # files read in all, what they name followed
MAX_FOLDER_FILES = 1000  # files of one folder a pattern names (`Include ~/.ssh/config.d/*`)
_READ_LIMIT = 1 << 20

# Where a path word may start in a word of the settings: absolute or from home, after
# the word's start or any character no path name ends in (`LESSOPEN=|~/...`, `(~/x`).
# `$HOME` after a letter too (`ProxyCommand ssh -F$HOME/x`: the shell expands it there).
_START = re.compile(r"(?:(?<![\w.~$%/\\-])(?:~|%d)?|\$HOME|\$\{HOME\})/(?!/)")
# Where it ends: the settings' punctuation (a blank only where quoted or escaped: the
# words are split first, as the tools split them).
_END = re.compile(r"""[`,;:()\[\]{}|<>'"]""")
# The home folder spelled in the settings' own language, joined to an absolute-looking
# string (`os.getenv("HOME") .. "/work/x"`, `$HOME . '/work/x'`, `expand('~')`).
_BLANKS = re.compile(r"[ \t\r\v\f]+")  # what words() splits at outside quotes
_HOME_JOINED = re.compile(r"HOME|~|homedir|home_dir", re.IGNORECASE)
# A quoted relative string with a `/` in it, on a line that names home: a part a
# settings' language joins to home (red team 3: gdb's python `os.path.join(os.environ[
# 'HOME'], 'work/x.py')`).
_RELATIVE_PART = re.compile(r"""(['"])([^'"\s/$~%][^'"\s]*/[^'"\s]*)\1""")
_SSH_INCLUDE = re.compile(r"^[ \t]*include(?:[ \t]*=[ \t]*|[ \t]+)(.+?)[ \t]*$",
                          re.MULTILINE | re.IGNORECASE)
_PATTERN = re.compile(r"[*?\[]|%[^d%]")


class SettingsBound(LaunchError):
    """A bound of the reading was reached: the launch is refused (exit status 125), the
    file or folder and the bound named, rather than the rest left unread."""

    def __init__(self, where: str, bound: str, value: int):
        what = (f"the folder {where}, which a pattern in your settings names, holds more "
                f"than {value} files" if bound == "MAX_FOLDER_FILES" else
                f"your tools' settings name more than {value} files to read (the next: "
                f"{where})")
        super().__init__(
            f"{what}: lnk reads each for the paths it names, to keep what your tools run "
            f"out of a sandbox's reach, and stops at {bound} = {value} rather than leave "
            "the rest unread", hint="move the files your settings do not need out of "
            "that folder, or name fewer; lnk refuses to start until then")
        self.where, self.bound, self.value = where, bound, value


def tool_paths(home: str, places: tuple[str, ...] | None = None
               ) -> list[tuple[str, str, str]]:
    """Each path the person's tools' settings name: (path, why, "file" or "folder").
    Raises SettingsBound where there is more to read than the bounds allow."""
    if places is None:
        from .runs_as_you import HOME_PLACES

        places = tuple(p.name for p in HOME_PLACES if p.kind == "file")
    from .person_settings import SHELL_STARTUP

    starts = [name for name in (*places, *EDITOR_STARTUP)
              if name not in LEFT_OUT and name not in SHELL_STARTUP]
    pending: list[str] = []
    for name in starts:
        path = home + name[1:] if name.startswith("~") else name
        if path.endswith("/**"):
            pending += _tree_files(path[:-3])
        else:
            pending += _folder_files(path[:-2]) if path.endswith("/*") else [path]
    read: set[str] = set()
    named: dict[str, tuple[str, str]] = {}
    while pending:
        path = pending.pop(0)
        if path in read:
            continue
        if len(read) >= MAX_READ:
            raise SettingsBound(path, "MAX_READ", MAX_READ)
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
            elif kind == "pattern":  # a pattern's folder (`Include ~/.ssh/config.d/*`)
                pending += _folder_files(found)
    return [(path, why, "file" if kind == "file" else "folder")
            for path, (why, kind) in named.items()]


def _folder_files(folder: str) -> list[str]:
    """The regular files in `folder`, every one (SettingsBound past MAX_FOLDER_FILES)."""
    try:
        with os.scandir(folder) as entries:
            files = sorted(e.path for e in entries if e.is_file(follow_symlinks=False))
    except OSError:
        return []
    if len(files) > MAX_FOLDER_FILES:
        raise SettingsBound(folder, "MAX_FOLDER_FILES", MAX_FOLDER_FILES)
    return files


def _tree_files(folder: str) -> list[str]:
    """Every file below `folder`, through links as the tool follows them (a linked
    folder once), sorted (SettingsBound past MAX_FOLDER_FILES in all)."""
    files: list[str] = []
    seen: set[str] = set()
    pending = [folder]
    while pending:
        current = pending.pop()
        real = os.path.realpath(current)
        if real in seen:
            continue
        seen.add(real)
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir():
                        pending.append(entry.path)
                    elif entry.is_file():
                        files.append(entry.path)
        except OSError:
            continue
        if len(files) > MAX_FOLDER_FILES:
            raise SettingsBound(folder, "MAX_FOLDER_FILES", MAX_FOLDER_FILES)
    return sorted(files)


def words(line: str) -> list[tuple[str, bool]]:
    """The words of one line of settings, split at blanks as a shell or the tools
    split them: quotes (' and ") removed, a backslash escaping the next character, an
    unclosed quote running to the line's end. Each with whether a blank, quoted or
    escaped, is in it."""
    if "'" not in line and '"' not in line and "\\" not in line:
        # Most lines (and every line of data a setting names, a CA bundle's 3600) have
        # neither quotes nor escapes: split() splits them as the loop below would.
        return [(word, False) for word in _BLANKS.split(line) if word]
    found: list[tuple[str, bool]] = []
    word: list[str] = []
    quote = ""
    blank = started = escaped = False
    for char in line:
        if escaped:
            word.append(char)
            blank |= char in " \t"
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = started = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
                blank |= char in " \t"
        elif char in "'\"":
            quote, started = char, True
        elif char in " \t\r\v\f":
            if started:
                found.append(("".join(word), blank))
            word, blank, started = [], False, False
        else:
            word.append(char)
            started = True
    if started:
        found.append(("".join(word), blank))
    return found


def path_words(text: str) -> list[tuple[str, bool]]:
    """Every path word of `text`, in each word of each line, wherever it starts: (the
    word as spelled, to the end of its word or the settings' punctuation, blanks quoted
    or escaped kept; whether it is joined to the home folder in the settings' language,
    `os.getenv("HOME") .. "/work/x"`)."""
    found: list[tuple[str, bool]] = []
    for line in text.splitlines():
        joined = bool(_HOME_JOINED.search(line))
        if not joined and "\\" not in line and not _START.search(line):
            continue  # no path starts in it, quotes taken off or not (a CA bundle's data)
        for word, _ in words(line):
            for start in _START.finditer(word):
                end = _END.search(word, start.end())
                spelled = word[start.start():end.start() if end else len(word)]
                found.append((spelled, False))
                if joined and spelled.startswith("/"):
                    found.append((spelled, True))
        if joined:  # a relative part joined to home (os.path.join(HOME, 'work/x.py'))
            found += [("/" + m.group(2), True) for m in _RELATIVE_PART.finditer(line)
                      if "://" not in m.group(2)]
    return found


def rest_of_line(text: str) -> list[str]:
    """Each path word to the end of its line, blanks unquoted kept: where a tool takes
    the rest of the line for one name (gdb's `source ~/my team/x`), counted only where
    such a path is there (_named)."""
    found = []
    for line in text.splitlines():
        if " " not in line and "\t" not in line:
            continue  # no blank for a path to run on through
        for start in _START.finditer(line):
            end = _END.search(line, start.end())
            rest = line[start.start():end.start() if end else len(line)].rstrip()
            if " " in rest or "\t" in rest:
                found.append(rest)
    return found


def _with_blanks(path: str) -> list[str]:
    """What a path word with blanks in it names: the word cut at each blank (a quoted
    command's arguments follow its program: `"~/bin/x --flag"`), or whole (`"~/my
    team/x"`). Each form that is there; else each whose folder is there and whose last
    name has no blank; else the word cut at its first blank."""
    cuts = [m.start() for m in re.finditer(r"[ \t]", path)] + [len(path)]
    forms = [path[:cut] for cut in cuts if cut > 0]
    there = [form for form in forms if os.path.lexists(form)]
    if there:
        return there
    likely = [form for form in forms if not re.search(r"[ \t]", os.path.basename(form))
              and os.path.isdir(os.path.dirname(form))]
    return likely or forms[:1]


def _named(text: str, path: str, home: str) -> list[tuple[str, str]]:
    """The paths `text` (the file `path`) names: (path, "file", "folder" or "pattern")."""
    spelled_words = path_words(text)
    if os.path.basename(path) in ("config", "ssh_config") and "ssh" in path:
        base = os.path.dirname(path)  # ~/.ssh or /etc/ssh: a relative Include's folder
        for match in _SSH_INCLUDE.finditer(text):
            for name, _ in words(match.group(1)):
                if not name.startswith(("/", "~")):
                    spelled_words.append((os.path.join(base, name), False))
    if os.path.basename(path) in ("hgrc", ".hgrc", "sapling.conf") or "/hgrc.d/" in path:
        from .hg_settings import named_paths  # relative %include, python: hooks

        spelled_words += [(p, False) for p, _ in named_paths(home, path, home)]
    found = []
    for spelled_rest in rest_of_line(text):
        rest = spelled_rest
        for prefix in ("$HOME", "${HOME}", "%d", "~"):
            if spelled_rest.startswith(prefix + "/"):
                rest = home + spelled_rest[len(prefix):]
        cuts = [m.start() for m in re.finditer(r"[ \t]", rest)] + [len(rest)]
        for form in (rest[:cut] for cut in cuts[1:]):
            if os.path.lexists(form) and not _PATTERN.search(form):
                found.append((os.path.normpath(form), "folder" if os.path.isdir(form)
                              and not os.path.islink(form) else "file"))
    for spelled, joined in spelled_words:
        word = home + spelled if joined else spelled
        for prefix in ("$HOME", "${HOME}", "%d", "~"):
            if spelled.startswith(prefix + "/"):
                word = home + spelled[len(prefix):]
        for named in _with_blanks(word) if " " in word or "\t" in word else [word]:
            form = named.rstrip(".:")
            pattern = _PATTERN.search(form)
            if pattern:
                folder = form[:pattern.start()]
                found.append((os.path.normpath(folder[:folder.rfind("/") + 1] or "/"),
                              "pattern"))
            elif len(form) > 1 and not form.startswith("//"):
                normal = os.path.normpath(form)
                kind = "folder" if os.path.isdir(normal) and not os.path.islink(normal) \
                    else "file"
                found.append((normal, kind))
    return found
