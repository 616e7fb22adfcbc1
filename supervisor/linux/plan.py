"""The Linux launch plan: the snapshot compiled to an ordered list of mount operations.

Built first as data, emitted as bwrap arguments after (`bwrap.py`), so `plan` can print
it and tests can compare it exactly. bwrap performs operations in command-line order, and
a mount hides whatever an earlier mount put beneath it, so the order is the policy:

1. the root: `/` when granted, then system folders (read-only, missing ones left out,
   a top-level link such as Debian's `/bin -> usr/bin` made the same link inside),
   a fresh /proc, a minimal /dev with a writable /dev/shm of the sandbox's own, a fresh
   /tmp unless /tmp itself is granted;
2. grants and hides, outer to inner (by depth): the folders holding a hidden one are
   mounted before it is hidden (tmpfs, or an empty file), the grants inside it after;
   read-only protections (the installation, dot files) after the write grant holding
   them. A dot file below the top of its write grant (a hooks folder, an included
   settings file) has each folder between the two bound onto itself first: a mount
   point cannot be renamed (EBUSY), so the folder holding it cannot be moved away and
   made again, and stays writable otherwise;
3. the inner confiner's package and, for the Python inner when it is outside the system
   folders, its interpreter (the compiled inner is static: it needs nothing else);
4. hidden folders' tmpfs and the root made read-only, last, since bwrap needs them
   writable to make the mount points of everything inside.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from ..dotfiles import Protected
from ..errors import LaunchError
from ..grants import Grant, Snapshot, deepest, depth, expand_name, is_within
from ..home_config import REOPENED_REASON
from ..policy import LINUX_SYSTEM_FOLDERS, LNK_HOME_NAME
from ..secret_names import Found
from ..view import View
from .home import HOME_FOLDER, SHOWN, HomeLayout, entries_shown, reopened, shown_home
from .home import probe as home_probe
from .placeholders import Kind, Wanted
from .procfs import ProcEntry, is_global, read_only
from .sockets import FoundSockets

OpKind = Literal["ro-bind", "bind", "tmpfs", "symlink", "dev", "proc", "hide-file", "remount-ro"]

SYSTEM_FOLDERS = LINUX_SYSTEM_FOLDERS

# Where the inner confiner's package is mounted inside, read-only; its parent goes on the
# interpreter's sys.path (`-I -S` shows neither site-packages nor the working directory).
INNER_MOUNT = "/run/lnk-sandbox/inner"
INNER_PARENT = "/run/lnk-sandbox"
# With '/' granted the root is the host's, read-only, where bwrap can make no mount
# point: the package goes in the sandbox's own fresh /dev instead.
INNER_PARENT_UNDER_ROOT = "/dev/.lnk-sandbox"

# Mounts of the sandbox's own, made fresh inside whatever the host has at that path.
FRESH_MOUNTS = ("/tmp", "/dev/shm")


class MountOp(NamedTuple):
    """One bwrap operation. `source` is the host path pinned at launch (binds), or the
    link's text (symlink); `reason` says which rule asked for it. `idmapped`: run by
    root, a bind the sandbox sees as its own (idmapped.py): root's files there are the
    sandbox's, what it makes there is root's. `size` and `mode`: a tmpfs's size in
    bytes and its permissions (None: the kernel's default, and bwrap's 0755)."""

    kind: OpKind
    dest: str
    source: str | None = None
    reason: str = ""
    idmapped: bool = False
    size: int = 0  # a tmpfs's size in bytes (the run's limits); 0: the kernel's default
    mode: int | None = None


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

    @staticmethod
    def probe(inner_source: str, interpreter: str, interpreter_prefix: str,
              snapshot: Snapshot | None = None, *, root_mode: bool = False,
              compiled_inner: bool = False) -> HostLayout:
        """`root_mode`: also list the path sockets root's daemons listen on, which no
        write grant of a root-run sandbox may hold."""
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
        lnk_home = None
        for grant in snapshot.grants if snapshot is not None else ():
            assert snapshot is not None
            if grant.name == LNK_HOME_NAME and grant.target is None \
                    and os.path.isdir(snapshot.lnk_home):
                lnk_home = os.path.realpath(snapshot.lnk_home)
        return HostLayout(system, inner_source, interpreter, interpreter_prefix, lnk_home,
                          read_only(_proc_listing()),
                          _root_sockets() if root_mode else (),
                          _sockets(snapshot, lnk_home) if snapshot is not None
                          else FoundSockets(),
                          _secrets(snapshot, lnk_home) if snapshot is not None else (),
                          cache_missing=_first_missing(snapshot),
                          gone=frozenset(
                              g.target for g in (snapshot.grants if snapshot else ())
                              if g.access == "hide" and g.target
                              and not os.path.lexists(g.target)),
                          unhidden=_unhidden(snapshot),
                          home=home_probe(snapshot) if snapshot is not None else None,
                          compiled_inner=compiled_inner)


def _unhidden(snapshot: Snapshot | None) -> tuple[str, ...]:
    """Where each hidden place missing now would be (its folder resolved): nothing is
    mounted there, so one made while the run lasts (`aws configure`) would be read
    through the grant holding it, but for Landlock (confine.closed_folders)."""
    if snapshot is None:
        return ()
    found = []
    for grant in snapshot.grants:
        if grant.access != "hide" or (grant.target and os.path.lexists(grant.target)):
            continue
        path = grant.target or expand_name(grant.name, snapshot.home, snapshot.cwd,
                                           snapshot.lnk_home)
        folder, name = os.path.split(os.path.normpath(path))
        found.append(os.path.join(os.path.realpath(folder), name))
    return tuple(sorted(set(found)))


def _first_missing(snapshot: Snapshot | None) -> dict[str, str]:
    """For each private cache whose path is missing on the host, its first missing
    component: where a read grant holding it needs a folder to mount on."""
    found = {}
    for cache in snapshot.caches if snapshot is not None else ():
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


class LaunchPlan(NamedTuple):
    """What `bwrap.py` turns into arguments: mounts in order, and the rest of the setup."""

    ops: tuple[MountOp, ...]
    chdir: str
    root_mode: bool
    share_net: bool
    interpreter: str
    notes: tuple[str, ...] = ()
    holds: tuple[Wanted, ...] = ()
    inner_parent: str = INNER_PARENT
    unhidden: tuple[str, ...] = ()  # hidden places missing at launch (HostLayout)
    compiled_inner: bool = False  # bwrap runs the compiled inner, not `interpreter`


def _deepest(path: str, mounts: list[tuple[str, str]]) -> str | None:
    """The access of the deepest mount holding `path` (of two at one path, the later
    one: it covers the first), or None when none does."""
    return deepest(path, mounts)


def host_access(plan: LaunchPlan, path: str) -> str | None:
    """How the sandbox sees a host path: "read", "write", or None (hidden or absent).

    The deepest mount holding the path decides, as in the kernel's mount tree; a mount
    of something else at a path (the inner's package, a fresh /tmp, a hide) shows none
    of the host's files there; home as a folder of its own (linux/home.py) is read
    itself, and shows what is bound in it.
    """
    mounts: list[tuple[str, str]] = []
    for op in plan.ops:
        if op.kind in ("ro-bind", "bind"):
            seen = op.source == op.dest
            mounts.append((op.dest, ("read" if op.kind == "ro-bind" else "write")
                           if seen else "other"))
        elif op.kind == "tmpfs" and op.reason == HOME_FOLDER:
            mounts.append((op.dest, "home"))
        elif op.kind in ("tmpfs", "hide-file"):
            mounts.append((op.dest, "other"))
    access = _deepest(path, mounts)
    if access == "home":  # home's own folder is read (listed); nothing else there is
        return "read" if any(path == d for d, a in mounts if a == "home") else None
    return access if access in ("read", "write") else None


def build_plan(view: View, layout: HostLayout, *, root_mode: bool) -> LaunchPlan:
    """Render the view as mount operations (pure: the layout holds the host facts)."""
    snapshot = view.snapshot
    grants = snapshot.visible()
    targets = {g.target for g in grants if g.target}
    root: list[MountOp] = []
    if "/" in targets:
        root.append(MountOp("ro-bind", "/", "/", "files.read: /"))
    for folder, link in layout.system.items():
        if any(is_within(folder, t) for t in targets):
            continue
        if link is None:
            root.append(MountOp("ro-bind", folder, folder, "system folder"))
        else:
            root.append(MountOp("symlink", folder, link, "system folder (a link)"))
    root.append(MountOp("proc", "/proc", reason="a fresh /proc"))
    # The kernel's global files (sysctls, sysrq-trigger, irq...) decide by uid and mode
    # alone: read-only in every mode (procfs.py).
    for path in layout.proc_read_only:
        root.append(MountOp("ro-bind", path, path, "a global file of /proc: read-only"))
    # bwrap's pid 1 runs without the inner's filter and Landlock: its /proc entry (memory,
    # fds, root) is masked, and the filter refuses ptrace and friends against pid 1.
    root.append(MountOp("tmpfs", "/proc/1", reason="bwrap's pid 1, unfiltered: masked"))
    root.append(MountOp("dev", "/dev", reason="a minimal /dev"))
    # Never the host's /dev/shm: its names are host-wide, so another program's shared
    # memory would be open to the sandbox, and the sandbox's left behind after it.
    root.append(MountOp("tmpfs", "/dev/shm", reason="shared memory of the sandbox's own",
                        size=snapshot.run_limits().shm, mode=0o1777))
    if "/tmp" not in targets:
        root.append(MountOp("tmpfs", "/tmp", reason="a fresh /tmp",
                            size=snapshot.run_limits().tmp))

    # The layered part: (dest, access) of every mount so far decides what still needs one.
    mounts: list[tuple[str, str]] = [
        (op.dest, "read") for op in root if op.kind in ("ro-bind", "symlink")
    ]
    layered: list[tuple[int, int, MountOp]] = []
    late: list[MountOp] = []

    def add(order: int, op: MountOp, access: str) -> None:
        layered.append((depth(op.dest), order, op))
        mounts.append((op.dest, access))

    home = shown_home(view, layout.home)
    for grant in sorted(grants, key=lambda g: depth(g.target or "/")):
        assert grant.target is not None
        if grant.target in ("/", home):
            continue  # the root, mounted first; home, a folder of its own (below)
        kind: OpKind = "bind" if grant.access == "write" else "ro-bind"
        add(0, MountOp(kind, grant.target, grant.target, _why(grant)), grant.access)
    if home is not None:
        assert layout.home is not None
        _show_home(view, layout.home, add=add, layered=layered, late=late)
    for path in reopened(view, layout.home):
        add(1, MountOp("ro-bind", path, path, f"{REOPENED_REASON}: {path}"), "read")
    hidden = [g._replace(target=layout.lnk_home) if g.name == LNK_HOME_NAME
              and g.access == "hide" and g.target is None else g for g in snapshot.grants]
    caches = [cache.path for cache in snapshot.caches]
    for grant in sorted(hidden, key=lambda g: depth(g.target or "/")):
        if grant.target is None or grant.access not in ("hide", "protect") \
                or grant.target in layout.gone:
            continue
        if any(is_within(grant.target, cache) for cache in caches):
            continue  # a private cache holds nothing of the person's to hide
        holder = _deepest(grant.target, mounts)
        if grant.access == "hide" and holder in ("read", "write"):
            if grant.is_dir:
                add(1, MountOp("tmpfs", grant.target, reason=_why(grant)), "hide")
                late.append(MountOp("remount-ro", grant.target, reason="hidden folder"))
            else:
                add(1, MountOp("hide-file", grant.target, reason=_why(grant)), "hide")
        elif grant.access == "protect" and holder == "write":
            add(2, MountOp("ro-bind", grant.target, grant.target, _why(grant)), "read")
    _anchor_lnk_home(next((g.target for g in hidden if g.name == LNK_HOME_NAME
                           and g.access == "hide"), None), mounts, add)
    cache_holds = _caches(snapshot, layout, mounts, add, late, root_mode=root_mode)
    if root_mode:
        _refuse_root_write_grants(grants)
        _refuse_root_sockets(layout, grants, mounts, snapshot)
    _hide_sockets(snapshot, layout.sockets.sockets, mounts, add)
    late += _hide_by_name(snapshot, layout.secrets, mounts, add)
    # The dot files after every hide: a folder hidden whole needs no protection inside,
    # and a mount point made for one must never show a hidden folder again.
    holds = _dot_files(view, mounts, add) + cache_holds
    _anchor_inside_writes(mounts, add)

    inner_parent = inner_parent_for(snapshot)
    extra: list[MountOp] = [MountOp("ro-bind", f"{inner_parent}/inner", layout.inner_source,
                                    "the inner confiner")]
    prefix = layout.interpreter_prefix
    # Mounted unless readable already: a hidden prefix would leave the inner unable to start.
    # What it needs is the program and its standard library (lib/pythonX.Y, found from
    # the program's folder): a prefix's own top (a pyenv version's pip.conf) is not read,
    # so where those two are shown (a toolchain reopened in home) nothing more is. The
    # compiled inner needs neither.
    seen = {_deepest(os.path.join(prefix, "lib"), mounts), _deepest(layout.interpreter, mounts)}
    if not layout.compiled_inner and not seen <= {"read", "write"}:
        extra.append(MountOp("ro-bind", prefix, prefix, "the inner confiner's interpreter"))

    # A name through a link becomes that link, outer names first: a name below one made a
    # link already leads to its target through it, and bwrap could not make a second link
    # there (its parent would be the first link, pointing outside the new root).
    linked: list[str] = []
    named = [(expand_name(g.name, snapshot.home, snapshot.cwd, snapshot.lnk_home), g)
             for g in grants]
    for name, grant in sorted(named, key=lambda pair: depth(pair[0])):
        assert grant.target is not None
        if name != grant.target and _deepest(name, mounts) in (None, "home") and not any(
            is_within(name, link) for link in linked
        ):
            extra.append(MountOp("symlink", name, grant.target, f"{grant.name} is a link"))
            linked.append(name)

    late.append(MountOp("remount-ro", "/proc/1", reason="bwrap's pid 1, unfiltered: masked"))
    late.append(MountOp("remount-ro", "/", reason="nothing new at the root"))
    ordered = [op for _, _, op in sorted(layered, key=lambda t: (t[0], t[1]))]
    if root_mode:
        root, ordered = _idmapped(root, grants), _idmapped(ordered, grants)
    cwd = snapshot.cwd if _deepest(snapshot.cwd, mounts) in ("read", "write") \
        or snapshot.cwd == home else "/"
    return LaunchPlan(
        ops=(*root, *ordered, *extra, *late),
        chdir=cwd,
        root_mode=root_mode,
        share_net=snapshot.settings.network_mode == "host",
        interpreter=layout.interpreter,
        notes=(*_socket_notes(layout.sockets), *_unlooked_notes(layout.secrets)),
        holds=tuple(holds),
        inner_parent=inner_parent,
        unhidden=layout.unhidden,
        compiled_inner=layout.compiled_inner,
    )


def _show_home(view: View, layout: HomeLayout, *,
               add: Callable[[int, MountOp, str], None],
               layered: list[tuple[int, int, MountOp]], late: list[MountOp]) -> None:
    """Home as a folder of its own (linux/home.py): a tmpfs, each entry the view shows
    there bound back (a link made the same link), the tmpfs made read-only last (each
    place of code a pattern reopens is bound where it is found, by build_plan).
    Labelled "home" among the mounts: what is under it but not bound is in no mount, so
    nothing is hidden there again and no placeholder is made for it."""
    home = layout.home
    add(0, MountOp("tmpfs", home, reason=HOME_FOLDER), "home")
    late.append(MountOp("remount-ro", home, reason=HOME_FOLDER))
    for entry in entries_shown(view, layout):
        path = os.path.join(home, entry.name)
        if entry.kind == "link":
            layered.append((depth(path), 1, MountOp("symlink", path, entry.link, SHOWN)))
        else:
            add(1, MountOp("ro-bind", path, path, SHOWN), "read")


def inner_parent_for(snapshot: Snapshot) -> str:
    """Where the inner's package (and git's files of the run) are mounted: with `/`
    granted the root is the host's, read-only, where bwrap can make no mount point."""
    granted = any(g.target == "/" for g in snapshot.visible())
    return INNER_PARENT_UNDER_ROOT if granted else INNER_PARENT


