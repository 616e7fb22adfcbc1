"""`[network]` beyond its mode and allow list, as plain data: deny, ports, unix sockets.

- `deny`: names and addresses refused in proxy mode even when allow matches (texts,
  validated by `hostnames.parse_host_pattern(deny=True)` when the spec was read).
- `forward`: ports of the host's loopback reachable at the same port of the sandbox's
  own loopback (none and proxy modes). Empty: none.
- `expose`: ports the sandbox listens on, reachable at the same port of the host's
  loopback (none and proxy modes). Empty: none.
- `unix`: path sockets the sandbox may connect to, each made reachable at its path
  (resolved once, into the snapshot, like a file grant). Absent or empty: none. A path
  socket found under a grant at launch is hidden unless named here or as a grant of its
  own (linux/sockets.py); one made there after the launch is closed only where the
  kernel has RESOLVE_UNIX (`check` says where).

Nothing here looks at the machine but `resolve_unix`, called when the snapshot is made.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import SpecError

if TYPE_CHECKING:
    from .hostnames import HostPattern

SSH_AUTH_SOCK = "SSH_AUTH_SOCK"
# Landlock's right over connecting to path sockets (LANDLOCK_ACCESS_FS_RESOLVE_UNIX) came
# with ABI 9, Linux 7.1, and closes every socket made outside the sandbox but the named
# ones there (confine.py): below it nothing of the kernel's closes a path socket the
# mounts show, short of refusing every unix socket (sandbox-runtime's seccomp), which
# would close the named ones too; the plan hides the ones found at launch instead.
UNIX_SOCKETS_ABI = 9
DEFAULT_DECIDE_TIMEOUT = 30.0


def unix_sockets_gap(abi: int) -> str:
    """What `[network] unix` leaves open on a kernel below UNIX_SOCKETS_ABI."""
    return (f"[network] unix: the named sockets are reachable, and the other path sockets "
            f"in the granted folders are hidden, but one made there after the launch would "
            f"be reachable too: closing it needs Landlock ABI {UNIX_SOCKETS_ABI} (Linux 7.1, "
            f"RESOLVE_UNIX), and this kernel has {f'ABI {abi}' if abi else 'no Landlock'}")


class Decide(NamedTuple):
    """`--decide-fd` and `--decide-timeout`: the run's decider (proxy/decider.py)."""

    fd: int
    timeout: float = DEFAULT_DECIDE_TIMEOUT


LOOPBACK = "localhost,127.0.0.1,::1"


def proxy_environment(http_port: int, socks_port: int) -> dict[str, str]:
    """The variables that send the sandbox's clients to the proxy's listeners.

    socks5h: names go to the proxy unresolved. NO_PROXY keeps loopback off the proxy
    (on Linux the sandbox's own, whose servers are the program's own; forwarded ports on
    either OS). Upper and lower case both, since clients differ (curl reads only the
    lower-case http_proxy). NODE_USE_ENV_PROXY=1 makes Node's own fetch and http obey
    them (Node 24 and newer), which it otherwise does not.
    """
    values = {
        "HTTP_PROXY": f"http://127.0.0.1:{http_port}",
        "HTTPS_PROXY": f"http://127.0.0.1:{http_port}",
        "ALL_PROXY": f"socks5h://127.0.0.1:{socks_port}",
        "NO_PROXY": LOOPBACK,
    }
    return {**values, **{name.lower(): value for name, value in values.items()},
            "NODE_USE_ENV_PROXY": "1"}


def needs_helper(mode: str, rules: NetworkRules) -> bool:
    """Whether a run needs the network helper (Linux): proxy mode, or ports."""
    return mode == "proxy" or bool(rules.forward or rules.expose)


class UnixSocket(NamedTuple):
    """One `[network] unix` entry: `name` as written (`$SSH_AUTH_SOCK`, `~/x.sock`,
    `/run/docker.sock`); `target` the socket it resolved to (None before resolving, or
    an optional one that is missing); `variable` the environment variable the sandbox
    gets set to `target` (`$NAME` entries, and SSH_AUTH_SOCK when its socket is named)."""

    name: str
    optional: bool
    key: str
    line: int | None
    target: str | None = None
    variable: str | None = None


