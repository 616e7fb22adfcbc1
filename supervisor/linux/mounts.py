"""Phase 2 of the Linux plan: the view's rules laid as mounts, outer to inner.

What the sandbox sees is the view's to judge (view.py); what stands for it here is the
mount tree bwrap makes, where a later mount covers whatever an earlier one put beneath
it. So the rules are laid in that tree one at a time, outer to inner (of rules at one
path: the grant, then what closes it, then what keeps it read-only), and each is judged
by what is laid before it, with the view's judgement (`Laying`): a hide is mounted only
where the sandbox would see the path, a protection only where it would write it.

In passes, each outer to inner:
1. the view's grants (home as a folder of its own, linux/home.py, and the places of code
   its patterns reopen, as found now), its hides and protections (`$LNK_HOME` hidden
   even where it was made after the snapshot, a hidden path missing now left out);
2. lnk-sandbox's own private caches, over what the view laid; then, run by root, what a
   root-run sandbox must not be given is refused, judged on these (root_grants.py);
3. what the host holds that the view closes: the path sockets it does not name, then
   the places hidden by their names;
4. the dot files, after every hide: a folder hidden whole needs no protection inside,
   and a mount point made for one must never show a hidden folder again.
Last, the anchors: each folder between a written folder and a mount inside it (the run's
own mounts too) bound onto itself, so that it cannot be renamed.

The mounts keep the order they always had: by depth, then, at one depth, grants and
home's folder, then what closes, then what keeps read-only; ties in the order their
stage comes (`_Stage`), each stage in its own order.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import IntEnum
from functools import partial
from typing import NamedTuple

from ..caches import Cache
from ..dotfiles import Protected
from ..grants import Grant, depth
from ..home_config import REOPENED_REASON
from ..policy import LNK_HOME_NAME
from ..secret_names import Found
from ..view import Laying, View, ViewRule, sees
from .home import HOME_FOLDER, home_mounts, reopened, shown_home
from .layout import HostLayout
from .ops import MountOp
from .placeholders import Kind, Wanted

# The reason of a socket's hide: the mount watch knows it by it (mount_watch.py).
SOCKET_HIDDEN = "a socket in a granted folder, not named in [network] unix: hidden"
HIDDEN_FOLDER = "hidden folder"


class _Stage(IntEnum):
    """Where a mount comes among others at one depth and of one kind (its `order`)."""

    GRANT = 0
    HOME = 1
    REOPENED = 2
    CLOSE = 3
    SETTINGS = 4
    CACHE = 5
    SOCKET = 6
    NAME = 7
    DOT = 8
    ANCHOR = 9


class Laid(NamedTuple):
    """Phase 2's mounts in order; the tmpfs mounts to make read-only last (`closing`);
    what the launch holds (placeholders); and the tree laid, root's folders included,
    that the phases after judge by."""

    ops: tuple[MountOp, ...]
    closing: tuple[MountOp, ...]
    holds: tuple[Wanted, ...]
    laying: Laying


def _rule_of(op: MountOp) -> ViewRule:
    """What a mount shows of the host at its path, as a rule of the tree: a bind of the
    path onto itself, the host's files (read or written); anything else (a tmpfs, an
    empty file, a private cache's own folder), none of them."""
    if op.kind in ("bind", "ro-bind") and op.source == op.dest:
        return ViewRule(op.dest, "write" if op.kind == "bind" else "read", True, op.reason,
                        op.reason)
    return ViewRule(op.dest, "hide", op.kind != "hide-file", op.reason, op.reason)


