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
  on any diff, merge or status; and, whatever the key (the next one no list names:
  `tar.FORMAT.command`), every word of a value that is a path git may run
  (person_settings.value_paths), a relative one where it is a file of the work tree;
- each submodule (a gitlink in the index, which lies in the protected git directory)
  as the top: its `.git` (file or folder, held where missing) and what its settings
  name, since `git status` at the top runs `git status` in every submodule checked
  out, with that repository's settings (a `.git` pointed elsewhere runs its fsmonitor);
- the settings of a hook manager whose stub is in a hooks folder: pre-commit's config
  (the `--config=` its stub names) and lefthook's config files and script folders;
- what every hook of those folders (and the person's template's) names, read as a
  script from the repository's top (hook_text.py): `exec ./scripts/pre-commit.sh`, a
  virtual environment whose python pre-commit's stub runs; what cannot be bounded
  refuses the launch (DotFiles.refusals).
- what the settings of each repository AROUND the top name inside it (`cd ~/proj/sub`:
  ~/proj/.git/config's hooks folder, programs and includes, analysed as the top's own;
  ~/proj/.hg/hgrc's hooks by hg_settings.py): that repository's metadata is outside the
  grant, what it names inside is not.

Not protected: a project's build files (Makefile, package.json's scripts) and a dev
container's settings, which run only when you build or open the project that way.