def before_remounts(plan: LaunchPlan, new: tuple[MountOp, ...] | list[MountOp],
                    note: str | None = None) -> LaunchPlan:
    """`plan` with `new` mounted after every grant and hide (what they cover is inside
    grants, and no hide may cover them) and before the closing remount-ro ops, which
    need the root writable for bwrap to make the mount points; one of plan_for's stages
    (linux/backend.py), before the plan is handed on."""
    ops = list(plan.ops)
    at = len(ops)
    while at > 0 and ops[at - 1].kind == "remount-ro":
        at -= 1
    ops[at:at] = new
    return plan._replace(ops=tuple(ops), notes=(*plan.notes, note) if note else plan.notes)


def _caches(snapshot: Snapshot, layout: HostLayout, mounts: list[tuple[str, str]],
            add: Callable[[int, MountOp, str], None], late: list[MountOp], *,
            root_mode: bool) -> list[Wanted]:
    """Each private cache's folder bound at its path (caches.py), and what the launch
    holds for it: where a read grant shows the host's folder and the path is missing
    there, its first missing folder is held empty for the run and, when the path goes on
    below it, covered by a tmpfs (read-only once the mount point is made) to make the
    rest in. Run by root, bound idmapped: the sandbox writes it as root's."""
    holds: list[Wanted] = []
    for cache in sorted(snapshot.caches, key=lambda c: depth(c.path)):
        first = layout.cache_missing.get(cache.path)
        shown = f"{cache.key}: {cache.name}"
        if first is not None and _deepest(os.path.dirname(first), mounts) in ("read",
                                                                                "write"):
            holds.append(Wanted(first, "folder", base=deepest(
                first, ((d, d) for d, _ in mounts if d != first))))
            if first != cache.path:
                add(1, MountOp("tmpfs", first, reason=f"{shown}: missing here, held empty "
                               "for the run, the cache's folder made inside"), "other")
                late.append(MountOp("remount-ro", first, reason=f"{shown}: the folder held "
                                    "for the cache"))
        add(1, MountOp("bind", cache.path, cache.store, f"{shown}: a private cache of "
                       "lnk-sandbox's own, kept across runs", idmapped=root_mode), "cache")
    return holds