class _Mounts:
    """The mounts being laid: each op with its place in mount order, the tree they
    make, and what is closed and held."""

    def __init__(self, laying: Laying) -> None:
        self.laying = laying
        self.root = tuple(rule.path for rule in laying.rules)
        self.placed: list[tuple[tuple[int, int, int, int], MountOp]] = []
        self.closing: list[tuple[tuple[int, int], MountOp]] = []
        self.holds: dict[_Stage, list[Wanted]] = {_Stage.DOT: [], _Stage.CACHE: []}
        self.step = (0, 0)  # the stage and place in it of the step laying mounts now
        self.made: list[tuple[tuple[int, int, int], str]] = []

    def add(self, stage: _Stage, order: int, op: MountOp, *, laid: bool = True) -> None:
        """Mount `op` (`order`: 0 opens, 1 closes, 2 keeps read-only); `laid`: it
        counts in the tree (a link made inside home does not: nothing is mounted)."""
        self.placed.append(((depth(op.dest), order, stage, len(self.placed)), op))
        if laid:
            self.laying.lay(_rule_of(op))
            self.made.append(((*self.step, len(self.made)), op.dest))

    def dests(self) -> list[str]:
        """Where each mount is, root's first, then stage by stage, each stage in its own
        order: the order the anchors are looked for in."""
        return [*self.root, *(dest for _, dest in sorted(self.made))]

    def close(self, stage: _Stage, seq: int, op: MountOp) -> None:
        """A tmpfs laid at `op.dest`, made read-only last (`op`)."""
        self.closing.append(((stage, seq), op))

    def laid(self) -> Laid:
        return Laid(tuple(op for _, op in sorted(self.placed, key=lambda p: p[0])),
                    tuple(op for _, op in sorted(self.closing, key=lambda c: c[0])),
                    (*self.holds[_Stage.DOT], *self.holds[_Stage.CACHE]), self.laying)


Step = tuple[tuple[int, int, int, int], Callable[[], None]]


def _lay(mounts: _Mounts, steps: list[Step]) -> None:
    """Each step in laid order: outer to inner, then as its mounts are ordered."""
    for key, step in sorted(steps, key=lambda s: s[0]):
        mounts.step = (key[2], key[3])
        step()


def lay_view(view: View, layout: HostLayout, root: tuple[MountOp, ...],
             inside: tuple[str, ...], *, root_mode: bool,
             refuse: Callable[[Laying], None]) -> Laid:
    """Phase 2 of the plan (linux/plan.py): `root`, phase 1's mounts, laid first (a
    system folder's link reads as the folder); `inside`, where the run's own mounts go,
    anchored as every other mount; `refuse`, the checks of root mode, judged after the
    caches."""
    mounts = _Mounts(Laying(ViewRule(op.dest, "read", True, op.reason, op.reason)
                            for op in root if op.kind in ("ro-bind", "symlink")))
    _lay(mounts, [*_grants(view, layout, mounts), *_closes(view, layout, mounts)])
    _lay(mounts, _caches(view, layout, mounts, root_mode=root_mode))
    refuse(mounts.laying)
    view.check_links()
    _lay(mounts, [((depth(path), 1, _Stage.SOCKET, seq), partial(
        _hide_socket, view, mounts, path)) for seq, path in enumerate(layout.sockets.sockets)])
    _lay(mounts, [((depth(place.path), 1, _Stage.NAME, seq), partial(
        _hide_by_name, view, mounts, seq, place)) for seq, place in enumerate(layout.secrets)])
    _lay(mounts, _dot_files(view, mounts))
    _anchor_inside_writes(mounts, inside)
    return mounts.laid()