git's settings are parsed by git_config.py, its index read by git_index.py, a checkout's
git directories found by git_repository.py. Facts the analysis follows (git's config.c):
an include that is missing is silently ignored by git (so a sandbox could make it: it is
held like a missing dot folder); includes nest at most 10 deep.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Literal, NamedTuple

from .git_config import parse_git_config, person_git_configs
from .git_index import gitlinks
from .git_repository import git_dirs, is_git_directory, read_gitfile
from .host_walk import lstat_kind, read_small

if TYPE_CHECKING:
    from .home_places import Place

Kind = Literal["file", "folder"]
Held = Literal["file", "folder", "socket"]

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
_STUB_READ_LIMIT = 64 * 1024

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
    `held_as`: what Linux's placeholder is. An empty folder wherever a person's `git
    status` could list it (git lists no empty folder, and lists every file), whatever
    the tool reads there; a file only inside a git directory (its settings, `commondir`,
    `alternates`), where git lists nothing and must read a file; a socket for `refs`
    (or `objects`) at a top git could take for a bare repository, where it must be no
    folder git may search (access X_OK) and git lists no socket either. `stays`: a placeholder
    here may stay between runs (Linux keeps it while runs follow each other): an empty
    folder the tool reads as no settings (a settings folder, or a folder above a
    setting), under a dot name at the top; never one standing for a file (a tool may
    fail on a folder where it reads a file) nor one without a dot.
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
    held_as: Held = "folder"
    stays: bool = False


class DotFiles(NamedTuple):
    """The protections of one write grant's top, in a stable order (the top's own dot
    files first, then what git's settings and the hook managers name)."""

    top: str
    protected: tuple[Protected, ...]
    unwalked: tuple[str, ...] = ()  # folders below the top the launch walk did not list
    # what below the top was the person's at this launch or a remembered one, for
    # $LNK_HOME to remember (below_top.found_items)
    below: tuple[tuple[str, str], ...] = ()
    # (path, why) of each file kept read-only or run as a hook here that has another
    # name (a hard link) on the top's filesystem: its other name may lie where the
    # sandbox writes, so the launch is refused (view.check_links).
    hard_linked: tuple[tuple[str, str], ...] = ()
    # (where, what, change) of what a hook git runs here names that lnk cannot bound
    # (hook_text.py): the launch is refused (view.check_links).
    refusals: tuple[tuple[str, str, str], ...] = ()


# --- paths --------------------------------------------------------------------------------


def _walk(path: str, start: str) -> tuple[str | None, str | None]:
    """From `start` (a folder with no link in it) down to `path`: the first component
    that is a link, and the first that is missing (None, None: all there, no link)."""
    rest = path[len(start):].strip("/") if start != "/" else path.strip("/")
    current = start
    for part in rest.split("/") if rest else []:
        current = os.path.join(current, part)
        kind = lstat_kind(current)
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
                 places: tuple[Place, ...] | None = None, written: tuple[str, ...] = (),
                 remembered: tuple[tuple[str, str], ...] = ()):
        self.top = top
        self.remembered = remembered
        self.below_found: tuple[tuple[str, str], ...] = ()
        self.home = home
        self.commit = commit
        self.places = places
        self.written = written
        self.found: dict[str, Protected] = {}
        self.submodules_seen = 0
        self.repository: _Repository | None = None
        # While the repositories around the top are analysed: only what lies inside the
        # top (or is reached through a link into it) is this grant's to hold.
        self.inside_only = False
        # Each file git runs or reads its settings from, found on the way (a hook in a
        # folder held whole is no entry of its own): why.
        self.runs: dict[str, str] = {}
        self.refusals: dict[tuple[str, str, str], None] = {}  # hook_text's, in order

    def add(self, name: str, kind: Kind, reason: str, *, hold: bool = True,
            content: bytes = b"", parents: bool = False,
            held_as: Held = "folder", lingers: bool = True) -> Protected:
        """Protect `name` (absolute, as the tool names it) once, the first reason kept.

        `parents`: a missing folder above `name` is made writable for the run and
        `name` itself held, rather than the first missing folder held read-only.
        `held_as`: "file" for a file git reads in a git directory (Protected)."""
        start = self.top if _within(name, self.top) else "/"
        link, missing = _walk(name, start)
        path = os.path.realpath(name) if link else name
        if self.inside_only and not _within(name, self.top) and not (
                link and _within(path, self.top)):
            return Protected(path, name, kind, False, reason)  # not this grant's
        exists = missing is None and lstat_kind(path) != "missing"
        placeholder = missing if hold and not exists and link is None else None
        above: tuple[str, ...] = ()
        if parents and placeholder is not None and placeholder != name:
            rest = name[len(placeholder):].strip("/").split("/")[:-1]
            above = tuple(os.path.join(placeholder, *rest[:i]) for i in range(len(rest) + 1))
            placeholder = name
        as_file = held_as != "folder" and placeholder == name
        first = name[len(self.top):].lstrip("/") if _within(name, self.top) else ""
        stays = lingers and first.startswith(".") and held_as == "folder" and (exists or (
            placeholder is not None and link is None)) and (
            kind == "folder" or placeholder not in (None, name))
        if link is None and exists:
            kind = "folder" if lstat_kind(path) == "folder" else "file"
        entry = Protected(path, name, kind, exists, reason, placeholder, link,
                          content if as_file else b"", above,
                          held_as if as_file else "folder", stays)
        return self.found.setdefault(name, entry)

    def run(self) -> DotFiles:
        repository = self.repository = self.git(self.top)
        self.bare_top()
        self.add(os.path.join(self.top, ".envrc"), "file", ENVRC_REASON, hold=False)
        for name, reason in TOP_FOLDERS:
            self.add(os.path.join(self.top, name), "folder", reason)
        self.agent_settings()
        self.other_version_control(self.top, "")
        self.home_places()
        if repository is not None:
            hooks, sha256 = self.git_settings(repository)
            self.hook_managers(repository, hooks)
            self.submodules(repository, sha256, depth=0)
        self.enclosing()
        self.person_settings()
        self.home_places(environment=True)
        unwalked = self.below()
        return DotFiles(self.top, tuple(self.found.values()), unwalked,
                        below=self.below_found, hard_linked=self.hard_linked(),
                        refusals=tuple(self.refusals))

    # -- what the person's own settings name, and what is theirs below the top -------------

    def other_version_control(self, folder: str, label: str, *,
                              present: frozenset[str] | None = None) -> None:
        """Every other version-control system's metadata at `folder`, held as `.git` is
        (runs_as_you.VCS_METADATA): read-only where it is; at the top, a missing one
        whose tool is run as git is held by an empty folder. Below the top, `present`:
        the names there (nothing is held that is missing)."""
        from .runs_as_you import VCS_METADATA

        for vcs in VCS_METADATA:
            if present is not None and vcs.name not in present:
                continue
            # Never lingering: an empty .hg, .jj or .sl is a broken repository to its
            # tool (hg takes any .hg folder for one), found before a parent's; it is
            # there only while a run holds it.
            self.add(os.path.join(folder, vcs.name), vcs.kind,
                     f"{label}{vcs.name}: {vcs.tool}: {vcs.runs}",
                     hold=vcs.hold and present is None, lingers=False)

    def person_settings(self) -> None:
        """What the person's own settings name, inside this folder, whether or not a
        repository is here (settings_named.py): the files their shells and readline
        source, and every path their git settings (system and global, and what those
        include) give, as a file, a program or a folder git runs the entries of; each by
        its name and by where its links lead, at any depth. git reads these in every
        repository, and the shell at every start. One that is the top, or holds it, is
        refused before (grants.py)."""
        from .settings_named import named_by_settings

        for named in named_by_settings(self.home):
            for path in named.paths():
                if path != self.top and _within(path, self.top):
                    self.add(path, named.kind, named.why)
            for link in named.links:  # the sandbox could point it elsewhere: refused
                if link != self.top and _within(link, self.top):
                    self.add(link, "file", f"a link on the way from {named.path} to "
                             f"{named.real}: {named.why}")
        from .person_settings import shell_sources

        # A sourced name not all literal leaves its folder open: held here, never a
        # reason to refuse a grant (the folder may be home itself: grants.py names files)
        for path, why in shell_sources(self.home).folders:
            if path != self.top and _within(path, self.top):
                self.add(path, "folder", f"{why}: what is there may run in your shell")
        from .tool_settings import tool_paths

        for path, why, kind in tool_paths(self.home):
            if path != self.top and _within(path, self.top):
                self.add(path, "folder" if kind == "folder" else "file", why)

    def ours(self, worktree: str) -> bool:
        """Whether the checkout `worktree` below the top is one of the top repository's
        own (a submodule's or a linked worktree's git directory inside its common
        directory): analysed with the top's, under its files.commit."""
        if self.repository is None or lstat_kind(os.path.join(worktree, ".git")) != "file":
            return False
        target = read_gitfile(os.path.join(worktree, ".git"))
        if target is None:
            return False
        git_dir = os.path.realpath(os.path.join(worktree, target))
        return _within(git_dir, self.repository.common_dir)

    def below(self) -> tuple[str, ...]:
        """What below the top was the person's at launch (below_top.py), held like the
        top's: each checkout's metadata and what its git settings name, its dot files
        that are there (nothing is held that is missing: the record's rule for a
        folder the sandbox makes holds below), each bare repository's settings and
        hooks, each virtual environment's activation scripts. The folders the walk did
        not list, for `describe`."""
        from .below_top import activation_scripts, found_items, walk, with_remembered
        from .runs_as_you import AGENT_SETTINGS, VCS_METADATA

        names = frozenset((".git", *(vcs.name for vcs in VCS_METADATA)))
        found = with_remembered(walk(self.top, names), self.top, self.remembered)
        self.below_found = found_items(found)
        commit, self.commit = self.commit, False  # files.commit is for the top's only
        for worktree, name in found.checkouts:
            label = f"the repository {self.shown(worktree)} (there at launch): "
            if name == ".git" and self.ours(worktree):
                continue  # a submodule or worktree of the top's: analysed with it
            if name == ".git":
                repository = self.git(worktree, label)
                if repository is not None:
                    hooks, sha256 = self.git_settings(repository)
                    self.hook_managers(repository, hooks)
                    self.submodules(repository, sha256, depth=0)
            else:
                self.other_version_control(worktree, label, present=frozenset((name,)))
            settings: list[tuple[str, Kind, str]] = [
                (".envrc", "file", ENVRC_REASON),
                *((n, "folder", r) for n, r in TOP_FOLDERS),
                *((a.name, a.kind, f"{a.tool}: {a.runs}") for a in AGENT_SETTINGS
                  if "*" not in a.name)]
            for setting, kind, why in settings:
                path = os.path.join(worktree, setting)
                if lstat_kind(path) != "missing":
                    self.add(path, kind, f"{label}{why}", hold=False)
        self.commit = True  # a bare repository: what git reads to run, not its objects
        for bare in found.bare:
            self.git_metadata(bare, bare, f"the bare repository {self.shown(bare)} "
                              "(there at launch): ", tail="a push to it runs its hooks; "
                              "its objects and refs stay writable")
        self.commit = commit
        for venv in found.venvs:
            for script in activation_scripts(venv):
                self.add(script, "file", f"the activation script of the virtual environment "
                         f"{self.shown(venv)}: sourcing it runs it in your shell; pip never "
                         "writes it", hold=False)
        return found.unwalked

    # -- the repositories around the top ------------------------------------------------

    def enclosing(self) -> None:
        """What the settings of each repository around the top name inside it, held as
        for the top's own repository (`cd ~/proj/sub && lnk sandbox run`: the person's
        git in ~/proj runs ~/proj/.git/config's core.hooksPath, core.fsmonitor, filters
        and includes, wherever they point, and hg runs ~/proj/.hg/hgrc's hooks).

        The repository's own metadata lies outside the top and is not writable; what
        its settings name inside the top is. Every folder above the top is looked at,
        not only the nearest repository: the person may run git in any of them (a
        dotfiles repository at home holds every project). Only what lies inside the
        top is held here: another grant's analysis holds what lies in it.
        """
        commit, self.commit, self.inside_only = self.commit, False, True
        try:
            for repository in _enclosing_repositories(self.top):
                hooks, sha256 = self.git_settings(repository)
                self.hook_managers(repository, hooks)
                self.submodules(repository, sha256, depth=0)
            folder = self.top
            while (parent := os.path.dirname(folder)) != folder:
                folder = parent
                self.enclosing_hg(folder)
        finally:
            self.commit, self.inside_only = commit, False

    def enclosing_hg(self, folder: str) -> None:
        """The paths inside the top that the settings of a Mercurial (or Sapling)
        repository at `folder` name (hg_settings.py), held read-only, held when missing."""
        for name, settings in (".hg", "hgrc"), (".sl", "config"):
            if lstat_kind(os.path.join(folder, name)) not in ("folder", "link"):
                continue
            from .hg_settings import named_paths

            label = f"the repository {folder} around the folder: "
            for path, why in named_paths(folder, os.path.join(folder, name, settings),
                                         self.home):
                if path != self.top:
                    self.add(path, "file", f"{label}{why}")

    # -- .git and the git directories it names --------------------------------------------

    def git(self, worktree: str, label: str = "") -> _Repository | None:
        """Protect `worktree`'s .git (a folder, or a gitdir: file and the git directory it
        names) and the commondir there; the repository, or None if there is none.

        Under files.commit a git directory that exists is protected by what git reads
        in it to decide what to run (GIT_METADATA), not whole; a missing .git is held
        whole all the same: a repository made at the top would run its settings.
        """
        dot_git = os.path.join(worktree, ".git")
        kind = lstat_kind(dot_git)
        if kind == "file":
            self.add(dot_git, "file", f"{label}.git (a gitdir: file): {GIT_REASON}")
            target = read_gitfile(dot_git)
            if target is None:
                return None
            git_dir = os.path.normpath(os.path.join(worktree, target))
            if not self.commit:
                self.add(git_dir, "folder", f"the git directory {label}.git names (gitdir: "
                         f"{target}): {GIT_REASON}")
        else:
            # An empty one (another run's placeholder, lingering) is a missing one: held
            # whole, under files.commit too (there is no repository to commit to, and
            # one made in it would run its settings), and no repository: nothing in it
            # names anything. (One with something in it is analysed even where git
            # would not take it for a git directory now: what its settings name may run
            # once it is repaired.)
            empty = kind == "folder" and _empty_folder(dot_git)
            if not (self.commit and kind == "folder") or empty:
                self.add(dot_git, "folder", f"{label}.git: {GIT_REASON}")
            if kind != "folder" or empty:
                return None
            git_dir = dot_git
        git_dir = os.path.realpath(git_dir)
        common_dir = git_dir
        common = read_small(os.path.join(git_dir, "commondir"))
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

    def git_metadata(self, git_dir: str, common_dir: str, label: str, *,
                     tail: str = COMMIT_REASON) -> None:
        """What git reads in a git directory to decide what to run: GIT_METADATA in the
        common directory, commondir and config.worktree in the git directory, and those
        two in each linked worktree's own directory (the person's other checkouts read
        them)."""
        for name, kind, why in GIT_METADATA:
            path = os.path.join(common_dir, name)
            self.add(path, kind, f"{label}{self.shown(path)}: {why}; {tail}", held_as=kind)
        for git in dict.fromkeys((git_dir, common_dir)):
            for name, kind, why, content in GIT_DIR_METADATA:
                path = os.path.join(git, name)
                self.add(path, kind, f"{label}{self.shown(path)}: {why}; {tail}",
                         content=content, held_as=kind)
        if git_dir != common_dir:  # this checkout is a linked worktree of the repository
            name, kind, why = WORKTREE_GITDIR
            path = os.path.join(git_dir, name)
            self.add(path, kind, f"{label}{self.shown(path)}: {why}; {tail}",
                     hold=False)
        try:
            linked = sorted(os.listdir(os.path.join(common_dir, "worktrees")))
        except OSError:
            linked = []
        for name in linked:
            folder = os.path.join(common_dir, "worktrees", name)
            if lstat_kind(folder) != "folder":
                continue
            for file, kind, why, content in GIT_DIR_METADATA:
                self.add(os.path.join(folder, file), kind,
                         f"the linked worktree {name}'s {file}: {why}", content=content,
                         held_as=kind)
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
            hold = setting.hold and (not setting.found_by or _tool_found(setting.found_by,
                                                                         self.home))
            self.add(path, setting.kind, reason, hold=hold, parents=True,
                     lingers=setting.lingers)

    def home_places(self, *, environment: bool = False) -> None:
        """The places that run as the person (home_places.py: the table's, PATH's
        folders and what their commands run) inside a write grant that holds them:
        read-only, held when missing, by their name and where their links lead (a
        dotfiles repository that `~/.bashrc` links into). A grant that is or holds a
        holder, lies inside a place or holds a link on the way is refused before
        (grants.py); a link planted since inside this folder refuses the launch.
        `environment`: the places the launch environment names instead (one it names
        that is the top or holds it is not held: the grant is the person's choice)."""
        from .home_places import home_places

        for place in self.places if self.places is not None else home_places(self.home):
            if place.environment and not environment:
                continue  # after what the settings name, whose reasons say more
            if environment and not place.environment:
                continue
            if place.path != self.top and _within(place.path, self.top) and not place.linked:
                self.add(place.path, place.kind, f"{place.what} ({place.name})")
            if place.real not in (place.path, self.top) and _within(place.real, self.top):
                entry = self.add(place.real, place.kind,
                                 f"{place.name} leads here: {place.what}")
                link = next((link for link in place.links if _within(link, self.top)),
                            None)
                if link is not None and entry.link is None:
                    self.found[place.real] = entry._replace(link=link, placeholder=None)

    def hook_link(self, hook: str) -> None:
        """A hook that is a link (`.git/hooks/pre-commit -> ../../tools/pre-commit`):
        git runs what it leads to, read-only wherever the sandbox writes, and each link
        on the way is refused where the sandbox writes (it could repoint it)."""
        from .home_places import _Resolver

        real, links = _Resolver().resolve(hook)
        why = f"the hook {hook} leads here: git runs it"
        self.add(real, "file", why)
        for link in links:
            if link != hook:
                self.add(link, "file", f"a link on the way from the hook {hook}: git runs "
                         "what it leads to")

    def hard_linked(self) -> tuple[tuple[str, str], ...]:
        """Each existing file protected here, run as a hook or read as git's settings
        (in a folder held whole these are no entries of their own) that has more than
        one name on the top's filesystem: `ln tools/pre-commit .git/hooks/pre-commit`
        makes the project's file the hook, whatever holds `.git` read-only. One stat
        each, of files that are there; a file on another filesystem cannot be named
        from the top."""
        try:
            device = os.stat(self.top).st_dev
        except OSError:
            return ()
        candidates = {p.path: f"{p.name}: {p.reason}" for p in self.found.values()
                      if p.exists and p.kind == "file"}
        for path, why in self.runs.items():
            candidates.setdefault(os.path.realpath(path), why)
        found = []
        for path, why in candidates.items():
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and info.st_dev == device:
                found.append((path, why))
        return tuple(found)

    def shown(self, path: str) -> str:
        """A path as a message shows it: from the top when inside it."""
        return os.path.relpath(path, self.top) if _within(path, self.top) else path

    def bare_top(self) -> None:
        """Keep the top from becoming a bare repository, or protect the one it is.

        git's discovery (setup.c), in each folder from where it runs up, takes the
        folder's `.git` first (a gitfile, or a folder that is a git directory), and only
        then the folder itself for a bare one: HEAD a valid ref, then objects/ and refs/
        in the common directory (where a `commondir` there points). A sandbox that made
        HEAD, objects/, refs/ and a config here would run that config on the person's
        next git command in the folder or below it. What is held must be one of what
        git needs, so that what the sandbox made is still no repository once the
        placeholder goes after the run; a `commondir` alone would not do.

        - Where the top's `.git` stops git whatever the sandbox does (git_stops_here):
          nothing, git never looks at the top itself.
        - Where git finds no repository from the top: HEAD, an empty folder (git cannot
          read it, and checks it first, wherever commondir would point). A folder named
          HEAD makes `git diff HEAD` ambiguous only where a repository is found.
        - Where git finds one (the top is below the person's repository, or its own
          .git is written under files.commit): commondir, an empty folder (git dies
          reading it once a HEAD here is valid, so it never points elsewhere), and refs
          (or else objects), a socket: no folder git may search, and in no status, as
          no file would be.
        macOS holds nothing: Seatbelt refuses making each of these.
        """
        head = os.path.join(self.top, "HEAD")
        if lstat_kind(os.path.join(self.top, "objects")) == "folder" and \
                lstat_kind(os.path.join(self.top, "refs")) == "folder" and \
                lstat_kind(head) == "file":
            self.commit, commit = True, self.commit
            try:
                self.git_metadata(self.top, self.top, "the bare repository at the top: ")
            finally:
                self.commit = commit
            if not commit:
                self.add(head, "file", BARE_REASON)
            return
        if self.git_stops_here():
            return
        missing = {name: lstat_kind(os.path.join(self.top, name)) == "missing"
                   for name in ("HEAD", "commondir", "refs", "objects")}
        if missing["HEAD"] and not _in_repository(self.top):
            self.add(head, "file", BARE_REASON)
            return
        if missing["commondir"]:
            self.add(os.path.join(self.top, "commondir"), "file", BARE_REASON)
        else:  # the person's: read-only as it is
            self.add(os.path.join(self.top, "commondir"), "file", BARE_REASON)
            if missing["HEAD"]:
                self.add(head, "file", BARE_REASON)
                return
        for name in ("refs", "objects"):
            if missing[name]:
                self.add(os.path.join(self.top, name), "folder", BARE_REASON,
                         held_as="socket")
                return
        self.add(head, "file", BARE_REASON)

    def git_stops_here(self) -> bool:
        """Whether git looking for a repository from the top (or below) stops at the
        top's `.git` whatever the sandbox does, so never looks at the top itself.

        A `.git` file, held read-only: git reads it as a gitfile and takes the
        repository it names, or stops with an error on one it cannot take (setup.c's
        read_gitfile_gently; only a `.git` it cannot stat lets it go on). A `.git`
        folder that is a git directory now, held whole: not under files.commit (HEAD,
        objects and refs are written then, and a HEAD written wrong would let git go
        on to the top). Neither where a write grant lies at or inside it, or inside the
        common directory it points at: the sandbox writes there.
        """
        dot_git = os.path.join(self.top, ".git")
        kind = lstat_kind(dot_git)
        if any(_within(path, dot_git) for path in self.written):
            return False
        if kind == "file":
            return True
        if kind != "folder" or self.commit:
            return False
        dirs = git_dirs(self.top)
        if dirs is None or any(_within(path, dirs.common_dir) for path in self.written):
            return False
        return is_git_directory(dot_git)

    def git_settings(self, repository: _Repository) -> tuple[list[str], bool]:
        """Follow the repository's settings, and the person's own (system and global):
        protect what they name. The hooks folders, and whether object names are SHA-256.

        The person's settings are not writable by a sandbox, but a relative
        core.hooksPath there (`.githooks`, a common convention) names a folder in every
        repository, this one's too; what they include may lie where the sandbox writes.
        """
        from .person_settings import value_paths

        hooks_paths: list[str] = []
        sha256 = False
        files = [os.path.join(repository.common_dir, "config"),
                 os.path.join(repository.git_dir, "config.worktree"),
                 *person_git_configs(self.home)]
        seen: set[str] = set()
        pending = [(path, 0) for path in files]
        while pending:
            config, depth = pending.pop(0)
            if depth > MAX_INCLUDE_DEPTH:
                continue
            data = read_small(config, limit=1 << 20)  # first: most named files are missing
            if data is None:
                continue
            real = os.path.realpath(config)
            if real in seen:
                continue
            seen.add(real)
            self.runs.setdefault(real, f"{config}: git's settings")
            own = _within(real, repository.git_dir) or _within(real, repository.common_dir)
            shown = os.path.basename(config) if depth == 0 and own and \
                not self.inside_only else config
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
                else:
                    # Any key, listed or not: a word that is a path may be a program
                    # git runs (remote.NAME.uploadpack, difftool.TOOL.path, the next
                    # one). A relative one counts where it is a file of the work tree.
                    absolute = value_paths(key, value, self.home)
                    for path in value_paths(key, value, self.home, repository.worktree):
                        if path != self.top and _within(path, self.top) and (
                                path in absolute or lstat_kind(path) == "file"):
                            self.add(path, "file", f"{repository.label}{key} = {value} "
                                     f"in {shown}: git may run it")
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
        for path in gitlinks(os.path.join(repository.git_dir, "index"), sha256):
            if self.submodules_seen >= MAX_SUBMODULES:
                return
            self.submodules_seen += 1
            worktree = os.path.normpath(os.path.join(repository.worktree, path))
            if not _within(worktree, repository.worktree) or worktree == repository.worktree:
                continue
            if self.inside_only and (worktree == self.top or not _within(worktree, self.top)):
                continue  # the top (analysed as it), or elsewhere in a repository around it
            shown = os.path.relpath(worktree, self.top)
            inner = self.git(worktree, f"the submodule {shown}'s ")
            if inner is None:
                continue
            hooks, inner_sha256 = self.git_settings(inner)
            self.hook_managers(inner, hooks)
            self.submodules(inner, inner_sha256, depth + 1)

    # -- hook managers run from the hooks folders ------------------------------------------

    def hook_managers(self, repository: _Repository, hooks: list[str]) -> None:
        """Each hook of the repository's hooks folders (and the person's template's,
        which git copies into a repository it makes): what it names, read as a script
        (hook_text), and the settings of the hook manager whose stub it is."""
        from .settings_named import global_hooks

        worktree = repository.worktree
        pre_commit: list[tuple[str, str]] = []
        lefthook: list[tuple[str, str]] = []
        for hook in global_hooks(self.home):
            if os.path.dirname(hook) not in hooks:
                self.hook_text(hook, repository)
        for folder in hooks:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            for name in names:
                if name.endswith(".sample"):
                    continue
                hook = os.path.join(folder, name)
                self.runs.setdefault(hook, f"a hook in {folder}: git runs it")
                if lstat_kind(hook) == "link":
                    self.hook_link(hook)
                self.hook_text(hook, repository)
                data = read_small(os.path.join(folder, name), limit=_STUB_READ_LIMIT)
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

    def hook_text(self, hook: str, repository: _Repository) -> None:
        """What `hook` names, read as a script run at the repository's top (hook_text.py):
        read-only inside this folder or another the sandbox writes (one named absolutely
        held when missing, one from the top where a file is there, a virtual environment
        whole); what cannot be bounded refuses the launch. A folder at or above the top
        is not held here: it would hold the grant whole (a grant inside a folder the
        person's hooks run from is refused before, grants.py)."""
        from .hook_text import read_hook

        text = read_hook(hook, self.home, repository.worktree)
        shown = f"{repository.label}the hook {self.shown(hook)}"
        for path, kind, why in (*text.held, *((p, "file", w) for p, w in text.there)):
            if path == self.top or (kind == "folder" and _within(self.top, path)):
                self.refusals[(shown, f"it runs {self.shown(path)} ({why}), which is or "
                               "holds this folder: what the run writes here would run as "
                               "you", f"grant a folder outside {path}")] = None
            if _within(self.top, path) or not (_within(path, self.top) or any(
                    _within(path, w) and path != w for w in self.written)):
                continue
            self.add(path, kind, f"{why}, and git runs {shown} as you")
        self.refusals.update(dict.fromkeys(text.refusals))

    def lefthook_configs(self, worktree: str, names: tuple[str, ...], stub: str) -> None:
        """Every existing config of the group, and the missing ones that would come first.

        lefthook loads the first name found, extension by extension: a file made ahead
        of the one there would replace it, so each name before it is held.
        """
        reason = f"lefthook's settings: its stub {stub} runs the hooks they list"
        order = [os.path.join(worktree, name + ext)
                 for ext in LEFTHOOK_EXTENSIONS for name in names]
        first = next((i for i, path in enumerate(order) if lstat_kind(path) != "missing"),
                     None)
        for i, path in enumerate(order):
            if first is None and i > 0:
                break  # none there: the first name, held, comes before every other
            if first is None or i <= first or lstat_kind(path) != "missing":
                self.add(path, "file", reason)


