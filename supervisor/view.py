"""The view: what a sandbox of one snapshot sees, as a tree of rules, computed once.

Both backends and `describe` render it, each its own way (Linux: mounts; macOS:
Seatbelt's levels; describe: text), so what decides for a path is judged here, once:

- the rules, laid in one order: the folders every sandbox of the OS reads, then the
  rules lnk-sandbox adds by pattern (home's dot entries hidden under a read grant of
  home, the places of code it reopens: home_config.py), then the spec's grants (read
  and write), then what narrows them (a "protect" grant and each protected dot file,
  read-only), then hides. The deepest rule holding a path decides;
  of rules at one folder, the one laid last (`grants.deepest`'s tie-break), so a hide
  at a granted folder closes it and a protection at a written one keeps it read-only,
  as the later mount covers the earlier one on Linux and the later rule wins in
  Seatbelt;
- the protections: a folder written under `write_dot_files` keeps its dot files
  writable, every other written folder has them read-only, and the dot files found at
  its top (dotfiles.analyze) are its protections; a missing one that a program could
  make is held by a placeholder;
- the links a sandbox could repoint: a link in a protected path where the sandbox
  writes refuses the launch.

A backend that lays its mechanism one rule at a time (Linux's mounts, linux/mounts.py)
judges each by what it laid before, with the same judgement (`Laying`, `needed`); what
it finds on the host and closes besides (Linux: path sockets, places hidden by name) is
judged against the spec here too (`View.names_socket`, `names_inside`, `cached`).

The dot files are read from the host once (`view_for`); everything else is pure.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple

from .dotfiles import DotFiles, Protected, analyze
from .errors import LaunchError, SpecError
from .grants import (
    Grant,
    Snapshot,
    deepest,
    is_within,
    pattern_folder,
    working_directory_problem,
)

Effect = Literal["read", "write", "hide", "keep"]
# The order rules are laid in at one folder: what narrows after what it narrows.
_LAID: dict[str, int] = {"write": 0, "read": 0, "keep": 1, "hide": 2}
SYSTEM_FOLDER = "system folder"


class ViewRule(NamedTuple):
    """One rule of the tree. `label` is the key or reason (what a profile's comments may
    carry: never a path), `why` names the rule fully. `creation`: a protected dot file,
    closed at its first creation too. `grant`: the spec's grant it comes from, if any;
    `protected`: the dot file it keeps, if any. `pattern`: a rule whose path has `*` or
    `.*` components, standing for each folder they name (home's dot entries hidden, a
    toolchain's folders reopened): at each, laid before the rules of that folder."""

    path: str
    effect: Effect
    folder: bool
    label: str
    why: str
    creation: bool = False
    grant: Grant | None = None
    protected: Protected | None = None
    pattern: bool = False  # `path` stands for every folder it names (home_config.py)

    @property
    def allows(self) -> bool:
        return self.effect in ("read", "write")


class View(NamedTuple):
    """The tree of one snapshot's rules on one OS (`system`: the folders every sandbox
    of it reads). `dot_files`: what is at the top of each written folder looked at, by
    its target; `protections`: each protected path with the write grant whose top holds
    it, in the grants' order."""

    snapshot: Snapshot
    system: tuple[str, ...]
    rules: tuple[ViewRule, ...]
    protections: tuple[tuple[Grant, Protected], ...]
    dot_files: Mapping[str, DotFiles]
    laid: tuple[ViewRule, ...] = ()  # every rule, before those keeping an unwritten path
                                     # read-only are left out (a backend's own write
                                     # rules may write it: macOS's temp folder)

    def decides(self, path: str, extra: Iterable[ViewRule] = (), *, strict: bool = False,
                keeps: bool = True, dot_files: bool = True) -> ViewRule | None:
        """The rule that decides for `path`: the deepest holding it, of one folder the one
        laid last. `extra`: a backend's own rules (macOS's temp folder and hides), laid
        with the spec's by their effect; `strict`: rules at `path` itself left out (what
        holds it); `keeps`: with what keeps a written path read-only, else only what
        opens and hides (what a read-only rule would be inside); `dot_files`: with the
        protected dot files, else only the spec's rules (what the sandbox could change
        before any dot file is closed)."""
        rules = [r for r in (*self.rules, *extra) if (keeps or r.effect != "keep")
                 and (dot_files or r.protected is None)]
        return _deciding(path, self.system, rules, strict=strict)

    def access(self, path: str, extra: Iterable[ViewRule] = (), *, strict: bool = False,
               keeps: bool = True, dot_files: bool = True) -> Effect | None:
        """"read", "write", "hide" or "keep" (read-only inside a written folder) of the
        rule deciding for `path`; None where no rule holds it (unseen)."""
        rule = self.decides(path, extra, strict=strict, keeps=keeps, dot_files=dot_files)
        return rule.effect if rule is not None else None

    def sees(self, path: str, extra: Iterable[ViewRule] = ()) -> bool:
        return self.access(path, extra) in ("read", "write", "keep")

    def check_links(self, extra: Iterable[ViewRule] = ()) -> None:
        """Refuse a launch where a protected path holds a link the sandbox could repoint:
        one the spec's rules (not the dot files' own, which the link could lead around)
        leave it writing."""
        extra = tuple(extra)
        for grant, item in self.protections:
            if item.link and self.access(item.link, extra, dot_files=False) == "write":
                raise link_refusal(item, grant)
        for grant in written_tops(self.snapshot):
            dots = self.dot_files.get(grant.target or "")
            for where, what, change in dots.refusals if dots else ():
                raise LaunchError(
                    f"lnk reads {where} (a hook git runs as you, or what it sources) for "
                    f"what it runs, and the sandbox writes {grant.target}: {what}; so the "
                    "launch is refused",
                    hint=f"{change}; lnk reads the hooks git runs as you for what they "
                    "run, and refuses what it cannot bound (docs/runs-as-you.md)")
            for path, why in dots.hard_linked if dots else ():
                raise LaunchError(
                    f"{path} ({why}) has more than one name (a hard link) on the "
                    f"filesystem of {grant.target}, which the sandbox writes: its other "
                    "name may lie there, and writing it would change what runs as you, "
                    "so the launch is refused",
                    hint=f"give {path} one name: make the other a symbolic link to it, "
                    "or a copy")

    def working_directory_problem(self) -> SpecError | None:
        """Why the command could not start in the working directory (grants.py)."""
        return working_directory_problem(self.snapshot, self.system)

    def held(self) -> tuple[tuple[Grant, Protected], ...]:
        """The protections of `protections` missing now that a program could make: each
        is held by a placeholder for the run (its `placeholder`)."""
        return tuple((g, p) for g, p in self.protections if not p.exists and p.placeholder)

    # What a backend finds on the host and closes besides the rules (Linux: path sockets
    # under the grants, places hidden by their names), and lnk-sandbox's own folders, are
    # judged against the spec here, whatever the mechanism that closes them.

    def names_socket(self, path: str) -> bool:
        """Whether the spec names the socket at `path` itself: as a grant of its own, or
        in [network] unix; any other socket in a granted folder is closed (connect() needs
        no write right, so a read grant would hand the sandbox every agent listening)."""
        snapshot = self.snapshot
        return any(g.target == path and not g.is_dir for g in snapshot.visible()) or any(
            s.target == path for s in snapshot.network.sockets())

    def names_inside(self, place: str) -> bool:
        """Whether a grant names `place` or something inside it: a place hidden by its
        name alone (secret_names.py) stays open where the spec opened it."""
        return any(is_within(g.target, place) for g in self.snapshot.visible() if g.target)

    def cached(self, path: str) -> bool:
        """Whether `path` is in one of lnk-sandbox's private caches (caches.py): it holds
        nothing of the person's, so nothing there is hidden."""
        return any(is_within(path, cache.path) for cache in self.snapshot.caches)


def sees(effect: Effect | None) -> bool:
    """Whether a path under a rule of `effect` is seen: read, written, or kept read-only."""
    return effect in ("read", "write", "keep")


def needed(rule: ViewRule, under: Effect | None) -> bool:
    """Whether laying `rule` over what decides for its path now (`under`) changes what
    the sandbox sees: a hide where the sandbox sees the path, a rule keeping it read-only
    where the sandbox writes it, a grant always (what is laid after it may need it)."""
    if rule.effect == "hide":
        return sees(under)
    if rule.effect == "keep":
        return under == "write"
    return True


class Laying:
    """A backend's rules laid one at a time, outer to inner, each after what it narrows,
    as its mechanism lays them (Linux's mounts: a later mount covers an earlier one at
    the same path). What decides for a path is what decides in the view: the deepest
    rule holding it, of one folder the one laid last; so each rule is judged by what is
    laid before it (`needed`), with the view's one judgement (`grants.deepest`)."""

    def __init__(self, rules: Iterable[ViewRule] = ()) -> None:
        self.rules: list[ViewRule] = []
        self._at: list[tuple[str, ViewRule]] = []  # (folder, rule), as deepest takes them
        self._paths: set[str] = set()
        for rule in rules:
            self.lay(rule)

    def lay(self, rule: ViewRule) -> None:
        self.rules.append(rule)
        self._at.append((rule.path, rule))
        self._paths.add(rule.path)

    def has(self, path: str) -> bool:
        """Whether a rule is laid at `path` itself."""
        return path in self._paths

    def decides(self, path: str, *, strict: bool = False) -> ViewRule | None:
        """The rule laid so far that decides for `path`; `strict`: those at `path` itself
        left out (what holds it)."""
        if strict and path in self._paths:
            return deepest(path, ((folder, r) for folder, r in self._at if folder != path))
        return deepest(path, self._at)

    def access(self, path: str, *, strict: bool = False) -> Effect | None:
        rule = self.decides(path, strict=strict)
        return rule.effect if rule is not None else None

    def needs(self, rule: ViewRule) -> bool:
        """Whether `rule` changes what is laid so far at its path (`needed`)."""
        return needed(rule, self.access(rule.path))


def _deciding(path: str, system: Iterable[str], rules: Iterable[ViewRule], *,
              strict: bool = False) -> ViewRule | None:
    """The one judgement (View.decides): the system folders laid first, then `rules` by
    their effect, each kind in its given order; the deepest holding `path` decides, of
    one folder the one laid last."""
    laid = [ViewRule(folder, "read", True, SYSTEM_FOLDER, SYSTEM_FOLDER)
            for folder in system]
    laid += sorted(rules, key=lambda r: -1 if r.pattern else _LAID[r.effect])
    placed = ((pattern_folder(path, r.path) if r.pattern else r.path, r) for r in laid)
    return deepest(path, ((folder, r) for folder, r in placed
                          if folder is not None and not (strict and folder == path)))


def opened_by(grant: Grant, item: Protected) -> str | None:
    """The path `files.write_dot_files` names one by one (`./.env`) that opens the
    protected `item` of `grant`'s top: it is that path or inside it; None if none."""
    for name in grant.opened:
        path = f"{grant.target}/{name}"
        if is_within(item.path, path) or (item.placeholder is not None
                                          and is_within(item.placeholder, path)):
            return path
    return None


def written_tops(snapshot: Snapshot, *, opened_too: bool = False) -> tuple[Grant, ...]:
    """The write grants of a folder whose top is looked at for dot files: those whose
    dot files are protected, and with `opened_too` those `write_dot_files` opens (which
    `describe` names as opened)."""
    return tuple(g for g in snapshot.grants if g.access == "write" and g.target
                 and g.is_dir and (opened_too or not g.dot_files_writable))


def dot_files_of(snapshot: Snapshot, *, opened_too: bool = False) -> dict[str, DotFiles]:
    """What is at the top of each folder of `written_tops`, by its target: read from the
    host once per launch (dotfiles.analyze), the places that run as the person in home
    found once for all of them. A grant under `write_dot_files` asks for no commit
    check: its dot files are the sandbox's to write anyway."""
    from .home_places import home_places

    tops = written_tops(snapshot, opened_too=opened_too)
    places = home_places(snapshot.home) if tops else ()
    written = snapshot.written()
    found: dict[str, DotFiles] = {}
    for grant in tops:
        assert grant.target is not None
        remembered = _remembered(snapshot.lnk_home, grant.target)
        found[grant.target] = dots = analyze(
            grant.target, home=snapshot.home,
            commit=grant.commit and not grant.dot_files_writable, places=places,
            written=written, remembered=remembered)
        if dots.below and set(dots.below) != set(remembered):
            _remember(snapshot.lnk_home, grant.target, dots.below)
    return found


def _remembered(lnk_home: str, top: str) -> tuple[tuple[str, str], ...]:
    """What earlier launches found below the written folder `top` ($LNK_HOME/below): the
    memory of `top` and of each folder above it. A launch at `~/src` that found
    `~/src/zz/app` holds it for a run that writes `~/src/zz`, whose own walk a first run
    can exhaust; what a launch below `top` found is in `top`'s memory already
    (`_remember` keeps it in every folder's above)."""
    from . import state
    from .below_top import memory_name, parse_memory

    found: dict[tuple[str, str], None] = {}
    for folder in _up_from(top):
        try:
            kept = parse_memory(state.read(lnk_home, memory_name(folder), limit=1 << 20),
                                folder)
        except OSError:
            continue
        found.update((item, None) for item in kept
                     if item[0] == top or item[0].startswith(top.rstrip("/") + "/"))
    return tuple(found)


def _up_from(top: str) -> list[str]:
    """`top` and each folder above it, to `/`."""
    chain = [top]
    while (parent := os.path.dirname(chain[-1])) != chain[-1]:
        chain.append(parent)
    return chain


def _remember(lnk_home: str, top: str, items: tuple[tuple[str, str], ...]) -> None:
    """Keep what this launch holds below `top` for the next ones, in `top`'s memory and
    added to the memory of each folder above it, so that a later run writing a folder
    above finds it without its walk reaching it. A write that fails (a full disk) leaves
    a memory as it was, and this launch holds what it found."""
    from . import state
    from .below_top import memory_data, memory_name, parse_memory

    for folder in _up_from(top):
        kept: tuple[tuple[str, str], ...] = ()
        if folder != top:
            try:
                kept = parse_memory(state.read(lnk_home, memory_name(folder),
                                               limit=1 << 20), folder)
            except OSError:
                kept = ()
            if set(items) <= set(kept):
                continue
        merged = tuple(dict.fromkeys((*kept, *items)))
        try:
            state.write_atomically(lnk_home, memory_name(folder), memory_data(folder, merged))
        except OSError:
            pass


def view_of(snapshot: Snapshot, system: tuple[str, ...],
            dot_files: Mapping[str, DotFiles] = MappingProxyType({})) -> View:
    """The view of `snapshot` with the dot files found (pure)."""
    protections: list[tuple[Grant, Protected]] = []
    for grant in written_tops(snapshot):
        dots = dot_files.get(grant.target or "")
        protections.extend((grant, item) for item in (dots.protected if dots else ())
                           if opened_by(grant, item) is None)
    rules: list[ViewRule] = []
    for grant in snapshot.grants:
        if grant.target is None:
            continue
        label = grant.key or grant.reason
        effect: Effect = "keep" if grant.access == "protect" else grant.access
        rules.append(ViewRule(grant.target, effect, grant.is_dir, label,
                              f"{label}: {grant.name}", grant=grant))
    for grant in snapshot.patterns:
        assert grant.target is not None
        access: Effect = "keep" if grant.access == "protect" else grant.access
        rules.append(ViewRule(grant.target, access, grant.is_dir, grant.reason,
                              f"{grant.reason}: {grant.name}", grant=grant, pattern=True))
    for _, item in protections:
        rules.append(ViewRule(item.path, "keep", True, f"a dot file ({item.kind})",
                              f"{item.name}: {item.reason}", creation=True, protected=item))
    # What keeps a path read-only matters only where the sandbox would write it (as on
    # Linux a read-only bind is laid only there, and on macOS a deny emitted): left out
    # elsewhere, so that a kept path inside a hidden or unseen one decides nothing. A
    # dot file the spec grants for writing by its own path is the person's choice.
    laid = tuple(r for r in rules if not (r.protected is not None
                                          and r.path in snapshot.written()))
    opening = [r for r in rules if r.effect != "keep"]
    written = set(snapshot.written())
    rules = [r for r in rules if r.effect != "keep" or (
        getattr(_deciding(r.path, system, opening), "effect", None) == "write"
        and not (r.protected is not None and r.path in written))]
    return View(snapshot, system, tuple(rules), tuple(protections),
                MappingProxyType(dict(dot_files)), laid)


def view_for(snapshot: Snapshot, system: tuple[str, ...], *,
             opened_too: bool = False) -> View:
    """The view of `snapshot`, its dot files read from the host now; `opened_too`: the
    tops `write_dot_files` opens read too (what `describe` names as opened)."""
    return view_of(snapshot, system, dot_files_of(snapshot, opened_too=opened_too))


def link_refusal(item: Protected, owner: Grant | None) -> LaunchError:
    """The refusal of a launch whose protected path `item` holds a link (`item.link`)
    where the sandbox writes; `owner`, the write grant whose top it is, where known."""
    where = f", in {owner.target}, which the sandbox writes" if owner is not None \
        else ", where the sandbox writes"
    folder = repr(owner.name) if owner is not None else "the folder"
    return LaunchError(
        f"{item.link} is a link in the path of {item.name} ({item.reason}){where}: it "
        "could point the link elsewhere, so the launch is refused",
        hint=f"replace the link with what it points to, or list {folder} in "
        "files.write_dot_files if the sandbox may change its dot files")