def _grants(view: View, layout: HostLayout, mounts: _Mounts) -> list[Step]:
    """Each grant bound (but `/`, phase 1's, and home shown as a folder of its own),
    home's folder and the entries it shows, and each place of code reopened in it."""
    steps: list[Step] = []
    home = shown_home(view, layout.home)
    grants = [r for r in view.laid if r.grant is not None and not r.pattern and r.allows]
    for seq, rule in enumerate(sorted(grants, key=lambda r: depth(r.path))):
        if rule.path in ("/", home):
            continue
        op = MountOp("bind" if rule.effect == "write" else "ro-bind", rule.path, rule.path,
                     rule.why)
        steps.append(((depth(rule.path), 0, _Stage.GRANT, seq),
                      partial(mounts.add, _Stage.GRANT, 0, op)))
    if home is not None:
        assert layout.home is not None
        found = layout.home

        def lay_home() -> None:
            for order, op in home_mounts(view, found):
                mounts.add(_Stage.HOME, order, op, laid=op.kind != "symlink")
            mounts.close(_Stage.HOME, 0, MountOp("remount-ro", home, reason=HOME_FOLDER))
        steps.append(((depth(home), 0, _Stage.HOME, 0), lay_home))
    for seq, path in enumerate(reopened(view, layout.home)):
        op = MountOp("ro-bind", path, path, f"{REOPENED_REASON}: {path}")
        steps.append(((depth(path), 1, _Stage.REOPENED, seq),
                      partial(mounts.add, _Stage.REOPENED, 1, op)))
    return steps


def _closes(view: View, layout: HostLayout, mounts: _Mounts) -> list[Step]:
    """Each hide and each "protect" grant of the view, where it changes what is laid;
    `$LNK_HOME` hidden at its path now where it was made after the snapshot; then the
    folders above `$LNK_HOME` where the sandbox writes, anchored."""
    rules = {r.grant: r for r in view.laid if r.grant is not None and not r.pattern}
    closing: list[ViewRule] = []
    settings: str | None = None
    for grant in view.snapshot.grants:
        rule = rules.get(grant)
        if grant.name == LNK_HOME_NAME and grant.access == "hide":
            if grant.target is None:
                rule = _settings_rule(grant, layout.lnk_home)
            if settings is None:
                settings = rule.path if rule is not None else ""
        if rule is None or rule.effect not in ("hide", "keep") or rule.path in layout.gone:
            continue
        if view.cached(rule.path):
            continue  # a private cache holds nothing of the person's to hide
        closing.append(rule)
    steps: list[Step] = [((depth(rule.path), 1 if rule.effect == "hide" else 2, _Stage.CLOSE,
                           seq), partial(_close, mounts, seq, rule))
                         for seq, rule in enumerate(sorted(closing, key=lambda r: depth(r.path)))]
    if settings:
        steps.append(((depth(settings), 2, _Stage.SETTINGS, 0),
                      partial(_anchor_lnk_home, mounts, settings)))
    return steps


def _settings_rule(grant: Grant, lnk_home: str | None) -> ViewRule | None:
    """The hide of `$LNK_HOME` at `lnk_home`, where it was made after the snapshot (the
    view has no rule for a path it did not find); None when it is not there now."""
    if lnk_home is None:
        return None
    label = grant.key or grant.reason
    return ViewRule(lnk_home, "hide", grant.is_dir, label, f"{label}: {grant.name}",
                    grant=grant._replace(target=lnk_home))


def _close(mounts: _Mounts, seq: int, rule: ViewRule) -> None:
    if not mounts.laying.needs(rule):
        return
    if rule.effect == "keep":
        mounts.add(_Stage.CLOSE, 2, MountOp("ro-bind", rule.path, rule.path, rule.why))
    elif rule.folder:
        mounts.add(_Stage.CLOSE, 1, MountOp("tmpfs", rule.path, reason=rule.why))
        mounts.close(_Stage.CLOSE, seq, MountOp("remount-ro", rule.path, reason=HIDDEN_FOLDER))
    else:
        mounts.add(_Stage.CLOSE, 1, MountOp("hide-file", rule.path, reason=rule.why))


def _anchor_lnk_home(mounts: _Mounts, lnk_home: str) -> None:
    """`$LNK_HOME` set inside a folder the sandbox writes: each folder between that grant
    and it bound onto itself. `$LNK_HOME` itself is hidden (a mount point), but a folder
    above it could be renamed away and made again, holding a link or forged permissions,
    for the next start to trust; a mount point cannot be renamed (EBUSY)."""
    holder = mounts.laying.decides(lnk_home, strict=True)
    if holder is None or holder.effect != "write":
        return
    folder = holder.path
    for part in lnk_home[len(folder):].strip("/").split("/")[:-1]:
        folder = os.path.join(folder, part)
        if not mounts.laying.has(folder):
            mounts.add(_Stage.SETTINGS, 2, MountOp(
                "bind", folder, folder, "lnk-sandbox's settings ($LNK_HOME) are inside: a "
                "mount point, so it cannot be renamed"))


