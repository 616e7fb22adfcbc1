"""The proxy's gate for one run, built the same way on both OSes: the spec's allow and
deny lists (parsed once, when the spec was read), the resolver, the run's events and
the harness's decider when it gave one (--decide-fd). Linux's network run and macOS's
loopback proxy differ in where they listen, never in what they let through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..events import EventLog
    from ..grants import Snapshot
    from ..netpolicy import Decide
    from .decider import Decider
    from .own import OwnChecks
    from .upstream import Gate, Here


def open_decider(decide: Decide, snapshot: Snapshot) -> Decider:
    """The run's decider on `decide.fd`: told the lists it stands beside, and saying
    once when it is gone that what it would have decided is refused from then on."""
    from ..events import say
    from .decider import Decider

    def gone(why: str) -> None:
        say(f"{why}: destinations outside [network] allow are refused from now on")

    return Decider(decide.fd, timeout=decide.timeout, allow=snapshot.network.texts("allow"),
                   deny=snapshot.network.texts("deny"), on_gone=gone)


def open_gate(snapshot: Snapshot, events: EventLog | None, decide: Decide | None, *,
              own: OwnChecks | None = None, here: Here | None = None) -> Gate:
    """The gate every proxied connection and lookup of the run goes through. `own`: how
    this OS asks whether an address is this host's own (Linux asks the kernel's routes;
    by default, whether a socket can be bound to it); `here`: how it asks, once
    connected, whether the connection ends at a socket of this host (Linux's sock_diag;
    none elsewhere)."""
    from .own import bound_here_checks
    from .resolver import Resolver
    from .rules import NetworkLists
    from .upstream import Gate

    decider = open_decider(decide, snapshot) if decide is not None else None
    lists = NetworkLists(snapshot.network.allow, snapshot.network.deny)
    return Gate(lists, Resolver.from_environment(), events, decider,
                own=own or bound_here_checks, here=here)
