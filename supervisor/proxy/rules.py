"""The allow list of proxy mode, decided on the name as the program asked for it.

Plain data and pure functions: nothing here looks a name up. An address literal is
allowed only when the list names that address; a name only by a name pattern, so
`localhost` does not open 127.0.0.1, nor 127.0.0.1 `localhost`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hostnames import HostPattern, normalize_host, parse_host_pattern


@dataclass(frozen=True)
class Decision:
    """The outcome for one destination: `pattern` is the allow entry that matched."""

    host: str
    port: int | None
    pattern: HostPattern | None

    @property
    def allowed(self) -> bool:
        return self.pattern is not None

    @property
    def subject(self) -> str:
        """What was asked, as events name it: `host:port`, or the name alone (DNS)."""
        if self.port is None:
            return self.host
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class Allowlist:
    """`[network] allow`, validated. Empty: every destination is refused."""

    patterns: tuple[HostPattern, ...] = ()

    @staticmethod
    def from_texts(texts: tuple[str, ...] | list[str]) -> Allowlist:
        """From the snapshot's texts (validated when the spec was read)."""
        return Allowlist(tuple(parse_host_pattern(text) for text in texts))

    def decide(self, host: str, port: int) -> Decision:
        """Whether the program may reach `host` on `port`."""
        name = normalize_host(host)
        for pattern in self.patterns:
            if pattern.matches(name, port):
                return Decision(name, port, pattern)
        return Decision(name, port, None)

    def decide_name(self, host: str) -> Decision:
        """Whether a DNS question for `host` is answered: allowed on some port.

        An address pattern answers no name; a name's port is unknown to DNS, so a name
        allowed only on one port is still answered (the proxy holds the port).
        """
        name = normalize_host(host)
        for pattern in self.patterns:
            if pattern.address is None and pattern.matches(name, pattern.port or 0):
                return Decision(name, None, pattern)
        return Decision(name, None, None)