def _socket_notes(found: FoundSockets) -> tuple[str, ...]:
    if not found.unwalked:
        return ()
    shown = ", ".join(found.unwalked[:5])
    more = f" and {len(found.unwalked) - 5} more" if len(found.unwalked) > 5 else ""
    return (f"path sockets: the walk of the granted folders stopped at its bound, before "
            f"{shown}{more}; a socket bound in this network namespace there is hidden all "
            "the same, one bound in another is not",)


def _unlooked_notes(found: tuple[Found, ...]) -> tuple[str, ...]:
    unlooked = [place.path for place in found if place.unlooked]
    if not unlooked:
        return ()
    shown = ", ".join(unlooked[:5])
    more = f" and {len(unlooked) - 5} more" if len(unlooked) > 5 else ""
    return (f"secrets by name: the listing of home's tool folders reached its bound "
            f"before {shown}{more}, hidden whole for that; name one in files.read to show "
            "it",)


def _idmapped(ops: list[MountOp], grants: tuple[Grant, ...]) -> list[MountOp]:
    """Run by root, the binds the sandbox sees as root's own (idmapped.py): every grant,
    and what is bound inside one (dot-file protections, placeholders: git checks that
    the repository is its user's). Not a socket, pipe or device a read grant names: a
    root daemon's socket would then be the sandbox's to connect to. The system folders,
    /proc and lnk-sandbox's own code are never mapped: they are read as another user of
    the machine would."""
    granted = [g.target for g in grants if g.target and (g.is_dir or g.access == "write")]
    named = {g.target for g in grants if g.access == "read" and g.target and not g.is_dir
             and _is_regular(g.target)}
    return [op._replace(idmapped=True) if op.kind in ("bind", "ro-bind")
            and not is_within(op.dest, "/proc") and (
                op.dest in named or any(is_within(op.dest, w) for w in granted)) else op
            for op in ops]


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


