"""The person's configuration that has no dot at home's top, found at launch.

home_config's rule hides home's dot entries under a read grant of home. Three layouts
keep configuration where that rule does not look, each found here by its structure,
never by a tool's name, and hidden the same way (grants.home_rule adds the hides):

- where a link among home's dot entries leads: GNU Stow's `~/.config/TOOL ->
  ../dotfiles/TOOL` (yadm's, rcm's the same). The tool reads its settings, and its
  token, through the link, whatever its name: what the link leads to in home is
  configuration by construction (home_places.home_links finds the links, as it does
  for writes). A link in a place home_config reopens as code (`~/.local/bin/tool ->
  ~/src/tool/tool.py`) leads to a program, and is left as it is;
- the person's XDG base folders, where they set one in home without a dot
  (`XDG_CONFIG_HOME=~/cfg`): every XDG tool keeps its settings and logins there
  instead of ~/.config (and its data, state and cache instead of ~/.local/share,
  ~/.local/state and ~/.cache, which the rule hides too);
- each path the person's launch environment names (environment_paths.py: any
  variable, `GNUPGHOME=~/gnupg`, `KUBECONFIG=~/kube/config`, `ZQ_CREDENTIALS=~/zq/c`),
  where it lies in home without a dot: a tool's settings and secrets moved out of its
  dot folder. Not where the person is (the working directory, or a folder holding it)
  nor a program (a folder of PATH or of a code path, or what lies in one: `EDITOR=
  ~/bin/ed`), which PATH shows; a PATH folder inside a hidden one (`GOPATH=~/go`,
  `~/go/bin`) is shown again (grants.py);
- a Python prefix in home without a dot: a folder whose `bin/` holds a Python
  (`python3`, `python3.12`: that Python's sys.prefix), a conda installation or
  environment (a folder holding `conda-meta/`: `~/miniconda3`, its `envs/NAME`) or a
  virtual environment (a folder holding `pyvenv.cfg`). Its top holds its settings (pip's site
  config, `pip.conf` at sys.prefix, which can name an index with its password;
  conda's `.condarc`, `condarc` and `condarc.d/`, which can hold a channel's token):
  each file at its top, and `condarc.d`, are hidden, as a pyenv version's top is
  (home_config.REOPENED); its folders (bin, lib, include, share, ssl...) stay shown.
  `pyvenv.cfg` stays: Python reads it to start in the environment. A conda prefix's
  places for an environment's variables (`etc/conda/activate.d`, `deactivate.d`,
  `conda-meta/state`), secrets by conda's docs, are hidden too;
- an AppImage's portable home or settings folder (APPIMAGE.home, APPIMAGE.config, by
  AppImage's own convention), at home's top or one folder below.

Looked for at home's top and one folder below it (`~/tools/miniconda3`, `~/venvs/x`),
and in each conda prefix's `envs/`; a folder of more than MAX_LISTED entries is looked
at no further (a prefix deeper, or past that bound, is the spec's to hide). A spec that
names the path, or a folder between it and home (`read = ["~/dotfiles"]`), shows it:
the person named it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from typing import NamedTuple

LINKED_REASON = ("default hide: home's configuration (where a link among its dot "
                 "entries leads)")
LINKED_HOLDER_REASON = ("default hide: home's configuration (the dotfiles folder a link "
                        "among its dot entries leads into: its history, its other "
                        "packages)")
XDG_REASON = "default hide: home's configuration (the person's {variable})"
CONDA_REASON = ("default hide: a conda environment's variables (activate.d's scripts, "
                "conda env config vars)")
CONDA_VARIABLES = (("etc/conda/activate.d", True), ("etc/conda/deactivate.d", True),
                   ("conda-meta/state", False))
PORTABLE_REASON = "default hide: an AppImage's portable home or settings (APPIMAGE.home)"
PREFIX_REASON = ("default hide: a Python prefix's settings (its top's files: pip.conf, "
                 ".condarc)")
XDG_VARIABLES = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
UNDOTTED_REASONS = frozenset((LINKED_REASON, PREFIX_REASON,
                              *(XDG_REASON.format(variable=v) for v in XDG_VARIABLES)))
ENVIRONMENT_REASON = ("default hide: home's configuration (your environment's {variable} "
                      "names it)")
PROGRAMS_REASON = "home's configuration: reopened, a folder of your PATH (programs)"
ENVIRONMENT_START = ENVIRONMENT_REASON.split("{", 1)[0]


def is_undotted(reason: str) -> bool:
    """Whether `reason` is one of this module's hides (a variable's name in some)."""
    return reason in UNDOTTED_REASONS or reason.startswith(ENVIRONMENT_START)
MAX_LISTED = 512  # entries of one folder looked through for a prefix
CONDA_MARK = "conda-meta"  # a conda prefix's record of what is installed in it
VENV_MARK = "pyvenv.cfg"  # a virtual environment's (PEP 405), read by Python at start
CONDA_SETTINGS_FOLDER = "condarc.d"  # conda's settings folder at a prefix (its docs)
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")  # a Python's program in its prefix's bin/


class Found(NamedTuple):
    """A path to hide, whether it is a folder, and why."""

    path: str
    is_dir: bool
    reason: str


def xdg_homes(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The XDG base folders the environment sets (variable, path), absolute ones only:
    the specification says a relative one is ignored."""
    return tuple((name, os.path.normpath(environ[name])) for name in XDG_VARIABLES
                 if environ.get(name, "").startswith("/"))


