"""A project's dot files: what at the top of a written folder runs as you outside it.

Pure analysis of one write grant's top, the same for every OS: which paths a sandbox
writing that folder must not change, and why. It reads files and never runs anything:
git's settings are parsed here (no `git config`, no hooks, no filters), hook stubs are
read as text. The mechanism (read-only binds and placeholders on Linux, deny rules on
macOS) is each backend's business; this module returns plain data.

What is protected (the decision record, "A project's dot files"):
- `.git` whole (a commit needs `write_dot_files`): settings and hooks run on any git
  command, and `commondir` in it points git at settings anywhere. Where `.git` is a file
  (`gitdir: PATH`), the git directory it names and that directory's `commondir` target
  are protected too, wherever they are;
- `.envrc` (direnv), `.vscode` (VS Code's tasks and settings), `.idea` (JetBrains'
  startup tasks), `.husky` whole (husky's stubs in `.husky/_` run the scripts beside);
- what git's own settings name: `core.hooksPath` (relative to the worktree's top, where
  hooks run) and `include.path` / `includeIf.*.path` files (relative to the including
  file), followed as git follows them; the person's own settings (system and global)
  are read for these too, since a relative `core.hooksPath = .githooks` there names a
  folder in every repository; and a program the settings run (a textconv, a merge
  driver, a filter, core.fsmonitor...) where they name it by a path, as git runs it
  on any diff, merge or status;
- each submodule (a gitlink in the index, which lies in the protected git directory)
  as the top: its `.git` (file or folder, held where missing) and what its settings
  name, since `git status` at the top runs `git status` in every submodule checked
  out, with that repository's settings (a `.git` pointed elsewhere runs its fsmonitor);
- the settings of a hook manager whose stub is in a hooks folder: pre-commit's config
  (the `--config=` its stub names) and lefthook's config files and script folders.

Not protected: a project's build files (Makefile, package.json's scripts) and a dev
container's settings, which run only when you build or open the project that way.

Facts the parser follows (git's config.c, git-config(1)):
- section and key names are case-insensitive, a `[section "sub"]` subsection is not; the
  deprecated `[section.sub]` form lowercases the subsection;
- a value runs to the end of the line or a `#`/`;` outside quotes; `\\` `\\"` `\\n`
  `\\t` `\\b` are escapes, a backslash at the end of a line continues it; a key with no
  `=` is boolean true; an include that is missing is silently ignored by git (so a
  sandbox could make it: it is held like a missing dot folder); includes nest at most
  10 deep;
- a `.git` file must start with the exact 8 bytes `gitdir: `; a relative path is
  relative to the file's folder; `commondir` is relative to the git directory.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from .home_places import Place

Kind = Literal["file", "folder"]

# Folder-type dot files: a missing one is held by an empty folder on Linux for the run.
TOP_FOLDERS: tuple[tuple[str, str], ...] = (
    (".vscode", "VS Code runs its tasks and the programs its settings name when it opens "
                "the folder"),
    (".idea", "JetBrains IDEs run its startup tasks and run configurations when they open "
              "the project"),
    (".husky", "husky's stubs in .husky/_ run the hook scripts beside them"),
)
GIT_REASON = "git runs its settings and hooks on any git command"
ENVRC_REASON = "direnv runs it when you cd into the folder, once allowed"
BARE_REASON = ("with HEAD, objects/ and refs/ here (or where a commondir here points) git "
               "takes the folder itself for a bare repository, and runs its settings on any "
               "git command in it or below")
COMMIT_REASON = "files.commit leaves it read-only"

# What git reads in a git directory to decide what to run or where its settings are
# (setup.c, config.c, hook.c, submodule.c, worktree.c), each held when missing in a form
# git reads as absent: an empty settings file, an empty folder, an empty alternates
# list, and for `commondir`, which git dies on when empty, `.` (the git directory
# itself). The rest (objects, refs, the index, HEAD, logs, the state of a merge, rebase
# or cherry-pick) stays writable under files.commit, and what a run leaves there is
# checked after it (commit_check.py).
GIT_METADATA: tuple[tuple[str, Kind, str], ...] = (
    ("config", "file", "git's settings, which name the programs it runs"),
    ("hooks", "folder", "git runs the hooks there"),
    ("info", "folder", "attributes pick the drivers and filters settings define; exclude"),
    ("modules", "folder", "each submodule's git directory: its settings and hooks"),
    ("branches", "folder", "where a remote's address is read from, as settings"),
    ("remotes", "folder", "where a remote's address is read from, as settings"),
    ("objects/info/alternates", "file", "git reads objects from the folders it names, "
                                        "anywhere, as you"),
)
GIT_DIR_METADATA: tuple[tuple[str, Kind, str, bytes], ...] = (
    ("commondir", "file", "it points git at settings and hooks anywhere", b"."),
    ("config.worktree", "file", "the worktree's own settings", b""),
)
# A linked worktree's `gitdir` names its checkout: `git worktree repair` writes a .git
# file there, `git worktree remove` deletes it (worktree.c, builtin/worktree.c). Held
# where it is; one made by a run is checked after it.
WORKTREE_GITDIR: tuple[str, Kind, str] = (
    "gitdir", "file", "it names the checkout `git worktree repair` writes a .git file into "
                      "and `git worktree remove` deletes")

MAX_INCLUDE_DEPTH = 10  # git's own limit
MAX_SUBMODULES = 1000  # gitlinks followed in all, nested ones too
MAX_INDEX_SIZE = 256 << 20  # a git index read for its gitlinks: what a huge repository's is
_STUB_READ_LIMIT = 64 * 1024
_GITFILE_PREFIX = b"gitdir: "

# lefthook's loader: the first existing name wins, extension by extension (loader.go).
LEFTHOOK_EXTENSIONS = (".yml", ".yaml", ".json", ".jsonc", ".toml")
LEFTHOOK_MAIN = ("lefthook", ".lefthook", ".config/lefthook")
LEFTHOOK_LOCAL = ("lefthook-local", ".lefthook-local", ".config/lefthook-local")
LEFTHOOK_FOLDERS = (".lefthook", ".lefthook-local")
PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"


# NamedTuples, not dataclasses: the analysis runs on every start, and making a dataclass
# costs about 0.4 ms to import here.


class Protected(NamedTuple):
    """One path a sandbox writing the folder must not change.

    `path` is the host path git (or the tool) reads, links resolved; `name` is how the
    tool names it, for messages. `kind` is what is there, or what would be when missing.
    `placeholder`: for a missing path that a program could make to be run later, the
    first missing component, which Linux holds with an empty folder or file for the run;
    None when missing is harmless (`.envrc`, which direnv runs only once allowed) or when
    it exists. `link`: a component of the name that is a link (from the folder's top,
    or from `/` for an absolute name), which a program could point elsewhere; the
    backend refuses it where the sandbox can write it. `content`: what a file
    placeholder holds, where an empty file would not read as absent to the tool.
    `parents`: for a setting below the top whose folder is missing too (`.github/hooks`
    without `.github`), the missing folders above it, outermost first: Linux makes them
    for the run as plain writable folders (a project may still make `.github/workflows`),
    and the placeholder is then the path itself.
    """

    path: str
    name: str
    kind: Kind
    exists: bool
    reason: str
    placeholder: str | None = None
    link: str | None = None
    content: bytes = b""
    parents: tuple[str, ...] = ()


class DotFiles(NamedTuple):
    """The protections of one write grant's top, in a stable order (the top's own dot
    files first, then what git's settings and the hook managers name)."""

    top: str
    protected: tuple[Protected, ...]