# Run by root, no write grant may be at or inside these: root's own services act on what
# is there as root's (cron jobs, units, the loader's preload list, package databases).
ROOT_SYSTEM_FOLDERS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                       "/libx32", "/boot", "/opt", "/var", "/run", "/proc", "/sys", "/dev")
# ...nor a folder every user shares, itself (a folder inside one is fine).
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


def _refuse_root_write_grants(grants: tuple[Grant, ...]) -> None:
    """Run by root, the sandbox owns the files of the folders it writes (idmapped): a
    system folder would let it write what root's services run, a shared folder itself
    other services' private files there."""
    for grant in grants:
        if grant.access != "write" or not grant.target:
            continue
        target = grant.target
        in_shared = any(is_within(target, t) and target != t for t in SHARED_FOLDERS)
        system = next((f for f in ROOT_SYSTEM_FOLDERS if is_within(target, f)), None)
        if target in SHARED_FOLDERS or (system and not in_shared):
            what = (f"the shared folder {target} itself" if target in SHARED_FOLDERS
                    else f"{target}, in {system}, which root's own services read")
            raise LaunchError(
                f"run by root, a sandbox owns the files of the folders it writes, and "
                f"{grant.key or grant.reason} ({grant.name}) is {what}",
                hint="grant a project folder of its own (a folder inside /tmp or /var/tmp "
                "is fine), or run lnk-sandbox as a user other than root")