def found(home: str, xdg: Iterable[tuple[str, str]], links: Iterable[str],
          code_places: Iterable[str], *, named: Iterable[tuple[str, str]] = (),
          programs: Iterable[str] = (), cwd: str = "") -> list[Found]:
    """What of home's configuration lies outside its dot entries now. `home` is
    resolved; `links` are the links among home's dot entries (home_places.home_links);
    `code_places`, the places reopened as code, whose links lead to programs; `named`,
    (variable, path) of each path the launch environment names (environment_paths.py),
    hidden but where the person is (`cwd` or a folder holding it) and in or at a folder
    of `programs` (PATH's and the code paths' folders: programs, shown as PATH is)."""
    places = tuple(code_places)
    out: list[Found] = []
    for link in links:
        if any(is_within(link, place) for place in places):
            continue
        target = os.path.realpath(link)
        if _outside_dot_entries(home, target):
            out.append(Found(target, os.path.isdir(target), LINKED_REASON))
            holder = _linked_holder(home, target)
            if holder is not None and not (cwd and is_within(cwd, holder)):
                out.append(Found(holder, True, LINKED_HOLDER_REASON))
    for variable, path in xdg:
        real = os.path.realpath(path)
        if _outside_dot_entries(home, real) and os.path.isdir(real):
            out.append(Found(real, True, XDG_REASON.format(variable=variable)))
    program_folders = [os.path.realpath(folder) for folder in programs]
    for variable, path in named:
        real = os.path.realpath(path)
        # in a dot entry reopened as code (~/.local/lib, ~/.rustup), what a variable
        # names is a setting all the same (red team 3 read a token kept there)
        reopened = os.path.lexists(real) and any(
            fnmatch.fnmatchcase(real, place) or fnmatch.fnmatchcase(real, place + "/*")
            for place in places)
        if not (_outside_dot_entries(home, real) or reopened) or (
                cwd and is_within(cwd, real)) or any(
                _program(real, folder, home) for folder in program_folders):
            continue
        out.append(Found(real, os.path.isdir(real), ENVIRONMENT_REASON.format(
            variable=variable)))
    for prefix in prefixes(home):
        out.extend(_prefix_settings(prefix))
    out.extend(_portable_homes(home))
    return out


def _program(path: str, folder: str, home: str) -> bool:
    """Whether `path` is a program of the PATH or code-path folder `folder`, or below
    it; of a folder that is home or holds it (`PATH=$PATH:~`, an old habit), only what
    lies in it directly: red team 3 read a token any variable named deep in home."""
    if is_within(home, folder):
        return os.path.dirname(path) == folder
    return is_within(path, folder)


def is_within(path: str, folder: str) -> bool:
    """grants.is_within's rule (this module stands below grants.py, which uses it)."""
    return folder in (path, "/") or path.startswith(folder + "/")


# What marks a folder as a repository, the dotfiles' history in it (git, Mercurial,
# Jujutsu, Sapling, Subversion).
REPOSITORY_MARKS = (".git", ".hg", ".jj", ".sl", ".svn")