# --- git's config files -------------------------------------------------------------------


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


# --- paths --------------------------------------------------------------------------------


def _lstat_kind(path: str) -> Literal["file", "folder", "link", "missing", "other"]:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


def _walk(path: str, start: str) -> tuple[str | None, str | None]:
    """From `start` (a folder with no link in it) down to `path`: the first component
    that is a link, and the first that is missing (None, None: all there, no link)."""
    rest = path[len(start):].strip("/") if start != "/" else path.strip("/")
    current = start
    for part in rest.split("/") if rest else []:
        current = os.path.join(current, part)
        kind = _lstat_kind(current)
        if kind == "link":
            return current, None
        if kind == "missing":
            return None, current
    return None, None


def _within(path: str, folder: str) -> bool:
    return folder in (path, "/") or path.startswith(folder + "/")


def _expand(value: str, relative_to: str, home: str) -> str | None:
    """A path value as git expands it (`~/`, `:(optional)`), absolute and normalized."""
    value = value.removeprefix(":(optional)")
    if not value or value.startswith("%(prefix)/"):
        return None  # the git installation's own prefix: not a project's file
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    elif value.startswith("~"):
        return None  # ~user: another user's home, which a sandbox of yours cannot write
    return os.path.normpath(os.path.join(relative_to, value))


class _Repository(NamedTuple):
    """One repository the analysis follows: the top's, or a submodule's below it."""

    worktree: str  # where its hooks run and its relative hooks path starts
    git_dir: str  # links resolved
    common_dir: str  # links resolved; the git directory itself without a commondir
    label: str  # "" for the top's; "the submodule PATH's " for one below it