def _refuse_root_sockets(layout: HostLayout, grants: tuple[Grant, ...],
                         mounts: list[tuple[str, str]], snapshot: Snapshot) -> None:
    """Run by root, no grant may show a socket a root process listens on: the sandbox
    would be its owner there (grants are idmapped) and a daemon that trusts its
    socket's mode alone (Docker's) would do what it asks. A socket the spec hides, or
    names in [network] unix (the person's choice, bound on its own), is not refused."""
    named = {s.target for s in snapshot.network.sockets()}
    for path in layout.root_sockets:
        if _deepest(path, mounts) not in ("read", "write") or path in named:
            continue
        grant = deepest(path, ((g.target, g) for g in grants
                               if g.access in ("read", "write") and g.target))
        if grant is None or (grant.target == path and grant.access == "read"):
            continue  # named itself: bound as it is, not mapped (_idmapped)
        raise LaunchError(
            f"{path} is a socket a root process listens on, inside {grant.target} "
            f"({grant.key or grant.reason}): run by root, the sandbox would be its owner "
            "there and could connect to it",
            hint=f'hide it (files.hide = ["{path}"]) or its folder, grant a folder that '
            "holds no daemon's socket, or run lnk-sandbox as a user other than root",
        )


# The reason of a socket's hide: the mount watch knows it by it (mount_watch.py).
SOCKET_HIDDEN = "a socket in a granted folder, not named in [network] unix: hidden"


