"""The effective policy: a spec plus what lnk-sandbox itself always adds.

What it adds, each rule with its reason so `plan` and `describe` can say why:
- the default hides (credentials and agent sockets under home, and the folders without
  a dot where programs keep their profiles: ~/snap...), unless the spec names the path
  itself; home's dot entries under a read grant of home are hidden by pattern, which
  grants.py adds once it knows what a grant resolves to;
- `$LNK_HOME` hidden, always: remembered permissions and saved snapshots live there,
  and a sandbox that could write them could allow itself anything;
- an agent's own folder and a session's folder reopened read-write, dot files included;
- the installation running lnk-sandbox kept read-only inside any write grant that
  holds it, so a sandbox never rewrites the code that runs outside next time.

Still names, not paths on disk: `grants.py` resolves them once into a snapshot.
"""

from __future__ import annotations

import os
import sys
from typing import Literal, NamedTuple

from .environment import DEFAULT_KEEP
from .home_config import PROFILES_REASON
from .limits import Limits
from .netpolicy import NetworkRules
from .spec import PathGrant, Spec, written_below

Access = Literal["read", "write", "hide", "protect"]

def credential_names(platform: str | None = None) -> tuple[str, ...]:
    """Where this OS's developer tools keep a token, key, session, history or agent
    socket in home (runs_as_you.CREDENTIALS): hidden from every sandbox unless a spec
    names the path itself, or a folder inside it. `platform`: another OS's, as
    Python names it ("darwin"), for a test or a description of it."""
    from .runs_as_you import CREDENTIALS
    from .system import system_of

    system = system_of(platform)
    return tuple(dict.fromkeys(c.name for c in CREDENTIALS if c.os in ("any", system)))


def profile_names(platform: str | None = None) -> tuple[str, ...]:
    """The folders of home without a dot where this OS's programs keep their profiles
    (home_config.PROFILE_PLACES: ~/snap, ~/Library...): hidden as home's dot entries
    are, unless a spec names the path itself. `platform`: as credential_names'."""
    from .home_config import profile_places
    from .system import system_of

    return profile_places(system_of(platform))


LNK_HOME_NAME = "$LNK_HOME"

# Folders every Linux sandbox reads (each left out when missing): what programs and
# their libraries need, and nothing of a person's own.
LINUX_SYSTEM_FOLDERS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
)

# The same on macOS, resolved (/etc is a link to /private/etc there, and Seatbelt matches
# resolved paths): the system, its libraries and frameworks, installed applications and
# Homebrew's /opt, the time zones /etc/localtime names, and the shell /bin/sh selects.
MACOS_SYSTEM_FOLDERS = (
    "/System", "/usr", "/bin", "/sbin", "/Library", "/Applications", "/opt",
    "/private/etc", "/private/var/db/timezone", "/private/var/select",
)


def system_folders() -> tuple[str, ...]:
    """The folders every sandbox of this OS reads (supervisor/system.py's choice)."""
    from .system import SYSTEM

    return {"linux": LINUX_SYSTEM_FOLDERS, "macos": MACOS_SYSTEM_FOLDERS}[SYSTEM]


class Context(NamedTuple):
    """The facts of this run that names expand against.

    `home` and `lnk_home` are as the environment gives them, not resolved; `cwd` is the
    kernel's own name for the working directory, which has no links in it.
    """

    home: str
    cwd: str
    lnk_home: str
    uid: int
    runtime_dir: str | None
    installation: tuple[str, ...]
    system_folders: tuple[str, ...] = LINUX_SYSTEM_FOLDERS
    # The XDG base folders the environment sets, (variable, path): home_hidden.py.
    xdg: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def current() -> Context:
        home = clean_path(_absolute_setting("HOME", "your home folder, as in /home/you",
                                            os.environ.get("HOME") or _passwd_home()))
        lnk_home = clean_path(_absolute_setting(
            "LNK_HOME", "a folder of your own, as in $HOME/.lnk",
            os.environ.get("LNK_HOME") or os.path.join(home, ".lnk")))
        try:
            cwd = os.getcwd()
        except OSError as err:
            from .errors import LaunchError

            raise LaunchError(
                "the working directory is gone (it was removed while this shell was in it)"
                if err.errno == 2 else f"the working directory cannot be read: {err.strerror}",
                hint="cd into a folder that exists, and run it again",
                errno=err.errno) from None
        from .home_hidden import xdg_homes

        runtime = os.environ.get("XDG_RUNTIME_DIR") or None
        return Context(
            home=home,
            cwd=cwd,
            lnk_home=lnk_home,
            uid=os.geteuid(),
            runtime_dir=os.path.normpath(runtime) if runtime and runtime.startswith("/") else None,
            installation=installation_paths(),
            system_folders=system_folders(),
            xdg=xdg_homes(os.environ),
        )