class _Analysis:
    def __init__(self, top: str, home: str, *, commit: bool = False,
                 places: tuple[Place, ...] | None = None):
        self.top = top
        self.home = home
        self.commit = commit
        self.places = places
        self.found: dict[str, Protected] = {}
        self.submodules_seen = 0

    def add(self, name: str, kind: Kind, reason: str, *, hold: bool = True,
            content: bytes = b"", parents: bool = False) -> Protected:
        """Protect `name` (absolute, as the tool names it) once, the first reason kept.

        `parents`: a missing folder above `name` is made writable for the run and
        `name` itself held, rather than the first missing folder held read-only."""
        start = self.top if _within(name, self.top) else "/"
        link, missing = _walk(name, start)
        path = os.path.realpath(name) if link else name
        exists = missing is None and _lstat_kind(path) != "missing"
        if link is None and exists:
            kind = "folder" if _lstat_kind(path) == "folder" else "file"
        placeholder = missing if hold and not exists and link is None else None
        above: tuple[str, ...] = ()
        if parents and placeholder is not None and placeholder != name:
            rest = name[len(placeholder):].strip("/").split("/")[:-1]
            above = tuple(os.path.join(placeholder, *rest[:i]) for i in range(len(rest) + 1))
            placeholder = name
        entry = Protected(path, name, kind, exists, reason, placeholder, link,
                          content if placeholder == name else b"", above)
        return self.found.setdefault(name, entry)

    def run(self) -> DotFiles:
        repository = self.git(self.top)
        self.bare_top()
        self.add(os.path.join(self.top, ".envrc"), "file", ENVRC_REASON, hold=False)
        for name, reason in TOP_FOLDERS:
            self.add(os.path.join(self.top, name), "folder", reason)
        self.agent_settings()
        self.home_places()
        if repository is not None:
            hooks, sha256 = self.git_settings(repository)
            self.hook_managers(repository, hooks)
            self.submodules(repository, sha256, depth=0)
        return DotFiles(self.top, tuple(self.found.values()))

    # -- .git and the git directories it names --------------------------------------------

    def git(self, worktree: str, label: str = "") -> _Repository | None:
        """Protect `worktree`'s .git (a folder, or a gitdir: file and the git directory it
        names) and the commondir there; the repository, or None if there is none.

        Under files.commit a git directory that exists is protected by what git reads
        in it to decide what to run (GIT_METADATA), not whole; a missing .git is held
        whole all the same: a repository made at the top would run its settings.
        """
        dot_git = os.path.join(worktree, ".git")
        kind = _lstat_kind(dot_git)
        if kind == "file":
            self.add(dot_git, "file", f"{label}.git (a gitdir: file): {GIT_REASON}")
            target = _read_gitfile(dot_git)
            if target is None:
                return None
            git_dir = os.path.normpath(os.path.join(worktree, target))
            if not self.commit:
                self.add(git_dir, "folder", f"the git directory {label}.git names (gitdir: "
                         f"{target}): {GIT_REASON}")
        else:
            if not (self.commit and kind == "folder"):
                self.add(dot_git, "folder", f"{label}.git: {GIT_REASON}")
            if kind != "folder":
                return None
            git_dir = dot_git
        git_dir = os.path.realpath(git_dir)
        common_dir = git_dir
        common = _read_small(os.path.join(git_dir, "commondir"))
        if common is not None and common.strip():
            text = common.decode("utf-8", "surrogateescape").rstrip("\r\n")
            named = os.path.normpath(os.path.join(git_dir, text))
            common_dir = os.path.realpath(named)
            if not _within(common_dir, git_dir) and not self.commit:
                self.add(named, "folder", f"the commondir of {git_dir} ({text}): git "
                         "reads its settings and hooks there")
        if self.commit:
            self.git_metadata(git_dir, common_dir, label)
        return _Repository(worktree, git_dir, common_dir, label)

    def git_metadata(self, git_dir: str, common_dir: str, label: str) -> None:
        """What git reads in a git directory to decide what to run: GIT_METADATA in the
        common directory, commondir and config.worktree in the git directory, and those
        two in each linked worktree's own directory (the person's other checkouts read
        them)."""
        for name, kind, why in GIT_METADATA:
            path = os.path.join(common_dir, name)
            self.add(path, kind, f"{label}{self.shown(path)}: {why}; {COMMIT_REASON}")
        for git in dict.fromkeys((git_dir, common_dir)):
            for name, kind, why, content in GIT_DIR_METADATA:
                path = os.path.join(git, name)
                self.add(path, kind, f"{label}{self.shown(path)}: {why}; {COMMIT_REASON}",
                         content=content)
        if git_dir != common_dir:  # this checkout is a linked worktree of the repository
            name, kind, why = WORKTREE_GITDIR
            path = os.path.join(git_dir, name)
            self.add(path, kind, f"{label}{self.shown(path)}: {why}; {COMMIT_REASON}",
                     hold=False)
        try:
            linked = sorted(os.listdir(os.path.join(common_dir, "worktrees")))
        except OSError:
            linked = []
        for name in linked:
            folder = os.path.join(common_dir, "worktrees", name)
            if _lstat_kind(folder) != "folder":
                continue
            for file, kind, why, content in GIT_DIR_METADATA:
                self.add(os.path.join(folder, file), kind,
                         f"the linked worktree {name}'s {file}: {why}", content=content)
            file, kind, why = WORKTREE_GITDIR
            self.add(os.path.join(folder, file), kind,
                     f"the linked worktree {name}'s {file}: {why}", hold=False)

    def agent_settings(self) -> None:
        """The project settings of coding agents and editors (runs_as_you.AGENT_SETTINGS):
        their harness runs the hooks, servers and commands they name when it starts in
        the folder. A missing name below the top (.github/hooks) is held with the
        folders above it made for the run, writable: holding `.github` itself would
        keep the project from making `.github/workflows`."""
        from .runs_as_you import AGENT_SETTINGS

        for setting in AGENT_SETTINGS:
            reason = f"{setting.tool}: {setting.runs}"
            if "*" in setting.name:
                import fnmatch

                try:
                    names = sorted(os.listdir(self.top))
                except OSError:
                    continue
                for name in fnmatch.filter(names, setting.name):
                    self.add(os.path.join(self.top, name), setting.kind, reason, hold=False)
                continue
            path = os.path.join(self.top, setting.name)
            self.add(path, setting.kind, reason, hold=setting.hold, parents=True)

    def home_places(self) -> None:
        """The places that run as the person (home_places.py: the table's, PATH's
        folders and what their commands run) inside a write grant that holds them:
        read-only, held when missing, by their name and where their links lead (a
        dotfiles repository that `~/.bashrc` links into). A grant that is or holds a
        holder, lies inside a place or holds a link on the way is refused before
        (grants.py); a link planted since inside this folder refuses the launch."""
        from .home_places import home_places

        for place in self.places if self.places is not None else home_places(self.home):
            if place.path != self.top and _within(place.path, self.top):
                self.add(place.path, place.kind, f"{place.what} ({place.name})")
            if place.real not in (place.path, self.top) and _within(place.real, self.top):
                entry = self.add(place.real, place.kind,
                                 f"{place.name} leads here: {place.what}")
                link = next((link for link in place.links if _within(link, self.top)),
                            None)
                if link is not None and entry.link is None:
                    self.found[place.real] = entry._replace(link=link, placeholder=None)

    def shown(self, path: str) -> str:
        """A path as a message shows it: from the top when inside it."""
        return os.path.relpath(path, self.top) if _within(path, self.top) else path

    def bare_top(self) -> None:
        """Keep the top from becoming a bare repository, or protect the one it is.

        git's discovery (setup.c, is_git_directory) takes a folder for a git directory
        when its HEAD is a valid ref, objects/ a folder it may enter and refs/ too: a
        sandbox that made HEAD, objects/, refs/ and a config here would run that config
        on the person's next git command in the folder or below it. One of the three
        held keeps the folder from passing: refs (or else objects) as an empty file,
        which git cannot enter, rather than HEAD, since a file named HEAD in the work
        tree makes every `git diff HEAD` there ambiguous. Where the top is a bare
        repository already, what git reads there to run anything is protected.
        """
        head = os.path.join(self.top, "HEAD")
        if _lstat_kind(os.path.join(self.top, "objects")) == "folder" and \
                _lstat_kind(os.path.join(self.top, "refs")) == "folder" and \
                _lstat_kind(head) == "file":
            self.commit, commit = True, self.commit
            try:
                self.git_metadata(self.top, self.top, "the bare repository at the top: ")
            finally:
                self.commit = commit
            if not commit:
                self.add(head, "file", BARE_REASON)
            return
        # commondir moves where is_git_directory looks for objects/ and refs/: held
        # holding ".", the folder itself (git dies on an empty one).
        self.add(os.path.join(self.top, "commondir"), "file", BARE_REASON, content=b".")
        for name in ("refs", "objects"):
            path = os.path.join(self.top, name)
            if _lstat_kind(path) == "missing":
                self.add(path, "file", BARE_REASON)
                return
        self.add(head, "file", BARE_REASON)

    def git_settings(self, repository: _Repository) -> tuple[list[str], bool]:
        """Follow the repository's settings, and the person's own (system and global):
        protect what they name. The hooks folders, and whether object names are SHA-256.

        The person's settings are not writable by a sandbox, but a relative
        core.hooksPath there (`.githooks`, a common convention) names a folder in every
        repository, this one's too; what they include may lie where the sandbox writes.
        """
        hooks_paths: list[str] = []
        sha256 = False
        files = [os.path.join(repository.common_dir, "config"),
                 os.path.join(repository.git_dir, "config.worktree"),
                 *_person_git_configs(self.home)]
        seen: set[str] = set()
        pending = [(path, 0) for path in files]
        while pending:
            config, depth = pending.pop(0)
            if depth > MAX_INCLUDE_DEPTH:
                continue
            data = _read_small(config, limit=1 << 20)  # first: most named files are missing
            if data is None:
                continue
            real = os.path.realpath(config)
            if real in seen:
                continue
            seen.add(real)
            own = _within(real, repository.git_dir) or _within(real, repository.common_dir)
            shown = os.path.basename(config) if depth == 0 and own else config
            for key, value in parse_git_config(data.decode("utf-8", "surrogateescape")):
                if value is None:
                    continue
                if key == "core.hookspath":
                    path = _expand(value, repository.worktree, self.home)
                    if path is None or path == "/dev/null":
                        continue
                    self.add(path, "folder", f"{repository.label}core.hooksPath = {value} "
                             f"in {shown}: git runs the hooks there")
                    hooks_paths.append(path)
                elif key == "include.path" or (key.startswith("includeif.")
                                               and key.endswith(".path")):
                    path = _expand(value, os.path.dirname(config), self.home)
                    if path is None:
                        continue
                    label = "include.path" if key == "include.path" else key[:-5] + ".path"
                    self.add(path, "file", f"{label} = {value} in {shown}: git reads "
                             "settings from it")
                    pending.append((path, depth + 1))
                elif _runs_program(key, value):
                    for path in _programs(value, repository.worktree, self.home):
                        self.add(path, "file", f"{repository.label}{key} = {value} in "
                                 f"{shown}: git runs it")
                elif key == "extensions.objectformat" and own:
                    sha256 = value.lower() == "sha256"
        return [os.path.join(repository.common_dir, "hooks"), *hooks_paths], sha256

    # -- submodules: git at the top runs git in each, with its settings --------------------

    def submodules(self, repository: _Repository, sha256: bool, depth: int) -> None:
        """Protect each submodule's .git (and what its settings name), as the top's.

        A submodule is a gitlink in the repository's index (which the sandbox cannot
        write: it is in the git directory). `git status` at the top runs `git status` in
        each populated one, with that repository's settings, and `git submodule update`
        its hooks: a .git there pointed at a git directory of the sandbox's making (or
        made where there was none) would run its core.fsmonitor on the person's next
        `git status`. .gitmodules is not read: it is a file of the project, writable.
        """
        if depth >= MAX_INCLUDE_DEPTH:
            return
        for path in _gitlinks(os.path.join(repository.git_dir, "index"), sha256):
            if self.submodules_seen >= MAX_SUBMODULES:
                return
            self.submodules_seen += 1
            worktree = os.path.normpath(os.path.join(repository.worktree, path))
            if not _within(worktree, repository.worktree) or worktree == repository.worktree:
                continue
            shown = os.path.relpath(worktree, self.top)
            inner = self.git(worktree, f"the submodule {shown}'s ")
            if inner is None:
                continue
            hooks, inner_sha256 = self.git_settings(inner)
            self.hook_managers(inner, hooks)
            self.submodules(inner, inner_sha256, depth + 1)

    # -- hook managers run from the hooks folders ------------------------------------------

    def hook_managers(self, repository: _Repository, hooks: list[str]) -> None:
        worktree = repository.worktree
        pre_commit: list[tuple[str, str]] = []
        lefthook: list[tuple[str, str]] = []
        for folder in hooks:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                if name.endswith(".sample"):
                    continue
                data = _read_small(os.path.join(folder, name), limit=_STUB_READ_LIMIT)
                if data is None:
                    continue
                if b"File generated by pre-commit" in data:
                    config = re.search(rb"--config=([^\s)\"']+)", data)
                    named = config.group(1).decode("utf-8", "surrogateescape") if config \
                        else PRE_COMMIT_CONFIG
                    pre_commit.append((named, os.path.join(folder, name)))
                elif b"call_lefthook" in data:
                    lefthook.append((name, os.path.join(folder, name)))
                    rc = re.search(rb"\[ -f (\S+) \] && \. \S+", data)
                    if rc:
                        value = rc.group(1).decode("utf-8", "surrogateescape")
                        path = _expand(value, worktree, self.home)
                        if path is not None:
                            self.add(path, "file", f"the rc file lefthook's stub "
                                     f"{os.path.join(folder, name)} sources")
        for named, stub in pre_commit:
            path = _expand(named, worktree, self.home)
            if path is not None:
                self.add(path, "file", f"pre-commit's settings: its stub {stub} runs the "
                         "hooks they list")
        if lefthook:
            stub = lefthook[0][1]
            for group in (LEFTHOOK_MAIN, LEFTHOOK_LOCAL):
                self.lefthook_configs(worktree, group, stub)
            for name in LEFTHOOK_FOLDERS:
                self.add(os.path.join(worktree, name), "folder",
                         f"lefthook's scripts folder: its stub {stub} runs them")

    def lefthook_configs(self, worktree: str, names: tuple[str, ...], stub: str) -> None:
        """Every existing config of the group, and the missing ones that would come first.

        lefthook loads the first name found, extension by extension: a file made ahead
        of the one there would replace it, so each name before it is held.
        """
        reason = f"lefthook's settings: its stub {stub} runs the hooks they list"
        order = [os.path.join(worktree, name + ext)
                 for ext in LEFTHOOK_EXTENSIONS for name in names]
        first = next((i for i, path in enumerate(order) if _lstat_kind(path) != "missing"),
                     None)
        for i, path in enumerate(order):
            if first is None and i > 0:
                break  # none there: the first name, held, comes before every other
            if first is None or i <= first or _lstat_kind(path) != "missing":
                self.add(path, "file", reason)