class NetworkRules(NamedTuple):
    """`[network]` but its mode, parsed once, when the spec is read (`allow` and `deny`
    as patterns: every consumer, the proxy of either OS, the decider's greeting and
    describe, takes these, never the texts again); see the module docstring for what
    each means."""

    allow: tuple[HostPattern, ...] = ()
    deny: tuple[HostPattern, ...] = ()
    forward: tuple[int, ...] = ()
    expose: tuple[int, ...] = ()
    unix: tuple[UnixSocket, ...] | None = None

    def plain(self) -> dict[str, Any]:
        """As a saved snapshot keeps it: patterns as the texts they were read from, and
        `allow` apart (Snapshot.plain puts it among the run settings, where saved
        snapshots and remembered permissions' digests have always had it)."""
        return {"deny": [p.text for p in self.deny], "forward": list(self.forward),
                "expose": list(self.expose),
                "unix": None if self.unix is None else [u._asdict() for u in self.unix]}

    @staticmethod
    def from_plain(data: dict[str, Any] | None, allow: list[str] | tuple[str, ...] = ()
                   ) -> NetworkRules:
        """From a saved snapshot's JSON (absent in snapshots saved before these keys),
        its patterns parsed again from their texts (validated when the spec was read;
        hostnames is loaded only where there is one, as a default run has none)."""
        data = data or {}
        unix = data.get("unix")
        deny = tuple(data.get("deny", ()))
        parsed_allow: tuple[HostPattern, ...] = ()
        parsed_deny: tuple[HostPattern, ...] = ()
        if allow or deny:
            from .hostnames import parse_host_pattern

            parsed_allow = tuple(parse_host_pattern(text) for text in allow)
            parsed_deny = tuple(parse_host_pattern(text, deny=True) for text in deny)
        return NetworkRules(
            allow=parsed_allow,
            deny=parsed_deny,
            forward=tuple(int(p) for p in data.get("forward", ())),
            expose=tuple(int(p) for p in data.get("expose", ())),
            unix=None if unix is None else tuple(UnixSocket(**item) for item in unix),
        )

    def texts(self, which: str) -> tuple[str, ...]:
        """`allow` or `deny` as written, for what is shown (describe, check, the
        decider's greeting)."""
        return tuple(p.text for p in (self.allow if which == "allow" else self.deny))

    def sockets(self) -> tuple[UnixSocket, ...]:
        """The named sockets that exist (resolved)."""
        return tuple(s for s in self.unix or () if s.target is not None)

    def environment(self) -> dict[str, str]:
        """The variables the sandbox keeps for its named sockets."""
        return {s.variable: s.target for s in self.sockets() if s.variable is not None
                and s.target is not None}


def expand_socket_name(name: str, home: str, environ: dict[str, str] | os._Environ[str]
                       ) -> tuple[str | None, str | None]:
    """(the path, the variable it came from) for an entry; path None when its variable
    is unset or empty."""
    if name.startswith("$"):
        variable, slash, rest = name[1:].partition("/")
        value = environ.get(variable, "")
        if not value:
            return None, variable
        return os.path.normpath(value + (slash + rest if slash else "")), \
            variable if not slash else None
    if name == "~" or name.startswith("~/"):
        return os.path.normpath(home + name[1:]), None
    return os.path.normpath(name), None


def resolve_unix(rules: NetworkRules, *, home: str, lnk_home: str, source: str,
                 environ: dict[str, str] | os._Environ[str] | None = None) -> NetworkRules:
    """`rules` with every unix socket resolved: SpecError for one that is missing (and
    not optional), is not a socket, or is inside `$LNK_HOME`."""
    if rules.unix is None:
        return rules
    environ = os.environ if environ is None else environ
    agent = environ.get(SSH_AUTH_SOCK, "")
    agent_target = os.path.realpath(agent) if agent.startswith("/") else None
    resolved = []
    for entry in rules.unix:
        path, variable = expand_socket_name(entry.name, home, environ)

        def error(message: str, hint: str | None = None, entry: UnixSocket = entry
                  ) -> SpecError:
            return SpecError(f"{entry.name!r}: {message}", file=source, key=entry.key,
                             line=entry.line, hint=hint)

        if path is None:
            if entry.optional:
                resolved.append(entry)
                continue
            raise error(f"${variable} is not set", hint="set it, or write the entry as "
                        '{ path = "...", optional = true }')
        if not path.startswith("/"):
            raise error(f"{path!r} is not an absolute path")
        try:
            target = os.path.realpath(path, strict=True)
            mode = os.stat(target).st_mode
        except OSError as err:
            if entry.optional:
                resolved.append(entry)
                continue
            raise error(f"{path} cannot be reached: {err.strerror}",
                        hint='start what listens there, or write the entry as { path = '
                        '"...", optional = true }') from None
        if not stat.S_ISSOCK(mode):
            raise error(f"{target} is not a socket", hint="[network] unix names path "
                        "sockets; grant other files in [files]")
        real_home = os.path.realpath(lnk_home)
        if any(target == h or target.startswith(h + "/") for h in (lnk_home, real_home)):
            raise error(f"{target} is inside lnk-sandbox's settings ($LNK_HOME), which "
                        "every sandbox is denied")
        if variable is None and target == agent_target:
            variable = SSH_AUTH_SOCK
        resolved.append(entry._replace(target=target, variable=variable))
    return rules._replace(unix=tuple(resolved))
