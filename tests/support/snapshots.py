"""Snapshots made by hand for the tests of stages after resolving: every field has the
value most tests want, so a test names only what it is about."""

from __future__ import annotations

from typing import Any

from supervisor.grants import SNAPSHOT_VERSION, Grant, Program, Snapshot
from supervisor.policy import RunSettings


def a_snapshot(*grants: Grant, home: str = "/h", cwd: str = "/h/p",
               lnk_home: str | None = None, uid: int = 1000, source: str = "s.toml",
               programs: tuple[Program, ...] | None = None, network_mode: str = "none",
               allow: tuple[str, ...] = (), keep: tuple[str, ...] = ("PATH",),
               assign: tuple[tuple[str, str], ...] = (), agent: str | None = None,
               session: str | None = None, **rest: Any) -> Snapshot:
    """A snapshot of `grants`; `rest`: network, caches, limits. `allow`: texts, parsed
    into the network record's patterns (with `rest`'s network, when given)."""
    if allow:
        from supervisor.hostnames import parse_host_pattern
        from supervisor.netpolicy import NetworkRules

        network = rest.pop("network", NetworkRules())
        rest["network"] = network._replace(allow=tuple(parse_host_pattern(t) for t in allow))
    return Snapshot(SNAPSHOT_VERSION, source, home, cwd,
                    lnk_home if lnk_home is not None else home + "/.lnk", uid, grants, programs,
                    RunSettings(network_mode, keep, assign, agent, session), **rest)