# Settings whose value is a command git runs (git-config(1)); `alias.*` only with `!`.
_PROGRAM_KEYS = frozenset((
    "core.fsmonitor", "core.pager", "core.editor", "core.askpass", "core.sshcommand",
    "core.gitproxy", "sequence.editor", "diff.external", "interactive.difffilter",
    "gpg.program", "gpg.ssh.defaultkeycommand", "credential.helper",
    "uploadpack.packobjectshook", "web.browser",
))
_PROGRAM_SUFFIXES = (
    ("diff.", ".command"), ("diff.", ".textconv"), ("merge.", ".driver"),
    ("filter.", ".clean"), ("filter.", ".smudge"), ("filter.", ".process"),
    ("difftool.", ".cmd"), ("mergetool.", ".cmd"), ("browser.", ".cmd"), ("pager.", ""),
    ("gpg.", ".program"), ("credential.", ".helper"), ("hook.", ".command"),
)
_BOOLEANS = frozenset(("true", "false", "yes", "no", "on", "off", "1", "0", ""))
_INTERPRETERS = frozenset(("sh", "bash", "dash", "zsh", "env", "python", "python3", "perl",
                           "ruby", "node", "exec"))


_PROGRAM_SECTIONS = frozenset(head[:-1] for head, _ in _PROGRAM_SUFFIXES)


