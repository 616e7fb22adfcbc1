"""The facts of this machine the Linux plan needs, gathered once before it is built.

`build_plan` (plan.py) is pure: what it needs of the host (which system folders are
there and which are links, /proc's global files, the path sockets and secrets found
under the grants, what of home and of a cache is there, where /etc/resolv.conf leads)
is read here, by `HostLayout.probe`, once per launch.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ..grants import Snapshot, expand_name, is_within
from ..policy import LINUX_SYSTEM_FOLDERS, LNK_HOME_NAME
from ..secret_names import Found
from .home import HomeLayout
from .home import probe as home_probe
from .procfs import ProcEntry, is_global, read_only
from .sockets import FoundSockets

SYSTEM_FOLDERS = LINUX_SYSTEM_FOLDERS
RESOLV_CONF = "/etc/resolv.conf"


class ResolvConfHost(NamedTuple):
    """Where this host's /etc/resolv.conf leads: `dest` the file a mount must cover (the
    link's end when it is a link), None when there is none; `exists` whether it is there."""

    dest: str | None
    exists: bool

    @staticmethod
    def probe(path: str = RESOLV_CONF) -> ResolvConfHost:
        if not os.path.lexists(path):
            return ResolvConfHost(None, False)
        real = os.path.realpath(path)
        return ResolvConfHost(real, os.path.exists(real))


NO_RESOLV_CONF = ResolvConfHost(None, False)


class HostLayout(NamedTuple):
    """The facts of this machine the plan needs, gathered by `HostLayout.probe()`.

    `system` maps each existing system folder to None (a folder) or its link text.
    `cache_missing` maps each private cache's path that is missing on the host to its
    first missing component. What is at the top of each written folder is the view's
    (view.py), not the layout's. `lnk_home` is `$LNK_HOME` resolved
    when it exists now but did not when the snapshot was made (a first start makes it,
    for its check cache and placeholders, after resolving): hidden all the same.
    `sockets`: the path sockets under the grants (sockets.py), each hidden unless named;
    `secrets`: what the name rule found in home (secret_names.py), hidden unless named.
    `gone`: the hidden paths the snapshot resolved that are missing now: left out, since
    a tmpfs or an empty file over a missing path would make bwrap create it, in a folder
    the sandbox may only read (a grant that vanished is refused when pinned instead).
    `home`: home's entries and the reopened places found now, where a read grant shows
    home (linux/home.py).
    `compiled_inner`: the inner is the compiled one (inner_program.py), which needs
    neither the interpreter nor the C library inside.
    `resolv_conf`: where /etc/resolv.conf leads (proxy mode mounts its own there);
    `missing_sockets`: the optional sockets `[network] unix` names that are gone now,
    left out as a missing optional grant is (one not optional refuses the launch when
    its source is pinned).
    """

    system: dict[str, str | None]
    inner_source: str
    interpreter: str
    interpreter_prefix: str
    lnk_home: str | None = None
    proc_read_only: tuple[str, ...] = ()
    root_sockets: tuple[str, ...] = ()
    sockets: FoundSockets = FoundSockets()
    secrets: tuple[Found, ...] = ()
    cache_missing: Mapping[str, str] = MappingProxyType({})
    gone: frozenset[str] = frozenset()
    unhidden: tuple[str, ...] = ()
    home: HomeLayout | None = None
    compiled_inner: bool = False
    resolv_conf: ResolvConfHost = NO_RESOLV_CONF
    missing_sockets: frozenset[str] = frozenset()

    @staticmethod
    def probe(inner_source: str, interpreter: str, interpreter_prefix: str,
              snapshot: Snapshot | None = None, *, root_mode: bool = False,
              compiled_inner: bool = False) -> HostLayout:
        """`root_mode`: also list the path sockets root's daemons listen on, which no
        write grant of a root-run sandbox may hold."""
        machine = HostLayout(_system(), inner_source, interpreter, interpreter_prefix,
                             proc_read_only=read_only(_proc_listing()),
                             root_sockets=_root_sockets() if root_mode else (),
                             compiled_inner=compiled_inner)
        if snapshot is None:
            return machine
        lnk_home = _new_lnk_home(snapshot)
        return machine._replace(
            lnk_home=lnk_home,
            sockets=_sockets(snapshot, lnk_home),
            secrets=_secrets(snapshot, lnk_home),
            cache_missing=_first_missing(snapshot),
            gone=frozenset(g.target for g in snapshot.grants if g.access == "hide"
                           and g.target and not os.path.lexists(g.target)),
            unhidden=_unhidden(snapshot),
            home=home_probe(snapshot),
            resolv_conf=ResolvConfHost.probe() if snapshot.settings.network_mode == "proxy"
            else NO_RESOLV_CONF,
            missing_sockets=frozenset(s.target for s in snapshot.network.sockets()
                                      if s.optional and s.target
                                      and not os.path.lexists(s.target)))