def _hide_sockets(snapshot: Snapshot, sockets: tuple[str, ...],
                  mounts: list[tuple[str, str]],
                  add: Callable[[int, MountOp, str], None]) -> None:
    """Each path socket found under a grant hidden (an empty file bound over it), but the
    ones the spec names, in [network] unix or as a grant of its own: connect() needs no
    write right, so a read grant would hand the sandbox every agent listening there."""
    named = {g.target for g in snapshot.visible() if not g.is_dir}
    named |= {s.target for s in snapshot.network.sockets()}
    for path in sockets:
        if path not in named and _deepest(path, mounts) in ("read", "write"):
            add(1, MountOp("hide-file", path, reason=SOCKET_HIDDEN), "hide")


def _hide_by_name(snapshot: Snapshot, found: tuple[Found, ...],
                  mounts: list[tuple[str, str]],
                  add: Callable[[int, MountOp, str], None]) -> list[MountOp]:
    """Each place the name rule found hidden as a table entry is, unless a grant names it
    (the place itself, or a folder inside it); the remounts to add last."""
    named = [g.target for g in snapshot.visible() if g.target]
    late = []
    for place in found:
        if any(is_within(target, place.path) for target in named):
            continue
        if _deepest(place.path, mounts) not in ("read", "write"):
            continue
        reason = "default hide: by its name, where tools keep secrets"
        if place.unlooked:
            reason = ("default hide: not looked at by the name rule (its listing reached "
                      "its bound), so hidden whole")
        if place.is_dir:
            add(1, MountOp("tmpfs", place.path, reason=reason), "hide")
            late.append(MountOp("remount-ro", place.path, reason="hidden folder"))
        else:
            add(1, MountOp("hide-file", place.path, reason=reason), "hide")
    return late


def _anchor_inside_writes(mounts: list[tuple[str, str]],
                          add: Callable[[int, MountOp, str], None]) -> None:
    """Each folder between a write grant and a mount inside it (a deeper grant, a hide,
    the installation kept read-only, a socket or a secret hidden) bound onto itself:
    a mount point cannot be renamed (EBUSY), where a plain folder holding one could be
    moved away, carrying the mount with it, and made again at its path holding what the
    sandbox likes (a repository whose settings the person's git would run, an edited
    copy of lnk-sandbox itself). Dot files make their own on the way (_dot_files), and a
    folder with a mount of its own (a hide) is one already."""
    at = {dest for dest, _ in mounts}
    for dest, _ in list(mounts):
        # The mount holding it (of two at one path, the later): only a written one
        # could rename what is between (a read grant's or a hide's folders are not its).
        holder = deepest(dest, ((d, (d, a)) for d, a in mounts if d != dest))
        if holder is None or holder[1] != "write":
            continue
        top = holder[0]
        folder = top
        for part in dest[len(top):].strip("/").split("/")[:-1]:
            folder = os.path.join(folder, part)
            if folder not in at:
                at.add(folder)
                add(2, MountOp("bind", folder, folder, f"a mount point, so it cannot be "
                               f"renamed, since it holds {dest}"), "write")