def _runs_program(key: str, value: str) -> bool:
    section = key[:key.find(".")]
    if key in _PROGRAM_KEYS:
        return key != "core.fsmonitor" or value.strip().lower() not in _BOOLEANS
    if section == "alias":
        return value.startswith("!")
    return section in _PROGRAM_SECTIONS and any(
        key.startswith(head) and key.endswith(tail) and len(key) > len(head + tail)
        for head, tail in _PROGRAM_SUFFIXES)


def _programs(value: str, worktree: str, home: str) -> list[str]:
    """The files a command in git's settings runs, where it names them by a path: its
    first word, and the script after an interpreter (`sh tools/x`). A bare name is
    looked up in PATH, not in the project, and names nothing here. Relative paths are
    the worktree's: git runs these commands at its top."""
    import shlex  # only for a repository whose settings name a command

    try:
        words = shlex.split(value.removeprefix("!"), comments=False)
    except ValueError:
        words = value.removeprefix("!").split()
    named: list[str] = []
    for position, word in enumerate(words[:4]):
        if position > 0 and os.path.basename(words[position - 1]) not in _INTERPRETERS:
            break
        if word.startswith("-"):
            continue
        if "/" in word or word.startswith("~"):
            path = _expand(word, worktree, home)
            if path is not None:
                named.append(path)
    return named