def _passwd_home() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        from .errors import LaunchError

        raise LaunchError(f"HOME is not set, and this user (uid {os.geteuid()}) has no "
                          "entry in the password database to find a home folder in",
                          hint="set HOME to your home folder, as in HOME=/home/you") from None


def clean_path(path: str) -> str:
    """`path` normalized, its leading `//` made `/`: POSIX lets a system give exactly two
    leading slashes a meaning of its own, so normpath keeps them, and every folder
    above `//x` would be `//` again, for ever (`os.path.split("//")`)."""
    path = os.path.normpath(path)
    return path[1:] if path.startswith("//") else path  # normpath makes `///` one


def _absolute_setting(name: str, example: str, value: str) -> str:
    """The environment's `name` when it is an absolute path: a relative one would mean
    a different folder from every working directory (lnk-sandbox's settings made in the
    project the sandbox writes, a home that is wherever the command starts)."""
    from .errors import LaunchError

    if not value.startswith("/"):
        raise LaunchError(f"{name}={value!r} is not an absolute path, so it would name "
                          "another folder from each working directory",
                          hint=f"set {name} to the absolute path of {example}")
    longest, name_max = _path_bounds()
    raw = os.fsencode(value)
    if len(raw) >= longest or any(len(part) > name_max for part in raw.split(b"/")):
        # Refused whole: made a folder at a time, it would fail half-way, the first
        # folders made and left.
        raise LaunchError(f"{name} is longer than a path of this system may be ("
                          f"{longest - 1} bytes, {name_max} a name): {value[:60]}...",
                          hint=f"set {name} to the absolute path of {example}")
    return value


def _path_bounds() -> tuple[int, int]:
    """PATH_MAX (with its NUL) and NAME_MAX here: 4096 and 255 on Linux."""
    try:
        return os.pathconf("/", "PC_PATH_MAX"), os.pathconf("/", "PC_NAME_MAX")
    except (OSError, ValueError):
        return 1024, 255


def installation_paths() -> tuple[str, ...]:
    """The folders of the code that runs lnk-sandbox: packages, venv, interpreter, and
    the folder Python imports the packages from. That folder is on sys.path (a checkout
    through an editable install or PYTHONPATH, or site-packages), and Python looks there
    for every module not found before it: a `sitecustomize.py` (imported at every start,
    before the system's own when the folder comes from PYTHONPATH), an extra lnk-sandbox
    loads only when asked (`mcp`), a module a newer Python no longer ships. Found by a
    red team: a `sitecustomize.py` planted in the checkout ran at the next `lnk`."""
    package_root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    paths = {
        os.path.join(package_root, name)
        for name in ("supervisor", "inner", "netns_helper", "lnk_sandbox")
        if os.path.isdir(os.path.join(package_root, name))
    }
    paths.add(package_root)
    paths.add(os.path.realpath(sys.prefix))
    paths.add(os.path.realpath(sys.base_prefix))
    return tuple(sorted(paths))


class PathRule(NamedTuple):
    """One path rule of the effective policy.

    `name` is as written (`~/proj`, `.`, `$LNK_HOME/agents/a`); `key`/`line` point at
    the spec when the rule came from it, else None with `reason` saying who added it.
    `dot_files_writable` marks write grants listed in `write_dot_files` (and agents'
    and sessions' own folders); `commit`, those listed in `files.commit`; `opened`, the
    paths below a write grant `write_dot_files` names one by one (`./.env`: ".env"),
    each kept writable alone.
    """

    name: str
    access: Access
    optional: bool
    reason: str
    key: str | None = None
    line: int | None = None
    dot_files_writable: bool = False
    commit: bool = False
    opened: tuple[str, ...] = ()  # paths below it (relative) write_dot_files opens


