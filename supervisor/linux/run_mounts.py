"""What one run mounts besides its spec's view: an input of the plan, never an edit of it.

A run makes some files before its plan is built, and the plan binds them: proxy mode's
resolv.conf naming the helper (network.py), the relays of the sockets `[network] unix`
names when run by root (socket_relay.py), git's identity and trace (gitrun.py); a
harness places the command (placement.py: its working directory, a session's /tmp).
All of it is known before the plan is built, and `build_plan` takes it as `RunMounts`,
so that the plan is made once, from every input, and each of these mounts is judged as
every other is: a named socket inside a folder the sandbox writes gets the anchors any
mount there gets (plan.py). Pinning then turns its paths into descriptors, and that is
all that happens to a plan after it is built.

The mounts come after every grant and hide of the view, so that none covers them (a
socket in a hidden folder such as $XDG_RUNTIME_DIR or ~/.ssh stays reachable), and
before the closing remounts, which need the root writable for bwrap to make their mount
points.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

from ..errors import LaunchError
from ..grants import deepest
from ..view import View
from .layout import RESOLV_CONF, HostLayout
from .ops import MountOp

# Where a plan printed or checked without a run (`lnk sandbox plan`, preflight) says the
# proxy's resolv.conf comes from: each run makes a folder of its own for it.
PLAN_SOURCE = "<the run's private folder>/resolv.conf"
RESOLV_REASON = "proxy mode: names are asked of the helper on 127.0.0.1"
NO_RESOLV_CONF_NOTE = ("no /etc/resolv.conf on this host: the resolver's default, "
                       "127.0.0.1, is the helper")


class RunMounts(NamedTuple):
    """What one run adds to its spec's plan, all known before the plan is built (so
    that nothing edits the plan after: pinning turns its paths into descriptors, and
    that is all). `resolv_conf`: the file the proxy's resolv.conf is bound from (proxy
    mode), the run's own; a plan without a run names a stand-in. `relays`: run by root,
    the relay bound in place of each named socket. `git`: git's files of the run
    (gitrun.py). `cwd` and `tmp`: where a harness places the command (placement.py)."""

    resolv_conf: str | None = None
    relays: Mapping[str, str] = MappingProxyType({})
    git: tuple[MountOp, ...] = ()
    cwd: str | None = None
    tmp: str | None = None


NO_RUN = RunMounts()  # a plan printed or checked: no run's own files


def run_mounts(view: View, layout: HostLayout, run: RunMounts, *,
               root_mode: bool) -> tuple[MountOp, ...]:
    """The run's own mounts, in order: proxy mode's resolv.conf, each named socket, git's
    files."""
    return (*_resolv_conf(view, layout, run), *_named_sockets(view, layout, run,
                                                              root_mode=root_mode), *run.git)


def run_notes(view: View, layout: HostLayout) -> tuple[str, ...]:
    """What the run's own mounts could not do, said with the plan's notes."""
    if view.snapshot.settings.network_mode == "proxy" and layout.resolv_conf.dest is None:
        # glibc asks 127.0.0.1 when there is no resolv.conf at all: the helper answers.
        return (NO_RESOLV_CONF_NOTE,)
    return ()


def _resolv_conf(view: View, layout: HostLayout, run: RunMounts) -> tuple[MountOp, ...]:
    """Proxy mode: the run's resolv.conf bound read-only where /etc/resolv.conf leads
    (bwrap cannot mount over a link: it would make the file where the link points)."""
    host = layout.resolv_conf
    if view.snapshot.settings.network_mode != "proxy" or host.dest is None:
        return ()
    reason = RESOLV_REASON
    if host.dest != RESOLV_CONF:
        reason += f" ({RESOLV_CONF} leads here)"
    return (MountOp("ro-bind", host.dest, run.resolv_conf or PLAN_SOURCE, reason),)


def refuse_missing_resolv_conf(view: View, layout: HostLayout,
                               ops: Iterable[MountOp]) -> None:
    """Proxy mode: a resolv.conf that leads to nothing, inside a bind of `ops` (the
    mounts before the run's own), refuses the launch: bwrap would make the file on the
    host, in a folder the sandbox may only read."""
    host = layout.resolv_conf
    if view.snapshot.settings.network_mode != "proxy" or host.dest is None or host.exists:
        return
    holder = deepest(host.dest, ((op.dest, op) for op in ops
                                 if op.kind in ("ro-bind", "bind")))
    if holder is not None:
        raise LaunchError(
            f"{RESOLV_CONF} leads to {host.dest}, which does not exist, in {holder.dest} "
            f"({holder.reason}), where the sandbox's resolv.conf cannot be put",
            hint=f"make {host.dest} exist (an empty file will do), or use network mode "
            '"none" or "host"')


def _named_sockets(view: View, layout: HostLayout, run: RunMounts, *,
                   root_mode: bool) -> tuple[MountOp, ...]:
    """Each socket `[network] unix` names bound read-only at its own path (a socket
    needs no write right of its mount to be connected to); an optional one missing now
    left out, as an optional grant is. `run.relays`: run by root, the socket bound in
    place of each named one (socket_relay.py), the sandbox's own (idmapped), so that it
    connects as root's socket would not let it; run by root a named socket is the
    sandbox's own all the same: the person named it."""
    relays = run.relays
    return tuple(MountOp("ro-bind", s.target, relays.get(s.target, s.target),
                         f"{s.key}: {s.name}", idmapped=root_mode or s.target in relays)
                 for s in view.snapshot.network.sockets()
                 if s.target is not None and s.target not in layout.missing_sockets)
