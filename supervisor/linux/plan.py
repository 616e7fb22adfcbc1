"""The Linux launch plan: the view rendered as an ordered list of mount operations.

Built first as data, emitted as bwrap arguments after (`bwrap.py`), so `plan` can print
it and tests can compare it exactly. bwrap performs operations in command-line order, and
a mount hides whatever an earlier mount put beneath it, so the order is the policy. The
plan is built once, from every input (the view, this host's facts, the run's own mounts:
`RunMounts`), and never edited after: what bwrap records is what was built.

1. the root: `/` when granted, then system folders (read-only, missing ones left out,
   a top-level link such as Debian's `/bin -> usr/bin` made the same link inside),
   a fresh /proc, a minimal /dev with a writable /dev/shm of the sandbox's own, a fresh
   /tmp unless /tmp itself is granted (or a session's own, placement.py);
2. grants and hides, outer to inner (by depth; mounts.py lays the view's rules): the
   folders holding a hidden one are mounted before it is hidden (tmpfs, or an empty
   file), the grants inside it after; read-only protections (the installation, dot
   files) after the write grant holding them. Each folder between a write grant and a
   mount inside it (a dot file below the top, a hide, a socket the run binds) is bound
   onto itself first: a mount point cannot be renamed (EBUSY), so the folder holding it
   cannot be moved away and made again, and stays writable otherwise;
3. the inner confiner's package and, for the Python inner when it is outside the system
   folders, its interpreter (the compiled inner is static: it needs nothing else); a
   grant's name through a link, made that link; then the run's own mounts
   (run_mounts.py: proxy mode's resolv.conf, the named sockets, git's files);
4. hidden folders' tmpfs and the root made read-only, last, since bwrap needs them
   writable to make the mount points of everything inside.
"""

from __future__ import annotations

import os
import stat

from ..grants import Grant, Snapshot, deepest, depth, expand_name, is_within
from ..secret_names import Found
from ..view import Laying, View, sees
from .home import HOME_FOLDER, shown_home
from .layout import SYSTEM_FOLDERS, HostLayout
from .mounts import SOCKET_HIDDEN, Laid, lay_view
from .ops import INNER_PARENT, LaunchPlan, MountOp, OpKind
from .placement import session_tmp, working_directory
from .root_grants import refuse_root_sockets, refuse_write_grants
from .run_mounts import NO_RUN, RunMounts, refuse_missing_resolv_conf, run_mounts, run_notes
from .sockets import FoundSockets

__all__ = ["FRESH_MOUNTS", "INNER_MOUNT", "INNER_PARENT", "SOCKET_HIDDEN", "SYSTEM_FOLDERS",
           "HostLayout", "LaunchPlan", "MountOp", "OpKind", "RunMounts", "build_plan",
           "host_access", "inner_parent_for"]

# Where the inner confiner's package is mounted inside, read-only (ops.INNER_PARENT).
INNER_MOUNT = f"{INNER_PARENT}/inner"
# With '/' granted the root is the host's, read-only, where bwrap can make no mount
# point: the package goes in the sandbox's own fresh /dev instead.
INNER_PARENT_UNDER_ROOT = "/dev/.lnk-sandbox"

# Mounts of the sandbox's own, made fresh inside whatever the host has at that path.
FRESH_MOUNTS = ("/tmp", "/dev/shm")


def build_plan(view: View, layout: HostLayout, run: RunMounts = NO_RUN, *,
               root_mode: bool) -> LaunchPlan:
    """Render the view, and the run's own mounts, as mount operations (pure: the layout
    holds the host facts, `run` what the run made for itself). Each phase is judged in
    the order a launch refuses: what the grants may not be, a link in a dot file's path,
    a resolv.conf leading nowhere, a session's /tmp the spec leaves no room for, the
    working directory."""
    snapshot = view.snapshot
    folders = _root_folders(view, layout)
    own = run_mounts(view, layout, run, root_mode=root_mode)
    grants = _grants_and_hides(view, layout, folders, own, root_mode=root_mode)  # 2
    inner = _inner(view, layout, grants.laying)  # 3
    refuse_missing_resolv_conf(view, layout, (*folders, *grants.ops, *inner))
    root = [*folders, *_tmp(view, run, root_mode=root_mode)]  # 1
    ordered = list(grants.ops)
    if root_mode:
        root, ordered = _idmapped(root, snapshot.visible()), _idmapped(ordered,
                                                                        snapshot.visible())
    ops = (*root, *ordered, *inner, *own, *_closing(grants))  # 4
    home = shown_home(view, layout.home)
    chdir = snapshot.cwd if sees(grants.laying.access(snapshot.cwd)) \
        or snapshot.cwd == home else "/"
    return LaunchPlan(
        ops=ops,
        chdir=working_directory(ops, run.cwd) if run.cwd is not None else chdir,
        root_mode=root_mode,
        share_net=snapshot.settings.network_mode == "host",
        interpreter=layout.interpreter,
        notes=(*_socket_notes(layout.sockets), *_unlooked_notes(layout.secrets),
               *run_notes(view, layout)),
        holds=grants.holds,
        inner_parent=inner_parent_for(snapshot),
        unhidden=layout.unhidden,
        compiled_inner=layout.compiled_inner,
    )