class RunSettings(NamedTuple):
    """What a run is given besides its files, as the spec says it: the network's mode
    (the rest of `[network]` is its own record, NetworkRules), the environment kept and
    set, the agent's and the session's names.
    Resolving changes none of it, so the snapshot holds the policy's own (one record,
    spelled once); a saved snapshot keeps them flat, as it always did (Snapshot.plain)."""

    network_mode: str
    env_keep: tuple[str, ...]
    env_assign: tuple[tuple[str, str], ...]
    agent: str | None
    session: str | None


class Policy(NamedTuple):
    """The effective policy: plain data, the same for every OS."""

    source: str
    rules: tuple[PathRule, ...]
    programs: tuple[str, ...] | None
    programs_line: int | None
    settings: RunSettings
    limits: Limits = Limits()
    network: NetworkRules = NetworkRules()
    caches: tuple[PathGrant, ...] = ()


def effective_policy(spec: Spec, context: Context) -> Policy:
    """Spec + the rules lnk-sandbox always adds (see the module docstring)."""
    rules: list[PathRule] = []
    named: set[str] = set()
    dot_files = set(spec.files.write_dot_files)
    commit = set(spec.files.commit)
    written = frozenset(g.path for g in spec.files.write)
    opened: dict[str, list[str]] = {}
    for name in spec.files.write_dot_files:
        folder = written_below(name, written) if name not in written else None
        if folder is not None:
            opened.setdefault(folder, []).append(name[len(folder.rstrip("/")) + 1:])
    for access, grants in (
        ("read", spec.files.read),
        ("write", spec.files.write),
        ("hide", spec.files.hide),
    ):
        for grant in grants:
            named.add(grant.path)
            rules.append(
                PathRule(
                    name=grant.path,
                    access=access,  # type: ignore[arg-type]
                    optional=grant.optional,
                    reason=grant.key,
                    key=grant.key,
                    line=grant.line,
                    dot_files_writable=grant.path in dot_files,
                    commit=grant.path in commit,
                    opened=tuple(sorted(opened.get(grant.path, ())))
                    if access == "write" else (),
                )
            )
    for name in credential_names():
        if name not in named:
            rules.append(PathRule(name, "hide", True, "default hide: credentials"))
    for name in profile_names():
        if name not in named:
            rules.append(PathRule(name, "hide", True, PROFILES_REASON))
    if context.runtime_dir and context.runtime_dir not in named:
        rules.append(
            PathRule(context.runtime_dir, "hide", True, "default hide: agent sockets "
                     "($XDG_RUNTIME_DIR)")
        )
    rules.append(PathRule(LNK_HOME_NAME, "hide", True, "lnk-sandbox's settings ($LNK_HOME)"))
    if spec.agent:
        rules.append(
            PathRule(f"{LNK_HOME_NAME}/agents/{spec.agent}", "write", False,
                     f"the agent {spec.agent!r}'s own folder", dot_files_writable=True)
        )
    if spec.session:
        rules.append(
            PathRule(f"{LNK_HOME_NAME}/sessions/{spec.session}", "write", False,
                     f"the session {spec.session!r}'s folder", dot_files_writable=True)
        )
    for path in context.installation:
        rules.append(PathRule(path, "protect", True, "the installation running lnk-sandbox"))
    return Policy(
        source=spec.source,
        rules=tuple(rules),
        programs=spec.commands.programs,
        programs_line=spec.commands.line,
        settings=RunSettings(
            network_mode=spec.network.mode,
            env_keep=spec.env.keep if spec.env.keep is not None else DEFAULT_KEEP,
            env_assign=spec.env.assign,
            agent=spec.agent,
            session=spec.session,
        ),
        network=NetworkRules(
            allow=spec.network.allow,
            deny=spec.network.deny,
            forward=spec.network.forward,
            expose=spec.network.expose,
            unix=spec.network.unix,
        ),
        caches=spec.files.caches,
        limits=spec.limits,
    )
