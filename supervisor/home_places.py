"""Home's places that run as the person, as this machine lays them out: every link on
the way resolved, and the installations PATH's commands run from.

`runs_as_you.HOME_PLACES` names each place where its tool looks (`~/.bashrc`,
`~/.config/git`). A machine may keep it elsewhere, behind a link: GNU Stow, yadm and
rcm keep dotfiles in a repository and link them into home (`~/.bashrc ->
dotfiles/bashrc`, `~/.config/git -> ../dotfiles/git`). A sandbox writing `~/dotfiles`
then writes what bash and git run, whatever the names say. So each place is resolved
here, on the host, by lnk itself, and the rules hold for where it leads as well as for
its name; a link on the way that a grant holds is refused, since the sandbox could
point it elsewhere before the next run resolves it.

PATH is the other way in. Every file in a PATH folder is a command the person may type
(each PATH folder is a holder), and what it runs may lie elsewhere: `~/.pyenv/bin/pyenv
-> ../libexec/pyenv`, pipx's `~/.local/bin/aws -> ~/.local/share/pipx/venvs/awscli/
bin/aws`, a script whose `#!` names a virtual environment's python. The links and `#!`
lines in PATH folders are read here, and the installation each leads to is a place.
A folder of the distribution's own (/usr/bin, /bin...) is not read: its package manager
wrote it, its links lead into system folders, and reading its thousands of entries
costs 20 to 60 ms a start. Shims that are scripts of a version manager (`#!/usr/bin/env
bash`) name no file: their manager's home is in the table.

A relative PATH entry (`node_modules/.bin`, `.`, an empty one) names a folder of the
working directory, wherever the person is: nothing can hold it (`relative_path_entries`).

Facts this follows:
- a link is resolved as the kernel resolves it, component by component, relative links
  from the folder holding them; a missing component ends the walk, the rest kept as
  written (os.path.realpath's non-strict form), at most 40 links (the kernel's limit);
- `#!` is read from the first 256 bytes only; the kernel reads at most 256 (BINPRM_BUF_SIZE).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple

from . import fish_variables, once_per_start
from .environment_paths import environment_paths
from .policy import clean_path
from .system import traits

Kind = Literal["file", "folder"]

MAX_LINKS = 40  # the kernel's MAXSYMLINKS
_SHEBANG_READ = 256  # BINPRM_BUF_SIZE
# PATH folders written by the distribution's package manager: not read for what their
# commands run (see the module docstring).
DISTRIBUTION_FOLDERS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/games", "/System")
# Folders the distribution installs and a person cannot write: an installation there is
# no place (/usr/local and /opt are the person's or the admin's: Homebrew's on macOS).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
           "/System", "/Library", "/nix/store", "/snap")


def _system(path: str) -> bool:
    return any(_within(path, s) for s in _SYSTEM) and not _within(path, "/usr/local")
# A target in one of these is an installation's entry point: the installation is the
# folder above (a virtual environment, a toolchain, a package).
_ENTRY_FOLDERS = frozenset(("bin", "sbin", "libexec"))


class Place(NamedTuple):
    """A place that runs as the person. `path` is where the tool looks (`~` expanded),
    `real` where that leads with every link resolved (`path` when there is none), and
    `links` each link met on the way. A holder's grant is refused, as is a grant inside
    a place; `instead` is where a refusal points (a variable that moves the tool)."""

    path: str
    name: str
    kind: Kind
    what: str
    holder: bool
    real: str
    links: tuple[str, ...] = ()
    instead: str = ""
    linked: bool = False  # found by the link walk (home_links), not by a name: only
                          # what it leads to is kept read-only, no grant is refused for it
    environment: str = ""  # the variable of the launch environment naming it
                           # (environment_paths.py): read-only strictly inside a write
                           # grant; no grant is refused for being it or inside it...
    command: str = ""  # ...but where a variable read as a command names it (this one's,
                       # or another's: EnvironmentPath.command): its program may run any
                       # file there (`find ~/w -exec`), so a grant that is it or lies
                       # inside it is refused, unless it is home, holds it or is `/`


def _within(path: str, folder: str) -> bool:
    return folder in (path, "/") or path.startswith(folder + "/")


class _Resolver:
    """Links resolved as the kernel does, each folder resolved once per start: the
    places share their first components (home, ~/.config, ~/.local...), so a place
    costs one lstat of its last component, and only a link costs a walk."""

    def __init__(self) -> None:
        # path -> (real, links met, whether it exists)
        self.known: dict[str, tuple[str, tuple[str, ...], bool]] = {"/": ("/", (), True)}
        # folder -> its entries' names and whether each is a link (None: unlisted)
        self.listings: dict[str, dict[str, bool | None] | None] = {}

    def kind(self, folder: str, name: str) -> bool | None:
        """Whether `folder/name` is a link (True), something else (False), or missing
        (None). Most places are missing: one listing of their folder answers for all of
        them, where an lstat each would cost ten times as much (a filesystem that does
        not say an entry's type, and a case-insensitive one, get an lstat)."""
        if folder not in self.listings:
            listing: dict[str, bool | None] | None = None
            if traits().listings_answer_names and not _system(folder):  # /usr/bin: 2000 names
                try:
                    with os.scandir(folder) as entries:
                        listing = {e.name: _link_or_none(e) for e in entries}
                except OSError:
                    listing = None
            self.listings[folder] = listing
        listing = self.listings[folder]
        if listing is not None and listing.get(name, False) is not None:
            return listing.get(name)
        if listing is not None and name not in listing:
            return None
        try:
            return stat.S_ISLNK(os.lstat(os.path.join(folder, name)).st_mode)
        except OSError:
            return None

    def resolve(self, path: str) -> tuple[str, tuple[str, ...]]:
        """`path` (absolute) with every link resolved, and the links met on the way."""
        real, links, _ = self._resolve(clean_path(path), 0)
        return real, links

    def _resolve(self, path: str, hops: int) -> tuple[str, tuple[str, ...], bool]:
        if path in self.known:
            return self.known[path]
        parent, name = os.path.split(path)
        if not name:  # `//`, which normpath keeps (POSIX's two leading slashes): the root
            return self.known["/"]
        # The folders above, from the top down, each on a known parent: the recursion
        # below is then a level per link followed (at most MAX_LINKS), not one per
        # component, which a long path ($HOME, a PATH folder) has thousands of.
        above: list[str] = []
        while parent not in self.known and parent not in above and parent != "//":
            above.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(above):
            self._resolve(folder, hops)
        parent = os.path.dirname(path)
        real_parent, links, exists = self._resolve(parent, hops)
        candidate = os.path.join(real_parent, name)
        found: tuple[str, tuple[str, ...], bool]
        if not exists:
            found = (candidate, links, False)  # below a missing folder: as written
        else:
            try:
                link = self.kind(real_parent, name)
                if link is None:
                    raise FileNotFoundError(candidate)
                text = os.readlink(candidate) if link else None
            except OSError:
                found = (candidate, links, False)
            else:
                if text is None:
                    found = (candidate, links, True)
                elif hops >= MAX_LINKS:  # a loop: ELOOP to the kernel, nothing runs there
                    found = (candidate, (*links, candidate), False)
                else:
                    target = clean_path(os.path.join(real_parent, text))
                    real, more, there = self._resolve(target, hops + 1)
                    found = (real, tuple(dict.fromkeys((*links, candidate, *more))), there)
        self.known[path] = found
        return found


def _link_or_none(entry: os.DirEntry[str]) -> bool | None:
    """Whether a listed entry is a link, from the listing alone; None where the
    filesystem did not say (DT_UNKNOWN), which an lstat then answers."""
    try:
        if entry.is_symlink():
            return True
        if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
            return False
    except OSError:
        pass
    return None


def _shown(path: str, home: str) -> str:
    return "~" + path[len(home):] if _within(path, home) and path != home else path


def _interpreter(path: str) -> str | None:
    """The absolute interpreter a `#!` line at the top of `path` names, or None (no `#!`,
    not a regular file, `env` looking a name up in PATH).

    `path` was a regular file when its folder was listed, and lies in a folder of PATH,
    which no sandbox writes: opened without following a link and without blocking (a
    pipe put there meanwhile reads as nothing), and read only once fstat says regular."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY
                     | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _SHEBANG_READ)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return None
    interpreter = os.fsdecode(words[0])
    return None if os.path.basename(interpreter) == "env" else interpreter


def _installation(target: str, home: str, holders: list[str]) -> str | None:
    """The installation a command's file belongs to: the folder above its bin/ or
    libexec/ (a virtual environment, a toolchain), else its own folder. None where that
    is a system folder, home or a folder holding it, or a folder of PATH already held."""
    folder = os.path.dirname(target)
    candidates = [folder]
    if os.path.basename(folder) in _ENTRY_FOLDERS:
        candidates.insert(0, os.path.dirname(folder))
    for root in candidates:
        if _system(root) or _within(home, root):
            return None
        if any(_within(holder, root) for holder in holders):
            continue  # a holder is in it (~/.local holds ~/.local/bin): too wide
        return root
    return None


def path_folders(path_env: str) -> list[str]:
    """PATH's absolute folders, normalized, each once, in order."""
    found = []
    for entry in path_env.split(os.pathsep):
        if entry.startswith("/"):
            folder = os.path.normpath(entry)
            if folder not in found:
                found.append(folder)
    return found


def relative_path_entries(path_env: str) -> list[str]:
    """PATH's entries that name a folder of the working directory: relative ones, and
    empty ones (POSIX: an empty entry is the working directory)."""
    entries = path_env.split(os.pathsep) if path_env else []
    return list(dict.fromkeys(entry or "." for entry in entries if not entry.startswith("/")))


def relative_path_gap(path_env: str) -> str | None:
    """What a relative PATH entry leaves open, said at every launch that writes a folder
    and by `check`; None when PATH has none.

    Not held, only said: a relative entry names a folder of wherever the person is, so
    no folder of the sandbox's could be held for it (node_modules/.bin in every folder
    it writes, at any depth), and holding node_modules/.bin at the top would break every
    npm install the sandbox runs. Said at launch, not asked once: it is the person's
    shell, not the spec, and a remembered permission would not see PATH change."""
    entries = relative_path_entries(path_env)
    if not entries:
        return None
    return (f"PATH names folders of the working directory ({', '.join(entries)}): a "
            "command the sandbox puts in one of them, in a folder it writes, runs as you "
            "when you type its name there; take them off PATH (npx and npm exec find "
            "node_modules/.bin by themselves)")


def relative_code_path_gap() -> str | None:
    """What relative entries of the code paths (CODE_PATHS: `PYTHONPATH=src`, an empty
    entry, which Python and the others read as the working directory) leave open, said
    as relative_path_gap says PATH's; None when they have none. A module the sandbox
    puts in such a folder of a folder it writes runs in the person's programs started
    there (a red team: `python3 /usr/bin/pydoc3` imported a planted json.py)."""
    named = []
    for variable, _ in CODE_PATHS:
        value = os.environ.get(variable, "")
        entries = relative_path_entries(value) if value else []
        if entries:
            named.append(f"{variable} ({', '.join(entries)})")
    if not named:
        return None
    return (f"{'; '.join(named)} name folders of the working directory: code the "
            "sandbox puts in one of them, in a folder it writes, runs in your programs "
            "started there; name them by absolute path (then kept from the sandbox) or "
            "take them off")


def relative_gaps(home: str | None = None) -> list[str]:
    """What PATH's and the code paths' relative entries leave open (and, given `home`,
    fish's PATH variables': fish_variables.py), as said at every launch that writes a
    folder and by `check`."""
    gaps = [relative_path_gap(os.environ.get("PATH", "")), relative_code_path_gap()]
    entries = fish_variables.relative_path_entries(home) if home is not None else []
    if entries:
        gaps.append(f"fish's {'/'.join(fish_variables.PATH_VARIABLES)}"
                    f"{fish_variables.LABEL} name folders of the "
                    f"working directory ({', '.join(entries)}): a command the "
                    "sandbox puts in one of them, in a folder it writes, runs as you "
                    "when you type its name there in fish; name them by absolute "
                    "path or take them off")
    return [gap for gap in gaps if gap is not None]


# Home's links: at its top (dot names), in its dot folders and two folders into them.
HOME_LINK_DEPTH = 3
MAX_HOME_FOLDERS = 256
LINKED_WHAT = ("a link in your home leads here: what a link there names is your "
               "configuration, whatever its name (a dotfiles repository's files)")


class HomeLinks(NamedTuple):
    """Every link found in home's dot entries, and the folders the walk did not list
    (its bound reached), sorted."""

    links: tuple[str, ...] = ()
    unwalked: tuple[str, ...] = ()


def home_links(home: str, *, max_folders: int = MAX_HOME_FOLDERS) -> HomeLinks:
    """The links among home's dot entries and in its dot folders, HOME_LINK_DEPTH levels
    of folders deep, breadth first, no link followed: a dotfiles repository is linked in
    there (GNU Stow's `~/.inputrc -> dotfiles/inputrc`, `~/.config/nvim ->
    ../dotfiles/nvim`, yadm's and rcm's the same), and what a link leads to is read by
    the tool whose name the link has, whatever that name is: so each one is a place by
    where it leads, with no table naming it. A name without a dot at home's top
    (`~/work -> /data/work`) is the person's files, not their configuration."""
    if _found_links is not None and home in _found_links:
        return _found_links[home]
    links: list[str] = []
    queue: list[tuple[str, int]] = [(home, 0)]
    listed = 0
    while queue and listed < max_folders:
        folder, depth = queue.pop(0)
        listed += 1
        try:
            with os.scandir(folder) as entries:
                listing = sorted(((e.name, _link_or_none(e), e.is_dir(follow_symlinks=False))
                                  for e in entries), key=lambda t: t[0])
        except OSError:
            continue
        for name, said, listed_dir in listing:
            if depth == 0 and not name.startswith("."):
                continue
            path = os.path.join(folder, name)
            link = os.path.islink(path) if said is None else said  # None: not said, ask
            is_dir = (not link and os.path.isdir(path)) if said is None else listed_dir
            if link:
                links.append(path)
            elif is_dir and depth + 1 < HOME_LINK_DEPTH:
                queue.append((path, depth + 1))
    found = HomeLinks(tuple(links), tuple(sorted(f for f, _ in queue)))
    if _found_links is not None:
        _found_links[home] = found
    return found


_found_links: dict[str, HomeLinks] | None = None


def found_once_store(kind: str) -> dict[str, Any] | None:
    """once_per_start.store_for: what other modules find once per start."""
    return once_per_start.store_for(kind)


# The places found within `found_once`, by home and PATH; None outside it.
_found: dict[tuple[tuple[str, str], tuple[tuple[str, str], ...]], tuple[Place, ...]] | None \
    = None


@contextlib.contextmanager
def found_once() -> Iterator[None]:
    """Within it, each home's places are found once: a command line's start asks for
    them when resolving and again when planning, milliseconds apart (each look costs 2
    to 6 ms, more with a long PATH). Outside it every call looks again, so a process
    that makes many snapshots (a harness) never uses what an earlier one found; and
    `look_again` ends the reuse where a start waits (on a person's answer)."""
    global _found, _found_links
    outer, outer_links, outer_other = _found, _found_links, once_per_start.opened()
    _found = {} if outer is None else outer
    _found_links = {} if outer_links is None else outer_links
    once_per_start.use({} if outer_other is None else outer_other)
    try:
        yield
    finally:
        _found, _found_links = outer, outer_links
        once_per_start.use(outer_other)


def look_again() -> None:
    """What was found so far within `found_once` is looked for again when next asked."""
    if _found is not None:
        _found.clear()
    if _found_links is not None:
        _found_links.clear()
    other = once_per_start.opened()
    if other is not None:
        other.clear()


# The variables naming folders an interpreter loads code from before (or instead of) its
# own: a module the sandbox puts in one of them runs in the person's every program of
# that language, whatever folder it runs in (a `json.py` in a PYTHONPATH folder is
# imported before the standard library's; PERL5LIB and RUBYLIB are searched before the
# system's; NODE_PATH for every module a program's own node_modules lacks).
CODE_PATHS = (
    ("PYTHONPATH", "Python imports any module there before the standard library's, in "
                   "every program you run"),
    ("PERL5LIB", "Perl loads any module there before the system's"),
    ("RUBYLIB", "Ruby loads any file there before the system's"),
    ("NODE_PATH", "Node loads any module there that a program's node_modules lacks"),
    ("LD_LIBRARY_PATH", "every program you run loads its shared libraries from there "
                        "before the system's (a libselinux.so.1 there runs in ls)"),
)


# Variables naming one file or folder whose code runs as the person (a place: a grant
# inside it is refused, one holding it keeps it read-only and held when missing).
CODE_PLACES: tuple[tuple[str, Kind, str], ...] = (
    ("BASH_ENV", "file", "every non-interactive bash runs it first"),
    ("ENV", "file", "every interactive POSIX shell runs it first"),
    ("PYTHONSTARTUP", "file", "every interactive Python runs it first"),
    ("ZDOTDIR", "folder", "zsh runs its .zshenv, .zshrc and .zprofile from there"),
    ("PYTHONUSERBASE", "folder", "Python's user site-packages: its .pth files and "
                                 "usercustomize run at every start"),
    ("PYTHONPYCACHEPREFIX", "folder", "Python loads compiled modules from there, the "
                                      "standard library's too"),
    ("GIT_TEMPLATE_DIR", "folder", "git copies its hooks into every repository it makes"),
    ("GIT_EXEC_PATH", "folder", "git runs its own commands from there"),
    ("XDG_CONFIG_HOME", "folder", "every tool's settings, in place of ~/.config"),
    ("GOMODCACHE", "folder", "go builds the modules there without checking them again"),
    ("VIMRUNTIME", "folder", "vim and nvim run its plugin/ and filetype files at every "
                             "start (red team 3: a run in a runtime checkout it names)"),
    ("VIM", "folder", "vim and nvim read the system vimrc and runtime from there"),
    ("XDG_DATA_HOME", "folder", "nvim runs nvim/site/plugin/ there at every start, "
                                "bash-completion its completions/ on Tab (red team 3)"),
)
# Variables of options that name files or folders of code, by the option's prefix.
CODE_OPTIONS = (
    ("PERL5OPT", ("-I",), "Perl loads modules from there first"),
    ("RUBYOPT", ("-I", "-r"), "Ruby loads it, or files from there first"),
    ("NODE_OPTIONS", ("--require=", "-r=", "--import=", "--loader=",
                      "--experimental-loader="), "every node program loads it first"),
    ("GOFLAGS", ("-toolexec=",), "go runs it for every tool of a build"),
)


def _pth_files(base: str) -> list[str]:
    """The .pth files of the user site-packages under `base` (lib/python*/
    site-packages): each adds folders to sys.path at every start (editable installs:
    `pip install --user -e .`), searched before the system's packages, and
    `usercustomize` is imported from any of them. Listed without glob, which every
    start would otherwise load."""
    found = []
    lib = os.path.join(base, "lib")
    try:
        versions = [n for n in os.listdir(lib) if n.startswith("python")]
    except OSError:
        return []
    for version in versions:
        site = os.path.join(lib, version, "site-packages")
        try:
            found += [os.path.join(site, n) for n in os.listdir(site) if n.endswith(".pth")]
        except OSError:
            continue
    return found


CodeKind = Literal["file", "folder", "holder"]


def code_places(home: str) -> list[tuple[str, CodeKind, str]]:
    """(path, kind, what) of each file or folder this environment names whose code runs
    as the person: CODE_PLACES, the paths CODE_OPTIONS name, the folders the .pth files
    of the user site-packages add (holders, as "holder")."""
    found: list[tuple[str, CodeKind, str]] = []
    for variable, kind, what in CODE_PLACES:
        value = os.environ.get(variable, "")
        if value.startswith("/"):
            found.append((os.path.normpath(value), kind, f"{variable} names it: {what}"))
    for variable, prefixes, what in CODE_OPTIONS:
        words = os.environ.get(variable, "").split()
        for index, word in enumerate(words):
            after = words[index + 1] if index + 1 < len(words) else ""
            for prefix in prefixes:
                value = word[len(prefix):] if word.startswith(prefix) else ""
                if word == prefix.rstrip("="):
                    value = after  # `-r file`, `-I dir`
                if value.startswith("/"):
                    named: CodeKind = "folder" if prefix == "-I" else "file"
                    found.append((os.path.normpath(value), named, f"{variable} names it: "
                                  f"{what}"))
    bases = [os.environ.get("PYTHONUSERBASE", "") or os.path.join(home, ".local")]
    for pth in sorted(p for base in bases if base.startswith("/") for p in _pth_files(base)):
        try:
            with open(pth, encoding="utf-8", errors="replace") as lines:
                for raw in lines:
                    entry = raw.strip()
                    if not entry or entry.startswith(("#", "import ", "import\t")):
                        continue
                    folder = os.path.normpath(os.path.join(os.path.dirname(pth), entry))
                    found.append((folder, "holder", f"a folder {pth} puts on Python's "
                                  "path: any module there runs in every Python program "
                                  "you run (usercustomize at every start)"))
        except OSError:
            continue
    return found


def home_places(home: str, path_env: str | None = None) -> tuple[Place, ...]:
    """The table's places for this home, every PATH folder and every folder of a code
    path (CODE_PATHS) as a holder, and the installations PATH's commands run from as
    places; each with its links resolved.

    `path_env` is PATH as the person's tools see it (this process's by default); the
    code paths are this process's environment's.
    """
    key = (os.path.normpath(home), os.environ.get("PATH", "") if path_env is None
           else path_env)
    codes = tuple(os.environ.get(name, "") for name, _ in CODE_PATHS)
    # Every variable may name a place (environment_paths.py): the whole environment is
    # the key, which a start reads in microseconds.
    environment = tuple(sorted(os.environ.items()))
    if _found is not None and (key, environment) in _found:
        return _found[(key, environment)]
    places = _home_places(*key, codes)
    if _found is not None:
        _found[(key, environment)] = places
    return places


def _home_places(home: str, path_env: str, codes: tuple[str, ...] = ()
                 ) -> tuple[Place, ...]:
    from .runs_as_you import HOME_PLACES

    resolver = _Resolver()
    home = clean_path(home)
    places: dict[str, Place] = {}

    def add(path: str, name: str, kind: Kind, what: str, *, holder: bool,
            instead: str = "", linked: bool = False, environment: str = "",
            command: str = "") -> None:
        path = clean_path(path)  # a home of `/` gives `//.bashrc`, which grants never match
        if path in places:
            if command and not places[path].command:  # a place already, by a name or a
                # list (`PROJECTS=~/src`): a command naming it refuses a grant in it too
                places[path] = places[path]._replace(command=command)
            return
        real, links = resolver.resolve(path)
        if environment:  # its kind is what is there: a folder held whole, else a file
            kind = "folder" if os.path.isdir(real) else "file"
        places[path] = Place(path, name, kind, what, holder, real, links, instead, linked,
                             environment, command)

    for entry in HOME_PLACES:
        add(os.path.normpath(home + entry.name[1:]), entry.name, entry.kind, entry.what,
            holder=entry.holder, instead=entry.instead)
    for link in home_links(home).links:
        add(link, _shown(link, home), "folder" if os.path.isdir(link) else "file",
            LINKED_WHAT, holder=False, linked=True)
    folders = path_folders(path_env)
    for folder in folders:
        if folder != home:
            add(folder, _shown(folder, home), "folder", "a folder of your PATH: any file "
                "there is a command you may type", holder=True)
    # fish's universal variables (fish_variables.py): `fish_add_path`'s folders are on
    # PATH in every fish, whatever PATH lnk starts with; then every path one names.
    for folder in fish_variables.folders(home, *fish_variables.PATH_VARIABLES):
        if folder != home:
            add(folder, _shown(folder, home), "folder", f"a folder of your PATH in fish "
                f"({'/'.join(fish_variables.PATH_VARIABLES)}{fish_variables.LABEL}): "
                "any file there is a command you may type", holder=True)
        if folder not in folders:
            folders.append(folder)
    for (variable, what), value in zip(CODE_PATHS, codes, strict=False):
        for folder in path_folders(value):
            if folder != home:
                add(folder, _shown(folder, home), "folder",
                    f"a folder of your {variable}: {what}", holder=True)
    for variable, what in (*CODE_PATHS, *fish_variables.FISH_PATHS):  # and fish's
        for folder in fish_variables.folders(home, variable):
            if folder != home:
                add(folder, _shown(folder, home), "folder", f"a folder of your "
                    f"{fish_variables.label(variable)}: {what}", holder=True)
    for path, code_kind, what in code_places(home):
        if path != home:
            add(path, _shown(path, home), "file" if code_kind == "file" else "folder", what,
                holder=code_kind == "holder")
    for named in (*environment_paths(os.environ, home), *fish_variables.named_paths(home)):
        add(named.path, _shown(named.path, home), "file",
            f"your environment's {named.variable} names it: a program of yours reads it "
            "as yours (its settings, a program it runs, a file it loads)",
            holder=False, environment=named.variable,
            command=named.variable if named.command else "")
    holders = [p for place in places.values() if place.holder
               for p in (place.path, place.real)]
    tool_homes = [p for place in places.values() if not place.holder and place.kind ==
                  "folder" and not place.environment for p in (place.path, place.real)]
    for folder in folders:
        real, _ = resolver.resolve(folder)
        if any(_within(real, d) for d in DISTRIBUTION_FOLDERS):
            continue  # the distribution's own
        # A tool home's own bin/ (pyenv's shims, ~/.npm-global/bin) is held whole with
        # it: its scripts are the manager's and are not read, but its links may lead out
        # of it (npm link leads into a project).
        scripts = not any(_within(real, t) for t in tool_homes)
        for command, files, links in _commands(real, resolver, scripts=scripts):
            for file in files:
                root = _installation(file, home, holders)
                if root is None or any(_within(root, t) for t in tool_homes):
                    continue
                add(root, _shown(root, home), "folder",
                    f"what {command} on your PATH runs ({_shown(file, home)})",
                    holder=False)
                places[root] = places[root]._replace(links=tuple(
                    dict.fromkeys((*places[root].links, *links))))
    return tuple(places.values())


def _commands(folder: str, resolver: _Resolver, *,
              scripts: bool = True) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """Each command of a PATH folder and the files it runs on the way: (name, files,
    the links met). A link leads through each link it names to its target (a link to a
    virtual environment's python leads on to the base interpreter: the environment is
    the link on the way); a script, or the script a link leads to (pipx's and uv's
    entry points), to its `#!` interpreter and through that."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = []
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            files: list[str] = []
            links: tuple[str, ...] = ()
            script = entry.path
            if entry.is_symlink():
                target, links = resolver.resolve(entry.path)
                files = [*links[1:], target]
                script = target if not _system(target) else ""
            elif not scripts or not entry.is_file(follow_symlinks=False):
                continue
            interpreter = _interpreter(script) if script else None
            if interpreter is not None and not _system(interpreter):
                target, more = resolver.resolve(interpreter)
                files += [interpreter, *more, target]
                links = (*links, *more)
            if files:
                found.append((entry.name, files, links))
        except OSError:
            continue
    return found
