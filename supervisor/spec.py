"""The spec: TOML validated into frozen plain data.

A missing key means the least that still does the job; an empty list means none. Every
error names the file, the key and, where it can be found, the line, and says what to
change. Nothing here looks at the machine: paths are checked for form only; what they
point at is the grant resolver's business (`grants.py`). One bound alone asks the
machine: a /tmp or /dev/shm size where the spec leaves the run's memory to its default,
which follows the machine's memory (`held_in_memory`).
"""

from __future__ import annotations

import errno
import math
import os
import re
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from .environment import is_loader_variable
from .errors import SpecError
from .limits import Limits

if TYPE_CHECKING:
    from .hostnames import HostPattern
    from .netpolicy import UnixSocket

DEFAULT_SPEC_NAME = "<default spec>"
DEFAULT_SPEC_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "default_spec.toml")

NetworkMode = Literal["none", "proxy", "host"]
_NETWORK_MODES = ("none", "proxy", "host")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROGRAM_NAME = re.compile(r"^[^/\x00]+$")

_TOP_KEYS = ("agent", "session", "files", "commands", "network", "env", "limits")
_LIMIT_KEYS = ("pids", "memory", "tmp", "shm", "files", "cpu", "timeout")
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$", re.IGNORECASE)
# Each limit's least (a Python program and the start's own work still fit) and most
# (pids: the kernel's PID_MAX_LIMIT; files: its nr_open ceiling; sizes: 1 PiB, far below
# where a cgroup file wraps; times: 68 years, a time_t's reach on every platform).
_LIMIT_RANGE = {"pids": (8, 4 << 20), "files": (16, 1 << 30), "memory": (64 << 20, 1 << 50),
                "tmp": (1 << 20, 1 << 50), "shm": (1 << 20, 1 << 50), "cpu": (1, 1 << 31),
                "timeout": (1, 1 << 31)}
_NETWORK_KEYS = ("mode", "allow", "deny", "forward", "expose", "unix")
_PROXY_PORTS = (3128, 1080, 53)  # netns_helper.protocol's: the proxy's own inside
_MAX_PORTS = 64
_FILES_KEYS = ("read", "write", "hide", "write_dot_files", "commit", "caches")
_GRANT_TABLE_KEYS = ("path", "optional")


class PathGrant(NamedTuple):
    """One path of `[files]` as written.

    `path` is the text normalized (no doubled or trailing slashes); its first component
    says how it expands: `/` absolute, `~` the home folder, `.` the working directory.
    `optional` grants are left out when missing instead of refusing the launch. `key`
    and `line` say where the spec wrote it, for errors found later.
    """

    path: str
    optional: bool
    key: str
    line: int | None


class Files(NamedTuple):
    """`[files]`. Empty tuples mean no such grant.

    `write_dot_files` lists write grants (as written) whose top-level dot files stay
    writable, or paths inside one (`./.env`), each the one protected path it opens;
    absent, every written folder's dot files are read-only. `commit` lists
    write grants whose git repository may be committed to: its objects, refs, index and
    logs writable, what git reads to decide what to run (settings, hooks, commondir...)
    still read-only; absent, .git is read-only whole. `caches` names folders in home
    where the sandbox sees a private cache of lnk-sandbox's own (caches.py); absent,
    none.
    """

    read: tuple[PathGrant, ...] = ()
    write: tuple[PathGrant, ...] = ()
    hide: tuple[PathGrant, ...] = ()
    write_dot_files: tuple[str, ...] = ()
    commit: tuple[str, ...] = ()
    caches: tuple[PathGrant, ...] = ()


class Commands(NamedTuple):
    """`[commands]`. `programs` None (key absent) means any program; () means none."""

    programs: tuple[str, ...] | None = None
    line: int | None = None


class Network(NamedTuple):
    """`[network]`. `allow` and `deny` only mean something in proxy mode; `forward` and
    `expose` (ports) in none and proxy modes; `unix` None (absent) leaves path sockets
    under the grants as they are, a tuple (even empty) names the only ones to reach."""

    mode: NetworkMode = "none"
    allow: tuple[HostPattern, ...] = ()
    deny: tuple[HostPattern, ...] = ()
    forward: tuple[int, ...] = ()
    expose: tuple[int, ...] = ()
    unix: tuple[UnixSocket, ...] | None = None