def _linked_holder(home: str, target: str) -> str | None:
    """The repository a link among home's dot entries leads into, hidden whole: its
    history keeps every version of the linked bytes (`git show HEAD:tool/hosts.yml`)
    and its other files are the same dotfiles. A folder that is no repository hides the
    target alone: nothing tells Stow's folder (`~/.bashrc -> dotfiles/bash/.bashrc`)
    from a synced one holding the person's documents (`~/.bashrc -> Dropbox/.bashrc`,
    red team 26h). Never home itself, nor what lies under a dot entry (hidden already)."""
    folder = os.path.dirname(target)
    while folder != home and is_within(folder, home):
        if any(os.path.lexists(os.path.join(folder, mark)) for mark in REPOSITORY_MARKS):
            return folder if _outside_dot_entries(home, folder) else None
        folder = os.path.dirname(folder)
    return None


def _outside_dot_entries(home: str, path: str) -> bool:
    """Whether `path` is in home, not home itself, and not below a dot entry of it
    (which the dot rule hides already)."""
    if path == home or not is_within(path, home) or not os.path.lexists(path):
        return False
    return not path[len(home) + 1:].startswith(".")


def prefixes(home: str) -> Iterator[str]:
    """The Python prefixes at home's top and one folder below, without a dot and
    reached without a link, and each conda prefix's environments."""
    for top in _folders(home):
        for folder in (top, *_folders(top)):
            if _is_prefix(folder):
                yield folder
                if os.path.isdir(os.path.join(folder, CONDA_MARK)):
                    yield from (env for env in _folders(os.path.join(folder, "envs"),
                                                        dots=True) if _is_prefix(env))


def _folders(folder: str, *, dots: bool = False) -> list[str]:
    """The real folders in `folder` (no link), those without a dot unless `dots`; none
    where it holds more than MAX_LISTED entries."""
    try:
        with os.scandir(folder) as listing:
            entries = []
            for count, entry in enumerate(listing):
                if count >= MAX_LISTED:
                    return []
                entries.append(entry)
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name.startswith(".") and not dots:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                out.append(entry.path)
        except OSError:
            continue
    return sorted(out)


def _is_prefix(folder: str) -> bool:
    """A conda prefix, a virtual environment, or any folder whose bin/ holds a Python
    (python, python3, python3.12): that Python's sys.prefix, whose pip.conf pip reads."""
    try:
        conda = stat.S_ISDIR(os.lstat(os.path.join(folder, CONDA_MARK)).st_mode)
    except OSError:
        conda = False
    if conda or os.path.isfile(os.path.join(folder, VENV_MARK)):
        return True
    try:
        names = os.listdir(os.path.join(folder, "bin"))
    except OSError:
        return False
    return any(_PYTHON.fullmatch(name) for name in names)


def _prefix_settings(prefix: str) -> list[Found]:
    """Each file at a prefix's top but pyvenv.cfg, and conda's settings folder. A link
    there is left: hiding it would hide where it leads (a mount follows it), and what
    it names is judged where it is."""
    out = []
    try:
        with os.scandir(prefix) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return []
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and entry.name != VENV_MARK:
            out.append(Found(entry.path, False, PREFIX_REASON))
        elif stat.S_ISDIR(mode) and entry.name == CONDA_SETTINGS_FOLDER:
            out.append(Found(entry.path, True, PREFIX_REASON))
    if os.path.isdir(os.path.join(prefix, CONDA_MARK)):
        # conda's own places for an environment's variables, secrets by its docs: the
        # scripts `conda activate` sources (etc/conda/activate.d/env_vars.sh, "Saving
        # environment variables") and what `conda env config vars set` keeps. Hidden,
        # conda inside cannot activate that environment: the cost of its secrets.
        for relative, folder in CONDA_VARIABLES:
            path = os.path.join(prefix, relative)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
                out.append(Found(path, folder, CONDA_REASON))
    return out


# AppImage's portable mode (docs.appimage.org, user-guide/portable-mode): a folder named
# as the AppImage with `.home` or `.config` appended is its $HOME or XDG_CONFIG_HOME.
_PORTABLE = re.compile(r".+\.appimage\.(home|config)", re.IGNORECASE)


def _portable_homes(home: str) -> list[Found]:
    """Each AppImage's portable home or settings folder, at home's top or one folder
    below (~/Applications, ~/Downloads): a profile without a dot, its name given by the
    AppImage's own convention, not by a tool's."""
    out = []
    for folder in (home, *_folders(home)):
        for path in _folders(folder):
            if _PORTABLE.fullmatch(os.path.basename(path)):
                out.append(Found(path, True, PORTABLE_REASON))
    return out