def _caches(view: View, layout: HostLayout, mounts: _Mounts, *,
            root_mode: bool) -> list[Step]:
    """Each private cache's folder bound at its path (caches.py), and what the launch
    holds for it: where a read grant shows the host's folder and the path is missing
    there, its first missing folder is held empty for the run and, when the path goes on
    below it, covered by a tmpfs (read-only once the mount point is made) to make the
    rest in. Run by root, bound idmapped: the sandbox writes it as root's."""
    return [((depth(cache.path), 1, _Stage.CACHE, seq), partial(
        _cache, mounts, seq, cache, layout.cache_missing.get(cache.path), root_mode=root_mode))
        for seq, cache in enumerate(sorted(view.snapshot.caches, key=lambda c: depth(c.path)))]


def _cache(mounts: _Mounts, seq: int, cache: Cache, first: str | None, *,
           root_mode: bool) -> None:
    """One private cache laid; `first`, its first folder missing on the host, if any."""
    shown = f"{cache.key}: {cache.name}"
    laying = mounts.laying
    if first is not None and sees(laying.access(os.path.dirname(first))):
        base = laying.decides(first, strict=True)
        mounts.holds[_Stage.CACHE].append(Wanted(
            first, "folder", base=base.path if base is not None else None))
        if first != cache.path:
            mounts.add(_Stage.CACHE, 1, MountOp(
                "tmpfs", first, reason=f"{shown}: missing here, held empty for the run, "
                "the cache's folder made inside"))
            mounts.close(_Stage.CACHE, seq, MountOp(
                "remount-ro", first, reason=f"{shown}: the folder held for the cache"))
    mounts.add(_Stage.CACHE, 1, MountOp(
        "bind", cache.path, cache.store, f"{shown}: a private cache of lnk-sandbox's own, "
        "kept across runs", idmapped=root_mode))


def _hide_socket(view: View, mounts: _Mounts, path: str) -> None:
    """A path socket found under a grant hidden (an empty file bound over it), but one
    the spec names (View.names_socket)."""
    if not view.names_socket(path) and sees(mounts.laying.access(path)):
        mounts.add(_Stage.SOCKET, 1, MountOp("hide-file", path, reason=SOCKET_HIDDEN))


def _hide_by_name(view: View, mounts: _Mounts, seq: int, place: Found) -> None:
    """A place the name rule found hidden as a table entry is, unless a grant names it
    (View.names_inside), where the sandbox would see it."""
    path = place.path
    if view.names_inside(path) or not sees(mounts.laying.access(path)):
        return
    reason = "default hide: by its name, where tools keep secrets"
    if place.unlooked:
        reason = ("default hide: not looked at by the name rule (its listing reached its "
                  "bound), so hidden whole")
    if place.is_dir:
        mounts.add(_Stage.NAME, 1, MountOp("tmpfs", path, reason=reason))
        mounts.close(_Stage.NAME, seq, MountOp("remount-ro", path, reason=HIDDEN_FOLDER))
    else:
        mounts.add(_Stage.NAME, 1, MountOp("hide-file", path, reason=reason))


def _dot_files(view: View, mounts: _Mounts) -> list[Step]:
    """Each protection of the view's written folders, outer to inner (_dot_file)."""
    written = set(view.snapshot.written())
    by_depth = sorted(view.protections, key=lambda pair: depth(_dest(pair[1]) or "/"))
    return [((depth(_dest(protected) or "/"), 2, _Stage.DOT, seq),
             partial(_dot_file, mounts, grant, protected, written))
            for seq, (grant, protected) in enumerate(by_depth)]