def _person_git_configs(home: str) -> list[str]:
    """The person's own settings files git reads in every repository: the system's and
    the global ones (each name git may use, whichever it uses: protecting more is safe)."""
    files = [os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    for path in (os.environ.get("GIT_CONFIG_GLOBAL"), xdg and os.path.join(xdg, "git/config"),
                 os.path.join(home, ".config/git/config"), os.path.join(home, ".gitconfig")):
        if path and path not in files and path != "/dev/null":
            files.append(path)
    return files


_GITLINK = 0o160000
_GITLINK_BYTES = _GITLINK.to_bytes(4, "big")  # the mode as the index stores it


def _gitlinks(index: str, sha256: bool) -> list[str]:
    """The paths of the gitlinks (submodules) in a git index file, read as git reads it.

    The index format (gitformat-index, and read-cache.c's create_from_disk, which is
    what counts): "DIRC", version 2-4, the entry count; each entry 40 bytes of stat data
    (the mode at offset 24), the object name, 16 bits of flags whose low 12 bits are the
    name's length (0xFFF: longer, then up to a NUL), 16 more when the extended bit is set
    (in any version: git does not check), then the name: in versions 2 and 3 that many
    bytes, the entry padded to a multiple of 8 whatever the padding holds; in version 4
    a varint of bytes to strip from the previous name and the rest, NUL-terminated. A
    split index keeps the rest of its entries in the `sharedindex.<name>` file its
    "link" extension names: both are read. Without the gitlink mode anywhere in the file
    (the common case) nothing is parsed. A file that does not parse yields what was read
    before the fault: git refuses such an index too, and runs nothing in a submodule.

    After a run the index is listed by git itself (commit_check.py); this reader serves
    the start, where finding more than git would only protects more.
    """
    data = _read_small(index, limit=MAX_INDEX_SIZE)
    if data is None:
        return []
    oid = 32 if sha256 else 20
    if data[:4] != b"DIRC" or (_GITLINK_BYTES not in data and not _may_split(data, oid)):
        return []
    found: list[str] = []
    try:
        version = int.from_bytes(data[4:8], "big")
        count = int.from_bytes(data[8:12], "big")
        if version not in (2, 3, 4):
            return []
        position, previous = 12, b""
        for _ in range(count):
            path, size = _index_entry(data, position, oid, version, previous)
            if position + size > len(data) - oid:
                raise IndexError("an entry past the end")
            mode = int.from_bytes(data[position + 24:position + 28], "big")
            position += size
            previous = path
            if mode & 0o170000 == _GITLINK:
                found.append(os.fsdecode(path.split(b"\0", 1)[0]))
        shared = _shared_index(data, position, oid)
    except (IndexError, ValueError):
        return found
    if shared:
        found.extend(_gitlinks(os.path.join(os.path.dirname(index), shared), sha256))
    return found


_NAME_MASK, _EXTENDED = 0x0FFF, 0x4000


def _index_entry(data: bytes, position: int, oid: int, version: int, previous: bytes
                 ) -> tuple[bytes, int]:
    """One entry's name and its size on disk, as read-cache.c's create_from_disk reads
    them (ValueError or IndexError where git would die)."""
    flags_at = position + 40 + oid
    if flags_at + 2 > len(data):
        raise IndexError("a truncated entry")
    flags = int.from_bytes(data[flags_at:flags_at + 2], "big")
    length = flags & _NAME_MASK
    name_at = flags_at + (4 if flags & _EXTENDED else 2)
    if version == 4:
        strip, name_at = _varint(data, name_at)
        if position != 12 and strip > len(previous):
            raise ValueError("a name that strips more than the previous one has")
        kept = len(previous) - strip if position != 12 else 0
        if length == _NAME_MASK:
            length = data.index(b"\0", name_at) - name_at + kept
        if length < kept:
            raise ValueError("a name shorter than what it keeps")
        rest = data[name_at:name_at + length - kept]
        return previous[:kept] + rest, name_at - position + length + 1 - kept
    if length == _NAME_MASK:
        length = data.index(b"\0", name_at) - name_at
    name = data[name_at:name_at + length]
    fixed = 40 + oid + (4 if flags & _EXTENDED else 2)
    return name, (fixed + length + 8) & ~7


def _may_split(data: bytes, oid: int) -> bool:
    """Whether a "link" extension header may be in the index: the signature followed
    by a size that fits (a path holding "link" is followed by text, a size far too
    big). Never False for a split index; rarely True for another."""
    at = data.find(b"link", 12)
    while at != -1:
        size = int.from_bytes(data[at + 4:at + 8], "big")
        if oid <= size <= len(data) - at - 8:
            return True
        at = data.find(b"link", at + 1)
    return False


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """git's offset varint (varint.c); (value, the position after it)."""
    byte = data[position]
    position += 1
    value = byte & 0x7F
    while byte & 0x80:
        value += 1
        byte = data[position]
        position += 1
        value = (value << 7) + (byte & 0x7F)
    return value, position


def _shared_index(data: bytes, position: int, oid: int) -> str | None:
    """The `sharedindex.<name>` file a split index's "link" extension names, if any."""
    end = len(data) - oid  # the trailing checksum
    while position + 8 <= end:
        signature = data[position:position + 4]
        size = int.from_bytes(data[position + 4:position + 8], "big")
        if signature == b"link":
            name = data[position + 8:position + 8 + oid]
            if len(name) == oid and any(name):
                return "sharedindex." + name.hex()
            return None
        position += 8 + size
    return None


def _read_small(path: str, limit: int = 4096) -> bytes | None:
    """A regular file's first `limit` bytes, or None (missing, a folder, unreadable).

    What is read here lies where an earlier sandbox could write, and the reader may be
    root: so the path is first opened O_PATH (which opens nothing: no device is armed,
    no pipe waited on), and only a regular file is opened again to be read, through
    that very descriptor. (macOS has no O_PATH: there a non-blocking open, then fstat.)"""
    try:
        fd = _open_regular(path)
    except OSError:
        return None
    if fd is None:
        return None
    try:
        chunks = []
        while limit > 0:
            chunk = os.read(fd, min(limit, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _open_regular(path: str) -> int | None:
    """A read descriptor of `path` when it is a regular file, else None."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
    o_path = getattr(os, "O_PATH", 0)
    if not o_path:
        fd = os.open(path, flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return fd
    where = os.open(path, o_path | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(where).st_mode):
            return None
        return os.open(f"/proc/self/fd/{where}", flags)
    finally:
        os.close(where)


def _read_gitfile(path: str) -> str | None:
    data = _read_small(path)
    if data is None or not data.startswith(_GITFILE_PREFIX):
        return None
    text = data[len(_GITFILE_PREFIX):].split(b"\n", 1)[0].rstrip(b"\r")
    return text.decode("utf-8", "surrogateescape") or None


class GitDirs(NamedTuple):
    """Where the repository checked out at a top keeps its state, links resolved."""

    git_dir: str  # HEAD, the index, the state of an operation in progress
    common_dir: str  # objects, refs, logs, settings, hooks, linked worktrees
    sha256: bool  # extensions.objectformat = sha256: object names are 32 bytes


def git_dirs(top: str) -> GitDirs | None:
    """The git directories of `top`'s repository (a .git folder, a `gitdir:` file, or
    `top` itself a bare repository), found as the analysis finds them; None without one.
    Reads files only, never through a link at the last component."""
    dot_git = os.path.join(top, ".git")
    kind = _lstat_kind(dot_git)
    if kind == "file":
        target = _read_gitfile(dot_git)
        if target is None:
            return None
        git_dir = os.path.realpath(os.path.join(top, target))
    elif kind == "folder":
        git_dir = dot_git
    elif _lstat_kind(os.path.join(top, "objects")) == "folder" and \
            _lstat_kind(os.path.join(top, "refs")) == "folder" and \
            _lstat_kind(os.path.join(top, "HEAD")) == "file":
        git_dir = top
    else:
        return None
    if _lstat_kind(git_dir) != "folder":
        return None
    common_dir = git_dir
    common = _read_small(os.path.join(git_dir, "commondir"))
    if common is not None and common.strip():
        text = common.decode("utf-8", "surrogateescape").rstrip("\r\n")
        common_dir = os.path.realpath(os.path.join(git_dir, text))
    sha256 = False
    config = _read_small(os.path.join(common_dir, "config"), limit=1 << 20)
    if config is not None:
        sha256 = any(key == "extensions.objectformat" and (value or "").lower() == "sha256"
                     for key, value in parse_git_config(config.decode("utf-8", "replace")))
    return GitDirs(git_dir, common_dir, sha256)


def index_gitlinks(dirs: GitDirs) -> list[str]:
    """The gitlinks in the repository's index, read as git reads it (see _gitlinks)."""
    return _gitlinks(os.path.join(dirs.git_dir, "index"), dirs.sha256)


def analyze(top: str, *, home: str, commit: bool = False,
            places: tuple[Place, ...] | None = None) -> DotFiles:
    """The dot files at the top of the write grant `top` (resolved, no links in it).

    `home` expands `~/` in git's settings. `commit` (files.commit): the repository's
    git directory is protected by what git reads to decide what to run, not whole.
    `places`: home_places.home_places(home), when the caller has it for every grant.
    Reads files only; never raises for what it finds (a file it cannot read protects
    what its name alone says).
    """
    return _Analysis(os.path.normpath(top), home, commit=commit, places=places).run()
