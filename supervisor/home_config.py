"""A read grant of home shows the person's files, not their configuration.

Under a read grant of home, or of a folder holding it (`read = ["~"]`, `["/home"]`,
`["/"]`), home's dot entries are hidden unless the spec names them, whatever their
name: a rule by structure (`DOT_ENTRIES`, a pattern standing for every `~/.NAME`),
because a list of the places tools keep secrets fails open on the next tool nobody
listed (22 of 35 real tools' secret files were read under such a list). So are the
places that hold programs' profiles without a dot (`PROFILE_PLACES`). What the rule
then reopens is a short list (`REOPENED`), each entry a place that holds code and no
secret, as narrow as that needs: a toolchain's programs and libraries, never the
folder around them where its settings (which can hold a token) live.

A spec that names a path in home reads exactly that (`read = ["~", "~/.config/pip"]`
shows pip's folder and nothing else of ~/.config); the credentials table
(runs_as_you.CREDENTIALS) and the name rule (secret_names.py) still hide what they know
inside it (pip.conf, which can hold an index's password, unless named itself).

A name here may carry `*` as a whole path component: any one name there (a node
version nvm installed). Plain data only; grants.py adds the rules to a snapshot,
docs/runs-as-you.md has each entry with how it was checked.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Kind = Literal["file", "folder"]
OS = Literal["any", "linux", "macos"]

# A pattern component: any one name (`*`), or any one name starting with a dot (`.*`).
ANY = "*"
ANY_DOT = ".*"

DOT_ENTRIES = "~/" + ANY_DOT
HIDDEN_REASON = "default hide: home's configuration (its dot entries)"
PROFILES_REASON = "default hide: programs' profiles without a dot"
REOPENED_REASON = "home's configuration: reopened, code and no secret"
SHOW_HINT = 'name it in files.read, e.g. read = ["~", "~/.config/nvim"]'


class ProfilePlace(NamedTuple):
    """A folder of home without a dot where programs keep their profiles (settings,
    sign-in, browser data): hidden as the dot entries are, unless the spec names it."""

    name: str
    os: OS
    what: str
    checked: str
    source: str


class Reopened(NamedTuple):
    """A place in home's configuration a read grant of home shows: code, no secret.
    `left` says what beside it stays hidden, and why the entry is not wider."""

    name: str
    kind: Kind
    what: str
    left: str
    checked: str
    source: str


PROFILE_PLACES: tuple[ProfilePlace, ...] = (
    ProfilePlace("~/snap", "linux", "each snap's own home: $HOME inside a snap is "
                 "~/snap/NAME/REVISION (SNAP_USER_DATA), with ~/snap/NAME/common "
                 "(SNAP_USER_COMMON): its dot files, and snap Firefox's and Chromium's "
                 "profiles", "read", "https://snapcraft.io/docs/environment-variables"),
    ProfilePlace("~/Games", "linux", "Lutris's and Heroic's default install folders: each "
                 "Windows game's Wine prefix is a Windows user profile "
                 "(drive_c/users/NAME/AppData), where game launchers keep their sign-in",
                 "read (Lutris's system options: game_path defaults to ~/Games; Heroic's "
                 "defaultWinePrefix ~/Games/Heroic/Prefixes/default, seen in code using it)",
                 "https://github.com/lutris/lutris/blob/master/lutris/sysoptions.py"),
    ProfilePlace("~/Library", "macos", "what macOS applications keep: Application "
                 "Support, Preferences, Cookies, Keychains, Containers, Mail, Messages",
                 "corroborated (the macOS backend hid it whole already: "
                 "supervisor/macos/host.py)", "https://developer.apple.com/library/archive/documentation/"
                 "FileManagement/Conceptual/FileSystemProgrammingGuide/"
                 "FileSystemOverview/FileSystemOverview.html"),
)

_RUSTUP = "https://rust-lang.github.io/rustup/concepts/index.html"
_CARGO_HOME = "https://doc.rust-lang.org/cargo/guide/cargo-home.html"
_NPMRC = "https://docs.npmjs.com/cli/configuring-npm/npmrc"
_NVM = "https://github.com/nvm-sh/nvm#installing-and-updating"
_PYENV = "https://github.com/pyenv/pyenv#understanding-path"
_PIP_CONFIG = "https://pip.pypa.io/en/stable/topics/configuration/"
_UV_STORAGE = "https://docs.astral.sh/uv/reference/storage/"
_PIPX_PATHS = "https://pipx.pypa.io/latest/how-to/configure-paths/"
_SITE = "https://docs.python.org/3/library/site.html"
_FILE_HIERARCHY = "https://www.freedesktop.org/software/systemd/man/latest/file-hierarchy.html"

_NODE_PREFIX = ("etc/ (npm's global config, $PREFIX/etc/npmrc, where `npm config set "
                "--location=global` writes a registry token)")
_PYTHON_PREFIX = ("the version's own top (pip's site config, pip.conf at sys.prefix, "
                  "which can name an index with its password; conda's .condarc)")
_PYENV_TOP: tuple[tuple[str, Kind, str], ...] = (
    ("bin", "folder", "own command"), ("libexec", "folder", "commands, which the shims run"),
    ("shims", "folder", "shims on PATH"), ("plugins", "folder", "plugins (pyenv-virtualenv...)"),
    ("pyenv.d", "folder", "hooks"), ("version", "file", "global version's name"))
_VENV_PARTS: tuple[tuple[str, Kind, str], ...] = (
    ("bin", "folder", "programs"), ("lib", "folder", "packages"),
    ("pyvenv.cfg", "file", "environment's base Python"))
_VENV_TOP = ("the environment's other files at its top (pip.conf; pipx_metadata.json and "
             "uv-receipt.toml, which keep the install's pip arguments and index URLs)")

REOPENED: tuple[Reopened, ...] = (
    Reopened("~/.rustup", "folder", "rustup's toolchains and settings.toml (the default "
             "toolchain, overrides by folder)", "nothing: rustup keeps no login",
             "tested (settings.toml here: version, default_toolchain, profile, overrides)",
             _RUSTUP),
    Reopened("~/.cargo/bin", "folder", "what cargo install and rustup's proxies put on "
             "PATH", "~/.cargo's config.toml and credentials.toml (registry tokens)",
             "read (the Cargo Home page)", _CARGO_HOME),
    Reopened("~/.cargo/registry", "folder", "downloaded crates and the registry index, "
             "which a build reads offline", "the same", "read (the Cargo Home page)",
             _CARGO_HOME),
    Reopened("~/.local/bin", "folder", "commands on PATH (pip --user, pipx and uv tool "
             "links, scripts)", "the rest of ~/.local (share/, state/: tools' data and "
             "logins)", "read (as its row of the home places)", _FILE_HIERARCHY),
    Reopened("~/.local/lib", "folder", "pip install --user's site-packages", "the same",
             "read (Python's site docs, as its row of the home places)", _SITE),
    *(Reopened(f"~/.nvm/versions/node/*/{part}", "folder", f"each node nvm installed: "
               f"its {what}", _NODE_PREFIX + "; nvm's own cache and aliases",
               "read (npmrc's page: the global config is $PREFIX/etc/npmrc); nvm's "
               "versions/node/VERSION corroborated", _NPMRC)
      for part, what in (("bin", "node, npm, npx and global packages' commands"),
                         ("lib", "npm and the global packages"),
                         ("include", "headers native addons build against"))),
    *(Reopened(f"~/.pyenv/{part}", kind, f"pyenv's {what}", "pyenv's cache and the "
               "versions' tops", "tested (pyenv here: its shims run libexec/pyenv, "
               "which reads version and pyenv.d)", _PYENV)
      for part, kind, what in _PYENV_TOP),
    *(Reopened(f"~/.pyenv/versions/*/{part}", "folder", f"each Python pyenv installed: "
               f"its {what}", _PYTHON_PREFIX, "read (pip's configuration page; "
               "pip's site config is sys.prefix/pip.conf, tested here)", _PIP_CONFIG)
      for part, what in (("bin", "programs"), ("lib", "standard library and packages"),
                         ("include", "headers"))),
    Reopened("~/.local/share/uv/python", "folder", "the Pythons uv installed",
             "~/.local/share/uv/credentials (uv auth login's)", "corroborated",
             _UV_STORAGE),
    *(Reopened(f"~/.local/share/uv/tools/*/{part}", kind, f"each tool uv installed: its "
               f"{what}", _VENV_TOP, "corroborated (uv-receipt.toml's [tool.options] "
               "index settings read in uv's own tests)", _UV_STORAGE)
      for part, kind, what in _VENV_PARTS),
    *(Reopened(f"~/.local/share/pipx/venvs/*/{part}", kind, f"each app pipx installed: "
               f"its {what}", _VENV_TOP + "; pipx's logs, which record its pip commands",
               "read (pipx's Configure Paths page: its venvs in ~/.local/share/pipx)",
               _PIPX_PATHS)
      for part, kind, what in _VENV_PARTS),
)


def profile_places(system: str) -> tuple[str, ...]:
    """The profile places of `system` ("linux" or "macos")."""
    return tuple(p.name for p in PROFILE_PLACES if p.os in ("any", system))


def is_pattern(name: str) -> bool:
    """Whether a name carries a pattern component (`*` or `.*`)."""
    return any(part in (ANY, ANY_DOT) for part in name.split("/"))


def matches(part: str, want: str) -> bool:
    """Whether a path component `part` is what the pattern component `want` stands for."""
    if want == ANY:
        return part not in ("", ".", "..")
    if want == ANY_DOT:
        return part.startswith(".") and part not in (".", "..")
    return part == want