def _dot_file(mounts: _Mounts, grant: Grant, protected: Protected,
              written: set[str]) -> None:
    """A read-only bind over one of a write grant's dot files, and what the launch holds.

    Only what lies where the sandbox writes needs a mount (a gitdir elsewhere may be
    read-only or hidden already). Every path bound here is offered to the placeholder
    state at launch: a missing one is made then, and an existing one may be another
    run's placeholder, which this run must hold too so it is not removed under it.
    """
    dest = _dest(protected)
    laying = mounts.laying
    # Inside a dot file bound already, the mount holding it says read: no second bind,
    # unless a write grant deeper than that one opened it again.
    holder = laying.decides(dest) if dest is not None and dest not in written else None
    if dest is None or holder is None or holder.effect != "write":
        return
    owner = f"dot file of {grant.name} ({grant.key or grant.reason})"
    top = folder = holder.path
    for part in dest[len(top):].strip("/").split("/")[:-1]:
        folder = os.path.join(folder, part)
        if not laying.has(folder):
            made = "; missing, so an empty folder is made for the run" \
                if folder in protected.parents else ""
            mounts.add(_Stage.DOT, 2, MountOp("bind", folder, folder, f"{owner}: a mount "
                                              "point, so it cannot be renamed, since it "
                                              f"holds {dest}{made}"))
    # Missing folders above a held setting (.github for .github/hooks) are made first,
    # plain and writable, and go after the run when nothing else is in them.
    holds = mounts.holds[_Stage.DOT]
    for parent in protected.parents:
        if not any(held.path == parent for held in holds):
            holds.append(Wanted(parent, "folder", base=top, linger=protected.stays))
    reason = f"{owner}: {protected.reason}"
    kind: Kind = protected.kind
    if not protected.exists:
        kind = protected.held_as if dest == protected.path else "folder"
        reason += f"; missing, so an empty {kind} is held there for the run"
    mounts.add(_Stage.DOT, 2, MountOp("ro-bind", dest, dest, reason))
    holds.append(Wanted(dest, kind, protected.content if kind == "file" else b"",
                        base=top, linger=protected.stays))


def _dest(protected: Protected) -> str | None:
    """Where a protection is bound: the path, or for a missing one its placeholder."""
    return protected.path if protected.exists else protected.placeholder


def _anchor_inside_writes(mounts: _Mounts, inside: tuple[str, ...]) -> None:
    """Each folder between a write grant and a mount inside it (a deeper grant, a hide,
    the installation kept read-only, a socket or a secret hidden, a socket named in
    [network] unix, any mount of the run's own: `inside`) bound onto itself: a mount
    point cannot be renamed (EBUSY), where a plain folder holding one could be moved
    away, carrying the mount with it, and made again at its path holding what the
    sandbox likes (a repository whose settings the person's git would run, an edited
    copy of lnk-sandbox itself, a socket of its own where the person's tools connect).
    Dot files make their own on the way (_dot_file), and a folder with a mount of its
    own (a hide) is one already."""
    laying = mounts.laying
    mounts.step = (_Stage.ANCHOR, 0)
    at = {rule.path for rule in laying.rules} | set(inside)
    for dest in [*mounts.dests(), *inside]:
        # The mount holding it (of two at one path, the later): only a written one
        # could rename what is between (a read grant's or a hide's folders are not its).
        holder = laying.decides(dest, strict=True)
        if holder is None or holder.effect != "write":
            continue
        folder = holder.path
        for part in dest[len(folder):].strip("/").split("/")[:-1]:
            folder = os.path.join(folder, part)
            if folder not in at:
                at.add(folder)
                mounts.add(_Stage.ANCHOR, 2, MountOp(
                    "bind", folder, folder, f"a mount point, so it cannot be renamed, "
                    f"since it holds {dest}"))


__all__ = ["HIDDEN_FOLDER", "SOCKET_HIDDEN", "Laid", "lay_view"]