class Env(NamedTuple):
    """`[env]`. `keep` None (absent) means the default list in environment.py."""

    keep: tuple[str, ...] | None = None
    assign: tuple[tuple[str, str], ...] = ()


class Spec(NamedTuple):
    """A validated spec. `source` is the file it came from, for later errors."""

    source: str
    agent: str | None = None
    session: str | None = None
    files: Files = Files()
    commands: Commands = Commands()
    network: Network = Network()
    env: Env = Env()
    limits: Limits = Limits()


def written_below(path: str, written: set[str] | frozenset[str]) -> str | None:
    """The deepest write grant (as written) that `path` lies strictly inside, by its
    text: `./.env` inside `.`, `~/proj/.vscode` inside `~/proj`; None for none."""
    holding = [w for w in written if path.startswith(w.rstrip("/") + "/")]
    return max(holding, key=len) if holding else None


class _Locator:
    """Finds the line of a key in the TOML text, since tomllib reports none.

    Best effort: it follows `[table]` headers and `key =` lines, enough for the specs
    people write; where it finds nothing the error goes without a line.
    """

    _HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\s*(#.*)?$")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"]+(?:\s*\.\s*[A-Za-z0-9_\-\"]+)*)\s*=")

    def __init__(self, text: str):
        self._found: dict[str, int] = {}
        table = ""
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header:
                table = header.group(1).replace('"', "").replace(" ", "")
                self._found.setdefault(table, number)
                continue
            key = self._KEY.match(line)
            if key:
                name = key.group(1).replace('"', "").replace(" ", "")
                full = f"{table}.{name}" if table else name
                self._found.setdefault(full, number)

    def line(self, key: str) -> int | None:
        # "files.write[2]" is found as "files.write"; a table by its header.
        plain = re.sub(r"\[\d+\]", "", key)
        while plain:
            if plain in self._found:
                return self._found[plain]
            plain = plain.rpartition(".")[0]
        return None


class _Validator:
    def __init__(self, source: str, text: str):
        self.source = source
        self.locator = _Locator(text)

    def error(self, key: str | None, message: str, hint: str | None = None) -> SpecError:
        line = self.locator.line(key) if key else None
        return SpecError(message, file=self.source, key=key, line=line, hint=hint)

    def table(self, value: object, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, not {_kind(value)}")
        for name in value:
            if name not in allowed:
                raise self.error(
                    f"{key}.{name}" if key else name,
                    f"unknown key {name!r}",
                    hint="known keys here: " + ", ".join(allowed),
                )
        return value

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, not {_kind(value)}")
        if not value:
            raise self.error(key, "must not be empty")
        if "\x00" in value:
            raise self.error(key, "must not contain a NUL character")
        return value

    def string_list(self, value: object, key: str) -> list[str]:
        if not isinstance(value, list):
            raise self.error(key, f"must be a list of strings, not {_kind(value)}",
                             hint=_list_hint(key, value))
        return [self.string(item, f"{key}[{i}]") for i, item in enumerate(value)]

    def name(self, value: object, key: str) -> str:
        text = self.string(value, key)
        if not _NAME.match(text):
            raise self.error(
                key,
                f"{text!r} is not a valid name",
                hint="use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
                "or digit",
            )
        return text

    def path_text(self, value: str, key: str, *, variables: bool = False) -> str:
        if variables and value.startswith("$"):
            name, slash, tail = value[1:].partition("/")
            if not _ENV_NAME.match(name):
                raise self.error(key, f"{value!r}: ${name} is not a variable name",
                                 hint="write $NAME, or $NAME/path, or an absolute path")
            suffix = self.path_text("/" + tail, key).lstrip("/") if slash else ""
            return f"${name}/{suffix}" if suffix else f"${name}"
        if value != "/" and value.endswith("/"):
            value = value.rstrip("/") or "/"
        value = re.sub(r"/{2,}", "/", value)
        parts = value.split("/")
        head = parts[0]
        if head.startswith("~") and head != "~":
            raise self.error(key, f"{value!r}: '~user' is not supported", hint="write the path")
        if head not in ("", "~", "."):
            raise self.error(
                key,
                f"{value!r} is a relative path",
                hint="write an absolute path, or start it with '~/' (home) or './' "
                "(the working directory)",
            )
        rest = [p for p in parts[1:] if p != "."]
        if ".." in rest:
            raise self.error(
                key,
                f"{value!r} contains '..'",
                hint="write the folder's own path; '..' through a link is ambiguous",
            )
        return "/".join([head, *rest]) if rest else (head or "/")

    def grant(self, value: object, key: str, *, variables: bool = False) -> PathGrant:
        optional = False
        if isinstance(value, dict):
            table = self.table(value, key, _GRANT_TABLE_KEYS)
            if "path" not in table:
                raise self.error(key, "a grant table needs a 'path'")
            raw = self.string(table["path"], f"{key}.path")
            opt = table.get("optional", False)
            if not isinstance(opt, bool):
                raise self.error(f"{key}.optional", f"must be true or false, not {_kind(opt)}")
            optional = opt
        else:
            if not isinstance(value, str):
                raise self.error(
                    key, f"must be a path or a table {{ path = ..., optional = ... }}, not "
                    f"{_kind(value)}"
                )
            raw = self.string(value, key)
        path = self.path_text(raw, key, variables=variables)
        return PathGrant(path, optional, key, self.locator.line(key))

    def grants(self, value: object, key: str) -> tuple[PathGrant, ...]:
        if not isinstance(value, list):
            raise self.error(key, f"must be a list of paths, not {_kind(value)}",
                             hint=_list_hint(key, value))
        return tuple(self.grant(item, f"{key}[{i}]") for i, item in enumerate(value))

    def files(self, value: object) -> Files:
        table = self.table(value, "files", _FILES_KEYS)
        read = self.grants(table.get("read", []), "files.read")
        write = self.grants(table.get("write", []), "files.write")
        hide = self.grants(table.get("hide", []), "files.hide")
        seen: dict[str, PathGrant] = {}
        for grant in (*read, *write, *hide):
            earlier = seen.get(grant.path)
            if earlier is not None:
                raise self.error(
                    grant.key,
                    f"{grant.path!r} is also listed at {earlier.key}",
                    hint=_duplicate_hint(earlier.key, grant.key),
                )
            seen[grant.path] = grant
        for grant in write:
            if grant.path == "/":
                raise self.error(
                    grant.key,
                    "a write grant of '/' opens every file on the machine",
                    hint="grant the folders the command writes",
                )
            if grant.path == "~":
                raise self.error(
                    grant.key,
                    "a write grant of the home folder would let the sandbox change what runs "
                    "at your next login (.bashrc, .profile, .ssh, autostart)",
                    hint="grant folders inside home instead, such as '~/projects/x'",
                )
        written = {g.path for g in write}
        named: dict[str, tuple[str, ...]] = {}
        for list_key in ("write_dot_files", "commit"):
            texts = tuple(self.string_list(table.get(list_key, []), f"files.{list_key}"))
            for i, text in enumerate(texts):
                key = f"files.{list_key}[{i}]"
                path = self.path_text(text, key)
                if path in written:
                    continue
                if list_key == "write_dot_files" and written_below(path, written):
                    continue  # one dot file (or setting) of a written folder, by its path
                raise self.error(
                    key,
                    f"{text!r} is not one of files.write" + (
                        ", nor inside one" if list_key == "write_dot_files" else ""),
                    hint=f"{list_key} names folders the sandbox writes, as written there"
                    + (", or one dot file in one, as in \"./.env\""
                       if list_key == "write_dot_files" else ""),
                )
            named[list_key] = tuple(self.path_text(t, "") for t in texts)
        caches = self.caches(table.get("caches", []), seen)
        return Files(read, write, hide, named["write_dot_files"], named["commit"], caches)

    def caches(self, value: object, seen: dict[str, PathGrant]) -> tuple[PathGrant, ...]:
        """`files.caches`: folders in home, each once, none also a grant or a hide."""
        texts = self.string_list(value, "files.caches")
        found: list[PathGrant] = []
        for i, text in enumerate(texts):
            key = f"files.caches[{i}]"
            path = self.path_text(text, key)
            if not path.startswith("~/"):
                raise self.error(key, f"{text!r}: a cache is a folder in home, written "
                                 "'~/...'", hint="name where the tool keeps its cache, as "
                                 "in '~/.npm' or '~/.cache/pip'")
            earlier = seen.get(path) or next((c for c in found if c.path == path), None)
            if earlier is not None:
                raise self.error(key, f"{path!r} is also listed at {earlier.key}",
                                 hint="a folder is either a private cache or granted; "
                                 "keep one of the two")
            found.append(PathGrant(path, False, key, self.locator.line(key)))
        return tuple(found)

    def commands(self, value: object) -> Commands:
        table = self.table(value, "commands", ("programs",))
        if "programs" not in table:
            return Commands(None, None)
        programs = self.string_list(table["programs"], "commands.programs")
        for i, program in enumerate(programs):
            key = f"commands.programs[{i}]"
            if "/" in program and not program.startswith(("/", "~/")):
                raise self.error(
                    key,
                    f"{program!r} is a relative path",
                    hint="name a program (looked up in PATH) or give its absolute path",
                )
            if "/" not in program and not _PROGRAM_NAME.match(program):
                raise self.error(key, f"{program!r} is not a program name")
            if program.startswith(("/", "~/")):
                self.path_text(program, key)
        if len(set(programs)) != len(programs):
            raise self.error("commands.programs", "a program is listed twice")
        return Commands(tuple(programs), self.locator.line("commands.programs"))

    def network(self, value: object) -> Network:
        table = self.table(value, "network", _NETWORK_KEYS)
        mode = table.get("mode", "none")
        if not isinstance(mode, str):
            # Checked first: a repr of any other value could itself fail (a huge number).
            raise self.error("network.mode", f"must be a string, not {_kind(mode)}",
                             hint='use "none", "proxy" or "host"')
        if mode not in _NETWORK_MODES:
            raise self.error(
                "network.mode",
                f"{mode!r} is not a network mode",
                hint="use \"none\" (loopback only), \"proxy\" (names in allow) or \"host\"",
            )
        allow = self.host_patterns(table, "allow", mode)
        deny = self.host_patterns(table, "deny", mode)
        forward = self.ports(table, "forward", mode)
        expose = self.ports(table, "expose", mode)
        for i, port in enumerate(expose):
            if port in forward:
                raise self.error(f"network.expose[{i}]", f"port {port} is also forwarded",
                                 hint="a port is either forwarded in or exposed out; keep "
                                 "one of the two")
        unix = self.unix_sockets(table["unix"]) if "unix" in table else None
        return Network(cast(NetworkMode, mode), allow, deny, forward, expose, unix)

    def host_patterns(self, table: dict[str, Any], name: str, mode: str
                      ) -> tuple[HostPattern, ...]:
        key = f"network.{name}"
        texts = self.string_list(table.get(name, []), key)
        if texts and mode != "proxy":
            what = "names are allowed" if name == "allow" else "a deny list applies"
            raise self.error(key, f"{what} only in proxy mode, and mode is {mode!r}",
                             hint=f'set mode = "proxy", or remove {name}')
        if not texts:  # hostnames (and ipaddress) load only for a list to check
            return ()
        from .hostnames import HostPatternError, parse_host_pattern

        patterns = []
        for i, text in enumerate(texts):
            try:
                patterns.append(parse_host_pattern(text, deny=name == "deny"))
            except HostPatternError as err:
                raise self.error(f"{key}[{i}]", f"{text!r}: {err}") from None
        if len({p.text for p in patterns}) != len(patterns):
            raise self.error(key, "a name is listed twice")
        return tuple(patterns)

    def ports(self, table: dict[str, Any], name: str, mode: str) -> tuple[int, ...]:
        key = f"network.{name}"
        if name not in table:
            return ()
        values = table[name]
        if not isinstance(values, list):
            raise self.error(key, f"must be a list of port numbers, not {_kind(values)}")
        if values and mode == "host":
            raise self.error(key, "host mode shares the host's network, whose loopback "
                             "ports the sandbox reaches (and serves) already",
                             hint=f'use mode = "none" or "proxy" with {name}, or remove it')
        if len(values) > _MAX_PORTS:
            raise self.error(key, f"at most {_MAX_PORTS} ports")
        ports: list[int] = []
        for i, port in enumerate(values):
            item = f"{key}[{i}]"
            if isinstance(port, bool) or not isinstance(port, int):
                raise self.error(item, f"must be a port number, not {_kind(port)}",
                                 hint="write the number without quotes, as in [5432]")
            if not 0 < port < 65536:
                raise self.error(item, f"{port} is not a port number from 1 to 65535")
            if mode == "proxy" and port in _PROXY_PORTS:
                raise self.error(item, f"port {port} is the proxy's own inside the sandbox",
                                 hint="3128 (HTTP), 1080 (SOCKS5) and 53 (DNS) are taken "
                                 "in proxy mode")
            if port in ports:
                raise self.error(key, f"port {port} is listed twice")
            ports.append(port)
        return tuple(ports)

    def unix_sockets(self, value: object) -> tuple[UnixSocket, ...]:
        from .netpolicy import UnixSocket

        if not isinstance(value, list):
            raise self.error("network.unix", f"must be a list of paths, not {_kind(value)}")
        found: list[UnixSocket] = []
        for i, item in enumerate(value):
            key = f"network.unix[{i}]"
            grant = self.grant(item, key, variables=True)
            if grant.path.startswith("."):
                raise self.error(key, f"{grant.path!r}: a socket is named by an absolute "
                                 "path, '~/...', or $NAME (a variable holding its path)")
            if any(s.name == grant.path for s in found):
                raise self.error(key, f"{grant.path!r} is listed twice")
            found.append(UnixSocket(grant.path, grant.optional, key, grant.line))
        return tuple(found)

    def env(self, value: object) -> Env:
        table = self.table(value, "env", ("keep", "set"))
        keep: tuple[str, ...] | None = None
        if "keep" in table:
            keep = tuple(self.string_list(table["keep"], "env.keep"))
            for i, name in enumerate(keep):
                self.env_name(name, f"env.keep[{i}]")
            if len(set(keep)) != len(keep):
                raise self.error("env.keep", "a variable is listed twice")
        assign: list[tuple[str, str]] = []
        if "set" in table:
            values = table["set"]
            if not isinstance(values, dict):
                raise self.error("env.set", f"must be a table of strings, not {_kind(values)}")
            for name, text in values.items():
                key = f"env.set.{name}"
                self.env_name(name, key)
                if not isinstance(text, str):
                    raise self.error(key, f"must be a string, not {_kind(text)}")
                if "\x00" in text:
                    raise self.error(key, "must not contain a NUL character")
                if keep is not None and name in keep:
                    raise self.error(
                        key, f"{name} is both kept and set", hint="remove it from one of them"
                    )
                assign.append((name, text))
        return Env(keep, tuple(assign))

    def env_name(self, name: str, key: str) -> None:
        if not _ENV_NAME.match(name):
            raise self.error(key, f"{name!r} is not a variable name")
        if is_loader_variable(name):
            raise self.error(
                key,
                f"{name} makes the dynamic loader or libc load chosen code; the sandbox "
                "never passes it",
                hint="remove it; a program that needs it can set it for its own children",
            )

    def limits(self, value: object) -> Limits:
        table = self.table(value, "limits", _LIMIT_KEYS)
        found: dict[str, Any] = {}
        for name in _LIMIT_KEYS:
            if name not in table:
                continue
            key = f"limits.{name}"
            item = table[name]
            least, most = _LIMIT_RANGE[name]
            if name in ("memory", "tmp", "shm"):
                found[name] = self.amount(item, key, _SIZE, _SIZE_UNITS, what="a size",
                                          example='"4G", "512M" or a number of bytes',
                                          least=least, most=most)
            elif name in ("cpu", "timeout"):
                found[name] = self.amount(item, key, _TIME, _TIME_UNITS, what="a time",
                                          example='"90s", "30m", "2h" or a number of seconds',
                                          least=least, most=most, fraction=name == "timeout")
            else:
                found[name] = self.amount(item, key, None, {}, what="a count",
                                          example="a whole number", least=least, most=most)
        for name in ("tmp", "shm"):
            if found.get(name):
                self.held_in_memory(table[name], f"limits.{name}", found[name],
                                    found.get("memory"))
        return Limits(**found)

    def held_in_memory(self, value: object, key: str, size: int, memory: int | None
                       ) -> None:
        """/tmp and /dev/shm are tmpfs, held in the run's memory: each at most half of
        it, as the defaults are, so that the run's processes keep the other half (and
        for a person whose memory limit does not hold, so that a /tmp filled in a loop
        does not take the machine's). The run's memory where the spec leaves it out is
        this machine's default (limits.py), so that bound alone looks at the machine."""
        from . import limits

        if memory is None:
            whose = "the run's memory by default here"
            memory = limits.defaults(limits.machine_memory()).memory
        elif memory == 0:
            whose = "this machine's memory, the run's being lifted"
            memory = limits.machine_memory()
        else:
            whose = "limits.memory"
        bound = memory // 2
        if bound and size > bound:
            raise self.error(key, f"{value!r} is above the most it may be: half of {whose} "
                             f"({limits.size_text(memory)}), {limits.size_text(bound)}",
                             hint=f"{key.rpartition('.')[2]} is held in the run's memory: "
                             "lower it, or raise limits.memory to twice it")

    def amount(self, value: object, key: str, pattern: re.Pattern[str] | None,
               units: dict[str, int], *, what: str, example: str, least: int, most: int,
               fraction: bool = False) -> Any:
        """A limit's value: a number, a string with a unit, or "none" (0: lifted); within
        what a program needs to start and what the kernel can hold (a value past it
        wraps, or is refused by the kernel after the launch was promised it). Each bound
        is the README's (Limits), and a refusal names it."""
        if value == "none":
            return 0  # a number 0 is below every least: "none" is the one way to lift
            # a limit, since 0 reads as "nothing at all" as well as "no limit"
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.error(key, f"must be {what}, not {_kind(value)}",
                             hint=f'write {example}, or "none" for no limit')
        if isinstance(value, str):
            match = pattern.match(value) if pattern else None
            if match is None:
                raise self.error(key, f"{value!r} is not {what}",
                                 hint=f'write {example}, or "none" for no limit')
            number = float(match.group(1)) * units[match.group(2).lower()]
        elif isinstance(value, float) and not pattern:
            raise self.error(key, f"must be {what}, not a fraction", hint=f"write {example}")
        else:
            number = float(value)
        if not math.isfinite(number):
            raise self.error(key, f"{value!r} is not {what}",
                             hint=f'write {example}, or "none" for no limit')
        if number < least:
            raise self.error(key, f"{value!r} is below the least that still lets a program "
                             f"start ({least})", hint='raise it, or write "none" for no limit')
        if number > most:
            raise self.error(key, f"{value!r} is above the most the kernel holds ({most})",
                             hint='lower it, or write "none" for no limit')
        return number if fraction else int(number)

    def spec(self, document: dict[str, Any]) -> Spec:
        self.table(document, "", _TOP_KEYS)
        agent = self.name(document["agent"], "agent") if "agent" in document else None
        session = self.name(document["session"], "session") if "session" in document else None
        return Spec(
            source=self.source,
            agent=agent,
            session=session,
            files=self.files(document.get("files", {})),
            commands=self.commands(document.get("commands", {})),
            network=self.network(document.get("network", {})),
            env=self.env(document.get("env", {})),
            limits=self.limits(document.get("limits", {})),
        )


def _kind(value: object) -> str:
    names = {
        bool: "a boolean", int: "a number", float: "a number", str: "a string",
        list: "a list", dict: "a table",
    }
    return names.get(type(value), type(value).__name__)


def _list_hint(key: str, value: object) -> str | None:
    """For one string where a list is wanted (`write = "."`): the list to write."""
    quoted = toml_string(value) if isinstance(value, str) else None
    if quoted is None:
        return None
    return f"write a list, even of one: {key.rpartition('.')[2]} = [{quoted}]"


def toml_string(text: str) -> str | None:
    """`text` as a TOML basic string, or None when TOML cannot hold it (a path whose bytes
    are not UTF-8: os.fsdecode keeps them as lone surrogates)."""
    if any("\udc80" <= char <= "\udcff" for char in text):
        return None
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char < " " or char == "\x7f":  # TOML: no control character but tab, escaped
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    return "".join(out) + '"'


def _duplicate_hint(first: str, second: str) -> str:
    sections = {first.split("[", 1)[0], second.split("[", 1)[0]}
    if sections in ({"files.read"}, {"files.write"}, {"files.hide"}):
        return "list each path once"
    if "files.hide" in sections:
        return "a path cannot be both hidden and granted; to reopen part of a hidden folder, " \
            "grant a folder inside it"
    return "a written path is also readable; keep it in files.write only"


_BOM = b"\xef\xbb\xbf"
_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_TOML_AT_END = "(at end of document)"


def parse_spec(data: bytes, source: str) -> Spec:
    """Validate a spec's bytes. Raises SpecError, and nothing else, for any input."""
    # A byte order mark, which Windows editors write and TOML does not allow: it says
    # nothing in UTF-8, so the spec is the text after it.
    skipped = len(_BOM) if data.startswith(_BOM) else 0
    try:
        text = data[skipped:].decode("utf-8")
    except UnicodeDecodeError as err:
        raise SpecError(
            f"not UTF-8 text (byte {err.start + skipped})", file=source,
            hint="save the spec as UTF-8") from None
    import tomllib  # loaded only for a spec file: the default is parsed already

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        message = str(err)
        position = _TOML_POSITION.search(message)
        line = int(position.group(1)) if position else None
        if line is None and _TOML_AT_END in message:
            # An unclosed array or string: the document's last line is where it ran out.
            line = max(1, len(text.splitlines()))
        reason = _TOML_POSITION.sub("", message).replace(_TOML_AT_END, "").strip()
        raise SpecError(f"not valid TOML: {reason}", file=source, line=line) from None
    except RecursionError:
        raise SpecError("not valid TOML: nested too deeply", file=source) from None
    except ValueError as err:
        # tomllib lets int()'s own refusal through: a number of more than 4300 digits.
        reason = str(err).split(";")[0]  # not Python's advice on raising the limit
        raise SpecError(f"not valid TOML: {reason}", file=source,
                        hint="write long numbers as strings") from None
    return _Validator(source, text).spec(document)


def parse_spec_data(document: object, source: str) -> Spec:
    """Validate a spec given as data (a harness's dict, as tomllib would give it) by the
    same validator as a file's, with the same errors; `source` names it in them
    ("<dict>"), and no line is given, there being no text."""
    if not isinstance(document, dict):
        raise SpecError(f"a spec must be a table (a dict), not {_kind(document)}",
                        file=source)
    return _Validator(source, "").spec(document)


# default_spec.toml as parsed: most runs use it, and tomllib costs them about 4 ms to
# load here. tests/unit/test_spec.py checks it is exactly what parsing the file gives.
DEFAULT_SPEC = Spec(
    source=DEFAULT_SPEC_NAME,
    files=Files(write=(PathGrant(".", False, "files.write[0]", 6),)),
    network=Network("none"),
)


def load_spec(path: str | None) -> Spec:
    """The spec at `path`, or the embedded default when None."""
    if path is None:
        return DEFAULT_SPEC
    if not path:
        raise SpecError("--spec names no file", file="<command line>",
                        hint="give the spec's path, as in --spec spec.toml")
    return parse_spec(_read_spec(path), path)


def key_line(source: str, key: str) -> int | None:
    """The line of `key` in the spec file `source`, found as an error's is (best effort:
    None for the default spec, a dict, or a file gone or changed since)."""
    if source.startswith("<"):
        return None
    try:
        text = _read_spec(source).decode("utf-8", "replace")
    except (SpecError, OSError):
        return None
    return _Locator(text).line(key)


def _read_spec(path: str) -> bytes:
    """The bytes of the spec file at `path`: a regular file, opened without blocking (a
    FIFO's open waits for a writer for ever, a device's read may never end), at most
    1 MiB of it."""
    import stat

    def not_regular(mode: int) -> SpecError:
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "of another kind")
        return SpecError(f"cannot read the spec: it is not a regular file ({kind})",
                         file=path, hint="give the path of a spec file (TOML); to pass a "
                         "spec made on the fly, write it to a file first")

    try:
        # Looked at before it is opened: opening a device can act (a tape rewinds).
        if not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise not_regular(mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as err:
        hint = ("give the path of a spec that exists" if err.errno == errno.ENOENT else
                "make it readable by this user, or copy it where it is" if err.errno in (
                    errno.EACCES, errno.EPERM) else None)
        raise SpecError(f"cannot read the spec: {err.strerror}", file=path,
                        hint=hint) from None
    try:
        if not stat.S_ISREG(mode := os.fstat(fd).st_mode):
            raise not_regular(mode)  # replaced since it was looked at
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = (1 << 20) + 1
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise SpecError(f"cannot read the spec: {err.strerror}", file=path) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > 1 << 20:
        raise SpecError("a spec is limited to 1 MiB", file=path)
    return data