def _system() -> dict[str, str | None]:
    """Each system folder there: None for a folder, its text for a link."""
    system: dict[str, str | None] = {}
    for folder in SYSTEM_FOLDERS:
        try:
            mode = os.lstat(folder).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            system[folder] = os.readlink(folder)
        elif stat.S_ISDIR(mode):
            system[folder] = None
    return system


def _new_lnk_home(snapshot: Snapshot) -> str | None:
    """`$LNK_HOME` resolved, when it is there now but was not when the snapshot was made."""
    for grant in snapshot.grants:
        if grant.name == LNK_HOME_NAME and grant.target is None \
                and os.path.isdir(snapshot.lnk_home):
            return os.path.realpath(snapshot.lnk_home)
    return None


def _unhidden(snapshot: Snapshot) -> tuple[str, ...]:
    """Where each hidden place missing now would be (its folder resolved): nothing is
    mounted there, so one made while the run lasts (`aws configure`) would be read
    through the grant holding it, but for Landlock (confine.closed_folders)."""
    found = []
    for grant in snapshot.grants:
        if grant.access != "hide" or (grant.target and os.path.lexists(grant.target)):
            continue
        path = grant.target or expand_name(grant.name, snapshot.home, snapshot.cwd,
                                           snapshot.lnk_home)
        folder, name = os.path.split(os.path.normpath(path))
        found.append(os.path.join(os.path.realpath(folder), name))
    return tuple(sorted(set(found)))


def _first_missing(snapshot: Snapshot) -> dict[str, str]:
    """For each private cache whose path is missing on the host, its first missing
    component: where a read grant holding it needs a folder to mount on."""
    found = {}
    for cache in snapshot.caches:
        walked = "/"
        for part in cache.path.strip("/").split("/"):
            walked = os.path.join(walked, part)
            if not os.path.lexists(walked):
                found[cache.path] = walked
                break
    return found


def _secrets(snapshot: Snapshot, lnk_home: str | None) -> tuple[Found, ...]:
    """What the name rule finds in home, looked for only when a grant shows a place it
    looks in (home itself, or the XDG folders of tools' files)."""
    from ..secret_names import XDG_PLACES, find

    home = os.path.realpath(snapshot.home)
    places = [home, *(os.path.join(home, p[2:]) for p in XDG_PLACES)]
    if not any(is_within(place, g.target) or (place != home and is_within(g.target, place))
               for g in snapshot.visible() if g.target for place in places):
        return ()
    hidden = [g.target for g in snapshot.grants if g.access == "hide" and g.target]
    return find(home, (*hidden, *([lnk_home] if lnk_home else [])))


def _sockets(snapshot: Snapshot, lnk_home: str | None) -> FoundSockets:
    """The path sockets under the snapshot's granted folders, but in hidden ones."""
    from .sockets import find

    hidden = [g.target for g in snapshot.grants if g.access == "hide" and g.target]
    return find((g.target for g in snapshot.visible() if g.is_dir and g.target),
                [*hidden, *([lnk_home] if lnk_home else [])])


def _root_sockets() -> tuple[str, ...]:
    """Path sockets processes of this network listen on that root owns.

    Run by root, a write grant is mapped so that root's files there are the sandbox's:
    a root daemon's socket there would be one the sandbox may connect to as its owner,
    and a daemon that trusts the socket's mode alone (Docker's) would do what it asks.
    /proc/net/unix lists the sockets bound in the reader's network namespace.
    """
    found = []
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return ()
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue
        path = os.path.normpath(fields[7])
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISSOCK(info.st_mode) and info.st_uid == 0:
            found.append(path)
    return tuple(sorted(set(found)))


def _proc_listing() -> list[ProcEntry]:
    """The top level of the host's /proc: its global entries are the same in a fresh one."""
    listing = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not is_global(name):
            continue
        try:
            listing.append(ProcEntry(name, os.lstat(f"/proc/{name}").st_mode))
        except OSError:
            continue
    return listing