def _anchor_lnk_home(lnk_home: str | None, mounts: list[tuple[str, str]],
                     add: Callable[[int, MountOp, str], None]) -> None:
    """`$LNK_HOME` set inside a folder the sandbox writes: each folder between that grant
    and it bound onto itself. `$LNK_HOME` itself is hidden (a mount point), but a folder
    above it could be renamed away and made again, holding a link or forged permissions,
    for the next start to trust; a mount point cannot be renamed (EBUSY)."""
    if lnk_home is None:
        return
    above = [(d, a) for d, a in mounts if d != lnk_home]
    if _deepest(lnk_home, above) != "write":
        return
    folder = deepest(lnk_home, ((d, d) for d, a in above if a == "write"))
    assert folder is not None  # the deepest mount holding it writes it
    for part in lnk_home[len(folder):].strip("/").split("/")[:-1]:
        folder = os.path.join(folder, part)
        if not any(d == folder for d, _ in mounts):
            add(2, MountOp("bind", folder, folder, "lnk-sandbox's settings ($LNK_HOME) are "
                           "inside: a mount point, so it cannot be renamed"), "write")


def _dot_files(
    view: View,
    mounts: list[tuple[str, str]],
    add: Callable[[int, MountOp, str], None],
) -> list[Wanted]:
    """Read-only binds over each write grant's dot files, and what the launch holds.

    Only what lies where the sandbox writes needs a mount (a gitdir elsewhere may be
    read-only or hidden already). Every path bound here is offered to the placeholder
    state at launch: a missing one is made then, and an existing one may be another
    run's placeholder, which this run must hold too so it is not removed under it.
    """
    written = set(view.snapshot.written())
    found = view.protections
    view.check_links()
    holds: list[Wanted] = []
    anchored: set[str] = set()
    for grant, protected in sorted(found, key=lambda pair: depth(_dest(pair[1]) or "/")):
        dest = _dest(protected)
        # Inside a dot file bound already, the mount holding it says read: no second
        # bind, unless a write grant deeper than that one opened it again.
        if dest is None or dest in written or _deepest(dest, mounts) != "write":
            continue
        owner = f"dot file of {grant.name} ({grant.key or grant.reason})"
        top = deepest(dest, ((d, d) for d, a in mounts if a == "write"))
        assert top is not None  # the deepest mount holding it writes it
        folder = top
        for part in dest[len(top):].strip("/").split("/")[:-1]:
            folder = os.path.join(folder, part)
            if folder not in anchored and not any(d == folder for d, _ in mounts):
                anchored.add(folder)
                made = "; missing, so an empty folder is made for the run" \
                    if folder in protected.parents else ""
                add(2, MountOp("bind", folder, folder, f"{owner}: a mount point, so it cannot "
                               f"be renamed, since it holds {dest}{made}"), "write")
        # Missing folders above a held setting (.github for .github/hooks) are made
        # first, plain and writable, and go after the run when nothing else is in them.
        for parent in protected.parents:
            if not any(held.path == parent for held in holds):
                holds.append(Wanted(parent, "folder", base=top, linger=protected.stays))
        reason = f"{owner}: {protected.reason}"
        kind: Kind = protected.kind
        if not protected.exists:
            kind = protected.held_as if dest == protected.path else "folder"
            reason += f"; missing, so an empty {kind} is held there for the run"
        add(2, MountOp("ro-bind", dest, dest, reason), "read")
        holds.append(Wanted(dest, kind, protected.content if kind == "file" else b"",
                            base=top, linger=protected.stays))
    return holds


def _dest(protected: Protected) -> str | None:
    """Where a protection is bound: the path, or for a missing one its placeholder."""
    return protected.path if protected.exists else protected.placeholder


def _why(grant: Grant) -> str:
    if grant.key:
        return f"{grant.key}: {grant.name}"
    return f"{grant.reason}: {grant.name}"