def _in_repository(top: str) -> bool:
    """Whether git, from `top`, finds a repository: `top`'s own .git or one above (a
    `.git` file, a `.git` folder that is a git directory, a bare repository), as
    setup.c walks up; judged no more loosely than git, so a doubt says no."""
    folder = top
    for _ in range(256):
        dot_git = os.path.join(folder, ".git")
        kind = lstat_kind(dot_git)
        if kind == "file" or (kind == "folder" and is_git_directory(dot_git)):
            return True
        if folder != top and is_git_directory(folder):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return False


def _enclosing_repositories(top: str) -> list[_Repository]:
    """Each git repository around `top` (resolved, no links in it), nearest first: a
    folder above it with a `.git` (a gitfile, or a folder: one git would not take for a
    git directory now is read all the same, as its settings may run once repaired), or
    that is itself a bare repository. Where git runs their hooks and reads their
    relative paths: the folder."""
    found: list[_Repository] = []
    seen: set[str] = set()
    folder = top
    while (parent := os.path.dirname(folder)) != folder:
        folder = parent
        dot_git = os.path.join(folder, ".git")
        kind = lstat_kind(dot_git)
        git_dir: str | None = None
        if kind == "file":
            target = read_gitfile(dot_git)
            if target is not None:
                git_dir = os.path.join(folder, target)
        elif kind in ("folder", "link"):
            git_dir = dot_git
        elif is_git_directory(folder):
            git_dir = folder
        if git_dir is None:
            continue
        git_dir = os.path.realpath(git_dir)
        common_dir = git_dir
        common = read_small(os.path.join(git_dir, "commondir"))
        if common is not None and common.strip():
            text = common.decode("utf-8", "surrogateescape").rstrip("\r\n")
            common_dir = os.path.realpath(os.path.join(git_dir, text))
        if git_dir not in seen:
            seen.add(git_dir)
            found.append(_Repository(folder, git_dir, common_dir,
                                     f"the repository {folder} around the folder: "))
    return found


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
    ("remote.", ".uploadpack"), ("remote.", ".receivepack"), ("difftool.", ".path"),
    ("mergetool.", ".path"),
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
    for position, spelled in enumerate(words[:4]):
        if position > 0 and os.path.basename(words[position - 1]) not in _INTERPRETERS:
            break
        if spelled.startswith("-"):
            continue
        word = spelled
        for variable in ("$HOME/", "${HOME}/"):  # the shell git runs it with expands it
            if spelled.startswith(variable):
                word = home + "/" + spelled[len(variable):]
        if "/" in word or word.startswith("~"):
            path = _expand(word, worktree, home)
            if path is not None:
                named.append(path)
    return named