def _root_folders(view: View, layout: HostLayout) -> list[MountOp]:
    """Phase 1 but /tmp: `/` when granted, the system folders, /proc and /dev."""
    snapshot = view.snapshot
    targets = {g.target for g in snapshot.visible() if g.target}
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
    return root


def _tmp(view: View, run: RunMounts, *, root_mode: bool) -> list[MountOp]:
    """Phase 1's /tmp: a fresh one, a session's own (placement.py), or none where /tmp
    itself is granted (its grant is bound in phase 2)."""
    snapshot = view.snapshot
    granted = any(g.target == "/tmp" for g in snapshot.visible())
    if run.tmp is not None:
        return [session_tmp(run.tmp, tmp_granted=granted, root_mode=root_mode,
                            size_asked="tmp" in snapshot.run_limits().written)]
    if granted:
        return []
    return [MountOp("tmpfs", "/tmp", reason="a fresh /tmp", size=snapshot.run_limits().tmp)]


def _grants_and_hides(view: View, layout: HostLayout, folders: list[MountOp],
                      own: tuple[MountOp, ...], *, root_mode: bool) -> Laid:
    """Phase 2: the view laid as mounts (mounts.py), each folder between a written folder
    and a mount inside it anchored, the run's own (`own`) among them."""
    snapshot = view.snapshot

    def refuse(laying: Laying) -> None:
        if root_mode:
            refuse_write_grants(snapshot.visible())
            refuse_root_sockets(layout, snapshot.visible(), laying, snapshot)

    return lay_view(view, layout, tuple(folders), tuple(op.dest for op in own),
                    root_mode=root_mode, refuse=refuse)


def _inner(view: View, layout: HostLayout, laying: Laying) -> list[MountOp]:
    """Phase 3 but the run's own: the inner's package, its interpreter where nothing
    shows it, and each grant's name through a link made that link."""
    snapshot = view.snapshot
    ops = [MountOp("ro-bind", f"{inner_parent_for(snapshot)}/inner", layout.inner_source,
                   "the inner confiner")]
    prefix = layout.interpreter_prefix
    # Mounted unless readable already: a hidden prefix would leave the inner unable to start.
    # What it needs is the program and its standard library (lib/pythonX.Y, found from
    # the program's folder): a prefix's own top (a pyenv version's pip.conf) is not read,
    # so where those two are shown (a toolchain reopened in home) nothing more is. The
    # compiled inner needs neither.
    seen = sees(laying.access(os.path.join(prefix, "lib"))) and sees(
        laying.access(layout.interpreter))
    if not layout.compiled_inner and not seen:
        ops.append(MountOp("ro-bind", prefix, prefix, "the inner confiner's interpreter"))
    # A name through a link becomes that link, outer names first: a name below one made a
    # link already leads to its target through it, and bwrap could not make a second link
    # there (its parent would be the first link, pointing outside the new root). Inside
    # home shown as a folder of its own, what is not bound is in no mount: bwrap makes it.
    linked: list[str] = []
    named = [(expand_name(g.name, snapshot.home, snapshot.cwd, snapshot.lnk_home), g)
             for g in snapshot.visible()]
    for name, grant in sorted(named, key=lambda pair: depth(pair[0])):
        assert grant.target is not None
        holder = laying.decides(name)
        if name != grant.target and (holder is None or holder.label == HOME_FOLDER) \
                and not any(is_within(name, link) for link in linked):
            ops.append(MountOp("symlink", name, grant.target, f"{grant.name} is a link"))
            linked.append(name)
    return ops


def _closing(grants: Laid) -> list[MountOp]:
    """Phase 4: each tmpfs phase 2 laid made read-only, bwrap's /proc/1 and the root."""
    return [*grants.closing,
            MountOp("remount-ro", "/proc/1", reason="bwrap's pid 1, unfiltered: masked"),
            MountOp("remount-ro", "/", reason="nothing new at the root")]


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
    access = deepest(path, mounts)
    if access == "home":  # home's own folder is read (listed); nothing else there is
        return "read" if any(path == d for d, a in mounts if a == "home") else None
    return access if access in ("read", "write") else None


def inner_parent_for(snapshot: Snapshot) -> str:
    """Where the inner's package (and git's files of the run) are mounted: with `/`
    granted the root is the host's, read-only, where bwrap can make no mount point."""
    granted = any(g.target == "/" for g in snapshot.visible())
    return INNER_PARENT_UNDER_ROOT if granted else INNER_PARENT


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