def _tool_found(places: tuple[str, ...], home: str) -> bool:
    """Whether a tool shows it is used here: one of `places` is a program on PATH (a
    bare name) or is there in home (`~/...`)."""
    folders = [f for f in os.environ.get("PATH", "").split(":") if f.startswith("/")]
    for place in places:
        if place.startswith("~/"):
            if os.path.lexists(home + place[1:]):
                return True
        # shutil.which's test, without shutil: a default start imports no module it
        # does not need (test_start_path.py), and shutil brings bz2 and lzma.
        elif any(os.access(os.path.join(f, place), os.X_OK) and not os.path.isdir(
                os.path.join(f, place)) for f in folders):
            return True
    return False


def _empty_folder(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def hooks_folders(worktree: str, home: str) -> list[tuple[str, str]]:
    """(folder, why) of each hooks folder git runs for the repository checked out at
    `worktree`: its git directory's `hooks`, and where `core.hooksPath` points in its
    settings or the person's (a relative one from `worktree`), as the analysis follows
    them. Empty where there is no repository."""
    analysis = _Analysis(os.path.normpath(worktree), home)
    repository = analysis.git(analysis.top)
    if repository is None:
        return []
    hooks, _ = analysis.git_settings(repository)
    return [(path, analysis.found[path].reason if path in analysis.found
             else f"{repository.common_dir}/hooks: {GIT_REASON}") for path in hooks]


def analyze(top: str, *, home: str, commit: bool = False,
            places: tuple[Place, ...] | None = None,
            written: tuple[str, ...] = (),
            remembered: tuple[tuple[str, str], ...] = ()) -> DotFiles:
    """The dot files at the top of the write grant `top` (resolved, no links in it).

    `home` expands `~/` in git's settings. `commit` (files.commit): the repository's
    git directory is protected by what git reads to decide what to run, not whole.
    `places`: home_places.home_places(home), when the caller has it for every grant.
    `written`: every path the sandbox writes (Snapshot.written): where one lies in the
    top's `.git` the sandbox could change, the top is kept from becoming a bare
    repository all the same. `remembered`: what earlier launches found below the top
    (below_top.with_remembered), held where it is still there. Reads files only; never
    raises for what it finds (a file it cannot read protects what its name alone says).
    """
    return _Analysis(os.path.normpath(top), home, commit=commit, places=places,
                     written=written, remembered=remembered).run()
