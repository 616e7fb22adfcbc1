"""The grant snapshot: every name of the policy resolved once, before it is checked.

The snapshot keeps each grant's name as written and its target as resolved now, and is
never resolved again: remembered permissions, the description shown to the person and a
saved wrapped command all carry it. A grant below another grant resolves only the outer
grant's root and keeps its suffix literal, so a link planted later inside a granted
folder redirects nothing; a link already there at resolution is refused with the target
to name instead, since the sandbox itself may have planted it in an earlier run.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from .caches import Cache
from .errors import SpecError
from .limits import RunLimits
from .limits import resolve as resolve_limits
from .netpolicy import NetworkRules, resolve_unix
from .plain import to_plain
from .policy import LNK_HOME_NAME, Access, Context, PathRule, Policy, RunSettings

if TYPE_CHECKING:
    from .hard_links import HardLinked
    from .home_places import Place
    from .mountinfo import Mount
    from .settings_named import Named
from .spec import DEFAULT_SPEC_NAME

SNAPSHOT_VERSION = 1


class Grant(NamedTuple):
    """A path rule with its target. `target` None: an optional path that is missing."""

    name: str
    target: str | None
    access: Access
    reason: str
    key: str | None
    line: int | None
    dot_files_writable: bool = False
    is_dir: bool = True
    commit: bool = False
    opened: tuple[str, ...] = ()  # paths below it files.write_dot_files opens one by one


class Program(NamedTuple):
    """A `[commands]` entry: the name as written and the file it runs."""

    name: str
    target: str


class Snapshot(NamedTuple):
    """Everything a launch needs from the spec, resolved; serializable as JSON."""

    version: int
    source: str
    home: str
    cwd: str
    lnk_home: str
    uid: int
    grants: tuple[Grant, ...]
    programs: tuple[Program, ...] | None
    settings: RunSettings
    network: NetworkRules = NetworkRules()
    caches: tuple[Cache, ...] = ()
    limits: RunLimits | None = None  # None: a snapshot saved before [limits]; the defaults
    # Rules standing for every path a pattern names (home_config.py): home's dot entries
    # hidden, a toolchain's folders reopened; each `target` a pattern over the resolved
    # home, never a grant's own target (so nothing that walks `grants` meets one).
    patterns: tuple[Grant, ...] = ()

    def plain(self) -> dict[str, Any]:
        """The snapshot as JSON-ready data, its run settings at the top level as saved
        snapshots and remembered permissions' digests have always had them."""
        data: dict[str, Any] = to_plain(self._replace(network=NetworkRules()))
        data.update(data.pop("settings"))
        data["network_allow"] = list(self.network.texts("allow"))
        data["network"] = self.network.plain()
        return data

    def to_json(self) -> str:
        return json.dumps(self.plain(), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> Snapshot:
        data: dict[str, Any] = json.loads(text)
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"snapshot version {data.get('version')!r} is not supported")
        programs = data["programs"]
        return Snapshot(
            version=data["version"],
            source=data["source"],
            home=data["home"],
            cwd=data["cwd"],
            lnk_home=data["lnk_home"],
            uid=data["uid"],
            grants=tuple(_grant(g) for g in data["grants"]),
            programs=None if programs is None else tuple(Program(**p) for p in programs),
            settings=RunSettings(
                network_mode=data["network_mode"],
                env_keep=tuple(data["env_keep"]),
                env_assign=tuple((k, v) for k, v in data["env_assign"]),
                agent=data["agent"],
                session=data["session"]),
            network=NetworkRules.from_plain(data.get("network"), data["network_allow"]),
            caches=tuple(Cache(**c) for c in data.get("caches", ())),
            limits=(RunLimits(**{**data["limits"],
                                 "written": tuple(data["limits"].get("written", ()))})
                    if data.get("limits") else None),
            patterns=tuple(_grant(g) for g in data.get("patterns", ())),
        )

    def run_limits(self) -> RunLimits:
        """The run's limits: as resolved when the snapshot was made, or the defaults."""
        if self.limits is not None:
            return self.limits
        from .limits import Limits, resolve

        return resolve(Limits())

    def written(self) -> tuple[str, ...]:
        """The folders (and files) the sandbox writes, resolved."""
        return tuple(g.target for g in self.grants if g.access == "write" and g.target)

    def visible(self) -> tuple[Grant, ...]:
        """Read and write grants that exist."""
        return tuple(g for g in self.grants if g.access in ("read", "write") and g.target)


def _grant(data: dict[str, Any]) -> Grant:
    """A grant read back from JSON (its lists as tuples, as made)."""
    return Grant(**{**data, "opened": tuple(data.get("opened", ()))})


def is_within(path: str, folder: str) -> bool:
    """True when `path` is `folder` or inside it (both absolute and normalized)."""
    return folder in (path, "/") or path.startswith(folder + "/")


def depth(path: str) -> int:
    """How many folders deep `path` is: "/" 0, "/usr" 1, "/usr/bin" 2."""
    return 0 if path == "/" else path.count("/")


Rule = TypeVar("Rule")


def deepest(path: str, rules: Iterable[tuple[str, Rule]]) -> Rule | None:
    """The rule that decides for `path`, of `rules` given as (folder, rule): the one at
    the deepest folder holding `path`, or None when no folder holds it.

    The one tie-break, everywhere a rule is judged (the view, Linux's mount plan and
    network, macOS's profile, check, describe): of rules at the same folder, the one
    given last decides. Each caller gives them in the order they are laid, so that this
    is what the mechanism does: on Linux a later mount covers an earlier one at the same
    path; on macOS a rule comes after the ones it narrows (a hide after a grant), and
    Seatbelt's last matching rule wins. Folders of the same depth that both hold a path
    are the same folder, so nothing else is left to break a tie.
    """
    best: Rule | None = None
    best_depth = -1
    for folder, rule in rules:
        if is_within(path, folder) and (here := depth(folder)) >= best_depth:
            best, best_depth = rule, here
    return best


def expand_name(name: str, home: str, cwd: str, lnk_home: str) -> str:
    """A name as written, with `~`, `.` and `$LNK_HOME` expanded; links not followed."""
    if name == "~" or name.startswith("~/"):
        return os.path.normpath(home + name[1:])
    if name == "." or name.startswith("./"):
        return os.path.normpath(cwd + name[1:])
    if name == LNK_HOME_NAME or name.startswith(LNK_HOME_NAME + "/"):
        return os.path.normpath(lnk_home + name[len(LNK_HOME_NAME):])
    return os.path.normpath(name)


class _Resolver:
    def __init__(self, policy: Policy, context: Context):
        self.policy = policy
        self.context = context
        self.lnk_home_real = os.path.realpath(context.lnk_home)
        self.home_real = os.path.realpath(context.home)
        self._places: tuple[Place, ...] | None = None
        self._named: tuple[Named, ...] | None = None
        self._hard: tuple[HardLinked, ...] | None = None
        self._mounts: list[Mount] | None = None
        self._aliases: list[str] | None = None  # home_aliases(), once per resolve

    def error(self, rule: PathRule, message: str, hint: str | None = None) -> SpecError:
        return SpecError(
            f"{rule.name!r}: {message}",
            file=self.policy.source,
            key=rule.key or rule.reason,
            line=rule.line,
            hint=hint,
        )

    def expand(self, name: str) -> str:
        return expand_name(name, self.context.home, self.context.cwd, self.context.lnk_home)

    def resolve_root(self, rule: PathRule, expanded: str) -> tuple[str | None, bool]:
        try:
            target = os.path.realpath(expanded, strict=True)
            is_dir = stat.S_ISDIR(os.stat(target).st_mode)
        except OSError as err:
            self.missing(rule, expanded, err)
            return None, True
        return target, is_dir

    def resolve_below(
        self, rule: PathRule, expanded: str, outer: str, outer_target: str
    ) -> tuple[str | None, bool]:
        """Outer root resolved, suffix literal: any link in the suffix is refused."""
        suffix = expanded[len(outer):].strip("/").split("/") if expanded != outer else []
        path = outer_target
        is_dir = os.path.isdir(outer_target)
        for part in suffix:
            path = os.path.join(path, part)
            try:
                mode = os.lstat(path).st_mode
            except OSError as err:
                self.missing(rule, expanded, err)
                return None, True
            if stat.S_ISLNK(mode):
                raise self.error(
                    rule,
                    f"{path} is a link (to {os.readlink(path)}) inside the grant {outer!r}; "
                    "inside a granted folder only the folder itself is resolved",
                    hint="name the link's target in the spec if that is what you mean "
                    "(the sandbox may have planted the link)",
                )
            is_dir = stat.S_ISDIR(mode)  # no second stat: the path could change in between
        return path, is_dir

    def missing(self, rule: PathRule, expanded: str, err: OSError) -> None:
        """A missing path: left out when it may be, else the SpecError naming it."""
        if rule.optional or rule.access in ("hide", "protect"):
            return
        raise self.error(
            rule,
            f"{expanded} cannot be granted: {err.strerror}",
            hint="create it, or write the grant as { path = \"...\", optional = true }",
        )

    def check_access(self, rule: PathRule, expanded: str, target: str) -> None:
        if rule.access not in ("read", "write") or rule.name.startswith(LNK_HOME_NAME):
            return
        for path in {expanded, target}:
            if is_within(path, self.context.lnk_home) or is_within(path, self.lnk_home_real):
                raise self.error(
                    rule,
                    f"{path} is inside lnk-sandbox's settings ($LNK_HOME = "
                    f"{self.context.lnk_home}), which every sandbox is denied",
                    hint="use `agent = \"NAME\"` or `session = \"ID\"` for a folder kept there",
                )
        self.check_home_alias(rule, target)
        if rule.access == "write":
            if target == "/":
                raise self.error(rule, "resolves to '/', and a write grant of '/' opens "
                                 "every file", hint="grant the folders the command writes")
            for home in {self.context.home, self.home_real}:
                if is_within(home, target):
                    raise self.error(
                        rule,
                        f"resolves to {target}, which is or holds the home folder; a sandbox "
                        "writing there could change what runs at your next login "
                        "(.bashrc, .profile, .ssh, autostart)",
                        hint="grant folders inside home instead, such as '~/projects/x'",
                    )
            self.check_home_places(rule, {expanded, target})
            self.check_named(rule, {expanded, target})
            self.check_hard_links(rule, target)

    def check_home_alias(self, rule: PathRule, target: str) -> None:
        """Refuse a read or write grant that reaches home by a path that is not home's
        own: a bind mount (a second disk's /data/home/me bound at /home/me, and so also
        at /data/home/me; a container's volume) or a macOS firmlink
        (/System/Volumes/Data/Users/me). Every rule of home's (its dot entries hidden,
        what runs as the person held) follows home's path, and no name tells that the
        same folder is there too. Found two ways: where home's file system shows home
        again (the mount table: each mount of its device whose top holds home's folder),
        and by the folder's identity, device and inode (the grant and each folder above
        it against home; the grant against each folder above home), which macOS's
        firmlinks, in no table, also meet."""
        home = self.home_real
        if home == "/":
            return
        for alias in self.home_aliases():
            if is_within(target, alias) or is_within(alias, target):
                how = "lies inside" if target != alias and is_within(target, alias) \
                    else "is" if target == alias else "holds"
                raise self._alias(rule, target, how, alias, home)
        own = _identity(home)
        if own is None:
            return
        seen = target
        while seen != "/":  # the grant inside home, by another path
            if _identity(seen) == own and seen not in (home, self.context.home):
                raise self._alias(rule, target, "lies inside", seen, home)
            seen = os.path.dirname(seen)
        identity = _identity(target)
        above = os.path.dirname(home)
        while identity is not None and above != "/":  # the grant holds home, elsewhere
            if _identity(above) == identity and above != target:
                raise self._alias(rule, target, "holds", target, above)
            above = os.path.dirname(above)

    def home_aliases(self) -> list[str]:
        """Every other path the mount table shows home at: the mount holding home gives
        home's folder within its file system; each other mount of that device whose
        top holds that folder shows home again, below its mount point."""
        if self._aliases is not None:
            return self._aliases
        self._aliases = []
        home = self.home_real
        mounts = self.mounts()
        holding = [m for m in mounts if is_within(home, m.point)]
        if not holding:
            return []
        # The deepest, the last of those (a later mount at one point hides the earlier).
        own = max(enumerate(holding), key=lambda item: (len(item[1].point), item[0]))[1]
        within = os.path.normpath(os.path.join(own.root, home[len(own.point):].lstrip("/")))
        aliases = []
        for mount in mounts:
            if mount.device != own.device or not is_within(within, mount.root):
                continue
            alias = os.path.normpath(os.path.join(mount.point,
                                                  within[len(mount.root):].lstrip("/")))
            if alias not in (home, self.context.home):
                aliases.append(alias)
        self._aliases = aliases
        return aliases

    def _alias(self, rule: PathRule, target: str, how: str, alias: str,
               real: str) -> SpecError:
        return self.error(
            rule,
            f"resolves to {target}, which {how} your home folder by another path "
            f"({alias} is {real}: a bind mount or a firmlink): lnk's rules for home "
            "(its dot entries hidden, what runs as you held) follow home's own path",
            hint="grant it by its path in home ('~/...'), where those rules hold")

    def mounts(self) -> list[Mount]:
        """This mount namespace's mounts, read once per resolve (none on macOS)."""
        if self._mounts is None:
            from .mountinfo import read_mounts

            self._mounts = read_mounts()
        return self._mounts

    def check_home_places(self, rule: PathRule, paths: set[str]) -> None:
        """A write grant that is or holds a holder of what runs as the person (~/.config,
        ~/.local/bin, ~/.cache, a PATH folder...), lies inside a place that runs
        (~/.config/git, ~/.pyenv, ~/.npm/_npx...), or holds a link on the way to one,
        is refused as home is: by the places' names and where their links lead, once,
        here (home_places.py). On the default spec, so is a working directory inside a
        folder of credentials."""
        homes = dict.fromkeys((self.context.home, self.home_real))
        for place in self.places():
            for path in sorted(paths):
                self.check_place(rule, place, path)
        if self.policy.source == DEFAULT_SPEC_NAME and rule.name == ".":
            from .policy import credential_names

            for home in homes:
                for name in credential_names():
                    kept = os.path.normpath(home + name[1:])
                    for path in paths:
                        if is_within(path, kept):
                            raise self.error(
                                rule,
                                f"the working directory {path} is inside {name}, where "
                                "credentials are kept; the default spec would let a "
                                "sandbox write there",
                                hint="run it from a project folder, or write a spec that "
                                "grants this folder by name (--spec)",
                            )

    def check_named(self, rule: PathRule, paths: set[str]) -> None:
        """Refuse a write grant (as written or resolved) that is a file or folder the
        person's own settings name, or lies inside a folder whose entries git runs
        (settings_named.py): the grant would be what runs as the person, whole, and
        holding it read-only would leave it nothing to write. One that holds what they
        name keeps it read-only instead (dotfiles.py)."""
        self.check_repository_hooks(rule, paths)
        from .fish_variables import hint, unbounded_paths, universal_variables
        from .person_settings import shell_sources

        refusals = (*shell_sources(self.context.home).refusals,
                    *universal_variables(self.context.home).refusals)
        for where, what, change in refusals[:1]:
            raise self.error(
                rule,
                f"resolves to {sorted(paths)[0]}, which this run writes, and lnk cannot "
                f"judge what {where} runs: {what}",
                hint=f"{change}; lnk reads your shells' startup files for what they run, "
                "and refuses what it cannot bound (docs/runs-as-you.md)")
        from .settings_named import hook_refusals

        for where, what, change in hook_refusals(self.context.home)[:1]:
            raise self.error(
                rule,
                f"resolves to {sorted(paths)[0]}, which this run writes, and lnk cannot "
                f"judge what {where} runs, a hook git runs as you in every repository: "
                f"{what}",
                hint=f"{change}; lnk reads the hooks git runs as you for what they run, "
                "and refuses what it cannot bound (docs/runs-as-you.md)")
        from .environment_paths import unbounded

        for variable, _, bound in (*unbounded(os.environ, self.context.home),
                                   *unbounded_paths(self.context.home)):
            if bound is not None:
                # where it leads too: `cd ~/links/h` to a link to home is `cd ~` (red
                # team 26g), what follows a relative name into the grant
                leads = dict.fromkeys((bound, os.path.realpath(bound)))
                hit = next((p for p in sorted(paths)
                            if any(is_within(p, b) for b in leads)), None)
                if hit is None:
                    continue
                raise self.error(
                    rule,
                    f"resolves to {hit}, which this run writes, and your environment's "
                    f"{variable} names a pattern in {bound} (`*`, `?`, `[...]` or "
                    "`{a,b}`), or a folder it changes to (`cd`, `-C`) or looks programs "
                    "up in (a PATH it assigns): what it runs there, the shell that runs "
                    "it finds when it runs, any file there",
                    hint=f"{hint(variable)}, or write the path out; lnk judges every "
                    "path your environment names, and refuses what it cannot bound "
                    "(docs/runs-as-you.md)")
            raise self.error(
                rule,
                f"resolves to {sorted(paths)[0]}, which this run writes, and your "
                f"environment's {variable} names a path whose start only the shell that "
                "runs it knows (a command's output, `$(...)` or a backquote, or a bash "
                "expansion), which may be a file here",
                hint=f"{hint(variable)}, or write the path out; lnk judges every path "
                "your environment names, and refuses what it cannot bound "
                "(docs/runs-as-you.md)")
        for named in self.named():
            for path in sorted(paths):
                link = next((link for link in named.links if is_within(link, path)), None)
                if link is not None:
                    raise self.error(
                        rule,
                        f"resolves to {path}, which holds {link}, a link on the way from "
                        f"{named.path} to {named.real} ({named.why}); a sandbox writing "
                        "there could point it elsewhere, and change what runs as you",
                        hint=f"grant a folder inside {path} that holds neither {link} nor "
                        f"{named.real}, or replace the link with what it points to")
                hit = next((p for p in named.paths() if p == path or (
                    named.kind == "folder" and is_within(path, p))), None)
                if hit is None:
                    continue
                how = "is" if hit == path else "lies inside"
                led = f" (where {named.path} leads)" if hit != named.path else ""
                where = f"{led}, named by your settings" if how == "is" \
                    else f", inside {hit}{led}"
                raise self.error(
                    rule,
                    f"resolves to {path}{where}: {named.why}; a sandbox writing there "
                    "could change what runs as you",
                    hint=(f"grant a folder that holds {hit} (it stays read-only in the "
                          "run)" if how == "is" else f"grant a folder outside {hit}")
                    + ", or take it out of your settings")

    def check_hard_links(self, rule: PathRule, target: str) -> None:
        """Refuse a write grant on the filesystem of a file that runs as the person and
        has more than one name (hard_links.py): its other name may lie in the grant,
        where no read-only name of it holds, and nothing short of walking the grant to
        its bottom would find it."""
        if self._hard is None:
            from .hard_links import hard_linked

            self._hard = hard_linked(self.places(), self.named())
        if not self._hard:
            return
        try:
            device = os.stat(target).st_dev
        except OSError:
            return
        for item in self._hard:
            if item.device != device:
                continue
            led = f" (a link to {item.real})" if item.real != item.path else ""
            raise self.error(
                rule,
                f"resolves to {target}, on the filesystem of {item.path}{led}, which has "
                f"{item.names} names (hard links): {item.what}; its other name may lie "
                "where the sandbox writes, and writing it there would change what runs as "
                "you",
                hint=f"give {item.real} one name: make the other a symbolic link to it "
                f"(ln -sf {item.real} OTHER), or a copy (cp --remove-destination)")

    def check_repository_hooks(self, rule: PathRule, paths: set[str]) -> None:
        """Refuse a write grant that is, or lies inside, a hooks folder of a repository
        around it (its `.git/hooks`, or where its own or the person's `core.hooksPath`
        points, a relative `.githooks` included: dotfiles.hooks_folders): git in that
        repository runs what the sandbox writes there. A grant of the repository itself
        keeps its hooks read-only instead (dotfiles.py)."""
        from .dotfiles import hooks_folders

        for path in sorted(paths):
            top = os.path.dirname(path)
            while True:
                if os.path.lexists(os.path.join(top, ".git")):
                    for hooks, why in hooks_folders(top, self.context.home):
                        if is_within(path, hooks):
                            where = "is" if hooks == path else f"lies inside {hooks},"
                            raise self.error(
                                rule,
                                f"resolves to {path}, which {where} a hooks folder of the "
                                f"repository {top} ({why}); a sandbox writing there could "
                                "change what runs as you",
                                hint=f"grant {top} (its hooks stay read-only in the run), "
                                "or a folder outside it")
                if top == "/":
                    break
                top = os.path.dirname(top)

    def named(self) -> tuple[Named, ...]:
        """What the person's own settings name (settings_named.py), once per snapshot."""
        if self._named is None:
            from .settings_named import named_by_settings

            self._named = named_by_settings(self.context.home)
        return self._named

    def places(self) -> tuple[Place, ...]:
        """The places that run as the person, resolved once per snapshot."""
        if self._places is None:
            from .home_places import home_places

            self._places = home_places(self.context.home)
        return self._places

    def covered(self, link: str) -> bool:
        """Whether a link lies below a folder place (a virtual environment's
        bin/python): read-only with it wherever a grant holds it, so it cannot be
        re-pointed; only a link at or above a place could."""
        return any(p.kind == "folder" and not p.holder and not p.environment and any(
            link != folder and is_within(link, folder) for folder in (p.path, p.real))
            for p in self.places())

    def check_place(self, rule: PathRule, place: Place, path: str) -> None:
        """Refuse `path` (a write grant, as written or resolved) when it is or holds
        `place` as a holder, lies inside it as a place, or holds a link on its way."""
        from .fish_variables import hint

        led = f" (a link to {place.real})" if place.real != place.path else ""
        if place.command:
            self.check_command(rule, place, path)
        if place.environment and any(is_within(path, p) for p in (place.path, place.real)):
            return  # the grant is what the variable names, or inside it: the person's
                    # choice (PROJECTS=~/src and a grant of ~/src/x), judged no further
        if place.holder:
            held = next((p for p in (place.path, place.real) if is_within(p, path)), None)
            if held is not None:
                shown = place.name if held == place.path else f"{held}, where {place.name} leads"
                raise self.error(
                    rule,
                    f"resolves to {path}, which is or holds {shown}: {place.what}; a "
                    "sandbox writing there could change what runs as you",
                    hint=_holder_hint(place, path),
                )
        elif (is_within(path, place.path) or is_within(path, place.real)) and \
                not place.linked:  # a link's own target is kept read-only (dotfiles.py)
            raise self.error(
                rule,
                f"resolves to {path}, inside {place.name}{led}: {place.what}; a sandbox "
                "writing there could change what runs as you",
                hint=_place_hint(place),
            )
        link = next((link for link in place.links if is_within(link, path)
                     and not self.covered(link)
                     and not (place.linked and link == place.path)), None)
        if link is not None:
            raise self.error(
                rule,
                f"resolves to {path}, which holds {link}, a link on the way from "
                f"{place.name} to {place.real} ({place.what}); a sandbox writing there "
                "could point it elsewhere, and change what runs as you",
                hint=f"grant a folder inside {path} that holds neither {link} nor "
                f"{place.real}, or replace the link with what it points to"
                + (f", or {hint(place.environment)}" if place.environment else ""),
            )

    def check_command(self, rule: PathRule, place: Place, path: str) -> None:
        """Refuse `path` (a write grant) when it is, or lies inside, what a variable read
        as a command names (`place.command`: environment_paths.Reading). Its program
        may run any file of that folder (`find ~/w -exec {} \\;`, `python3 -c
        "os.chdir(...)"`, `xargs`, `run-parts ~/w`), and a named folder that is the
        grant holds nothing; telling such a program from one that only lists
        (`fd . ~/src`) would take a list of programs. Not for home, a folder holding it
        or `/` (`fd -t d . ~`, fzf's FZF_ALT_C_COMMAND, is common, and every grant of
        home's lies there), which environment_paths leaves out by name and this by
        where it leads; nor for a path or a list (`PROJECTS=~/src`), the person's
        choice of folders."""
        homes = (self.context.home, self.home_real)
        named = next((f for f in dict.fromkeys((place.path, place.real))
                      if is_within(path, f) and not any(is_within(h, f) for h in homes)),
                     None)
        if named is None:
            return
        from .fish_variables import hint

        # The variable is named, never its value: a command line may carry a token.
        variable = place.command
        where = place.name if named == place.path else f"{named}, where {place.name} leads"
        how = "is" if path == named else "lies inside"
        raise self.error(
            rule,
            f"resolves to {path}, which {how} {where}, named by your environment's "
            f"{variable}, which runs a command: what it runs may be any file "
            "of that folder (`find DIR -exec`, a `cd` or `chdir` there, `xargs`), which "
            "this run writes",
            hint=f"{hint(variable)}, or grant a folder it does not name; lnk judges "
            "every path your environment names "
            "(docs/runs-as-you.md)")

    def resolve(self) -> Snapshot:
        rules = self.policy.rules
        expanded = [self.expand(rule.name) for rule in rules]
        # Outer before inner, '/' first of all: it holds every other grant.
        order = sorted(range(len(rules)),
                       key=lambda i: (0 if expanded[i] == "/" else expanded[i].count("/"), i))
        roots: list[tuple[str, str]] = []  # (expanded, target) of resolved read/write grants
        grants: dict[int, Grant] = {}
        for i in order:
            rule, path = rules[i], expanded[i]
            outer = None
            if rule.access in ("read", "write"):
                outer = next(((e, t) for e, t in roots if is_within(path, e)), None)
            if outer is not None:
                target, is_dir = self.resolve_below(rule, path, *outer)
            else:
                target, is_dir = self.resolve_root(rule, path)
            if target is not None:
                self.check_access(rule, path, target)
                if rule.access in ("read", "write") and outer is None:
                    roots.append((path, target))
            grants[i] = Grant(rule.name, target, rule.access, rule.reason, rule.key,
                              rule.line, rule.dot_files_writable, is_dir, rule.commit,
                              rule.opened)
        ordered = self.check_contradictions(tuple(grants[i] for i in range(len(rules))))
        ordered, patterns = self.home_rule(ordered)
        return Snapshot(
            version=SNAPSHOT_VERSION,
            source=self.policy.source,
            home=self.context.home,
            cwd=self.context.cwd,
            lnk_home=self.context.lnk_home,
            uid=self.context.uid,
            grants=ordered,
            programs=self.programs(ordered),
            settings=self.policy.settings,
            network=resolve_unix(self.policy.network, home=self.context.home,
                                 lnk_home=self.context.lnk_home, source=self.policy.source),
            caches=self.caches(ordered),
            limits=resolve_limits(self.policy.limits),
            patterns=patterns,
        )

    def home_rule(self, grants: tuple[Grant, ...]) -> tuple[tuple[Grant, ...],
                                                           tuple[Grant, ...]]:
        """A read grant of home, or of a folder holding it, shows the person's files, not
        their configuration (home_config.py): home's dot entries hidden by pattern, and
        the places of code that hold no secret reopened, but where the spec has a rule
        of its own. A reopened place is walked from home without following a link: one
        that is missing, or reached through a link, is left out (its target None)."""
        from .home_config import DOT_ENTRIES, HIDDEN_REASON, REOPENED, REOPENED_REASON, is_pattern

        home = self.home_real
        if home == "/" or not any(g.access == "read" and g.target
                                  and is_within(home, g.target) for g in grants):
            return grants, ()
        named = {g.target for g in grants if g.key is not None and g.target}
        hidden = [g.target for g in grants if g.key is not None and g.access == "hide"
                  and g.target]
        patterns = [Grant(DOT_ENTRIES, home + DOT_ENTRIES[1:], "hide", HIDDEN_REASON,
                          None, None)]
        reopened = []
        for entry in REOPENED:
            path = home + entry.name[1:]
            folder = entry.kind == "folder"
            if any(_meets(hide, path) for hide in hidden):
                continue  # the spec hides it, or a folder it could be in: not reopened
            if is_pattern(entry.name):
                patterns.append(Grant(entry.name, path, "read", REOPENED_REASON, None,
                                      None, is_dir=folder))
            elif path not in named:
                reopened.append(Grant(entry.name, _walked(home, path), "read",
                                      REOPENED_REASON, None, None, is_dir=folder))
        return (*grants, *reopened, *self.undotted(grants)), tuple(patterns)

    def undotted(self, grants: tuple[Grant, ...]) -> list[Grant]:
        """home's configuration outside its dot entries (home_hidden.py), hidden where a
        read grant holding home decides for it: a spec's own rule at it or between it
        and home (the person named it) decides instead, and one inside it decides
        there, as `read = ["~", "~/.config/pip"]` does."""
        from . import fish_variables
        from .environment_paths import environment_paths
        from .home_config import REOPENED
        from .home_hidden import ENVIRONMENT_START, PROGRAMS_REASON, found
        from .home_places import CODE_PATHS, home_links, path_folders

        home = self.home_real
        rules = [(g.target, g) for g in grants if g.target and g.access != "protect"]
        code = [home + entry.name[1:] for entry in REOPENED]
        named = [(n.variable, n.path) for n in (
            *environment_paths(os.environ, self.context.home),
            *fish_variables.named_paths(self.context.home))]
        code_paths = [v for v, _ in CODE_PATHS]
        programs = [*(folder for name in ("PATH", *code_paths)
                      for folder in path_folders(os.environ.get(name, ""))),
                    *fish_variables.folders(self.context.home,
                                            *fish_variables.PATH_VARIABLES, *code_paths,
                                            *(v for v, _ in fish_variables.FISH_PATHS))]
        hides: dict[str, Grant] = {}
        for item in found(home, self.context.xdg, home_links(home).links, code,
                          named=named, programs=programs, cwd=self.context.cwd):
            rule = deepest(item.path, rules)
            if rule is None or rule.access != "read" or not is_within(home, rule.target or ""):
                continue
            hides.setdefault(item.path, Grant("~" + item.path[len(home):], item.path, "hide",
                                              item.reason, None, None, is_dir=item.is_dir))
        # A folder of programs inside one the environment names is shown again, as
        # PATH shows it (GOPATH=~/go hidden, ~/go/bin on PATH read), where it really is.
        shown = []
        for folder in dict.fromkeys(os.path.realpath(p) for p in programs):
            hidden = next((h for h in hides.values() if h.is_dir and h.target != folder
                           and h.reason.startswith(ENVIRONMENT_START)
                           and is_within(folder, h.target or "")), None)
            rule = deepest(folder, rules)
            if hidden is not None and rule is not None and rule.access == "read" and \
                    is_within(home, rule.target or "") and os.path.isdir(folder):
                shown.append(Grant("~" + folder[len(home):], folder, "read",
                                   PROGRAMS_REASON, None, None, is_dir=True))
        return [*hides.values(), *shown]

    def caches(self, grants: tuple[Grant, ...]) -> tuple[Cache, ...]:
        """Each private cache where it is mounted, refused where it could run as the
        person or would say two things of one folder (caches.py)."""
        from .caches import store_for
        from .home_places import home_places

        found = []
        for cache in self.policy.caches:
            rule = PathRule(cache.path, "write", False, cache.key, cache.key, cache.line)
            path = os.path.normpath(self.home_real + cache.path[1:])
            walked = self.home_real
            for part in cache.path[2:].split("/"):
                walked = os.path.join(walked, part)
                if os.path.islink(walked):
                    raise self.error(rule, f"{walked} is a link (to {os.readlink(walked)}); "
                                     "a cache is mounted at a real folder in home",
                                     hint="name the folder the tool really uses")
            for home in dict.fromkeys((self.context.home, self.home_real)):
                for place, where in ((p, w) for p in home_places(home)
                                     if not p.linked and not p.environment
                                     for w in dict.fromkeys((p.path, p.real))):
                    # A cache is a tool's store of downloads (wheels, npx's packages):
                    # what one run leaves there the next runs of its scope may run,
                    # as a tool's own cache works, and the person's folder is never
                    # touched. Refused: a place itself, a cache holding a folder whose
                    # files run whatever reads them (a holder: ~/.local/bin, PATH), or
                    # inside a place (~/.config/x); a tool's code cache inside it
                    # (~/.npm/_npx) and a cache inside a holder (~/.cache/pip) are not.
                    if where == path or (is_within(where, path) and place.holder) or (
                            is_within(path, where) and not place.holder):
                        how = ("is" if where == path else "holds"
                               if is_within(where, path) else "is inside")
                        raise self.error(
                            rule, f"{path} {how} {place.name}: {place.what}; what a "
                            "sandbox kept there would run in the next one",
                            hint="name the folder the tool keeps its downloads in, such "
                            "as '~/.cache/NAME'")
            for lnk_home in dict.fromkeys((self.context.lnk_home, self.lnk_home_real)):
                if is_within(path, lnk_home) or is_within(lnk_home, path):
                    raise self.error(rule, f"{path} is or holds lnk-sandbox's settings "
                                     f"($LNK_HOME = {self.context.lnk_home})")
            for grant in grants:
                if grant.access not in ("read", "write") or not grant.target or not grant.key:
                    continue
                inside = is_within(path, grant.target)
                if (inside and grant.access == "write") or (
                        is_within(grant.target, path)):
                    where = "inside" if inside else "around"
                    raise self.error(rule, f"{path} is {where} {grant.key} ({grant.name}), "
                                     "which the spec grants", hint="a folder is either a "
                                     "private cache or granted; keep one of the two")
            store = store_for(self.context.lnk_home, self.policy.source,
                              self.policy.settings.agent,
                              cache.path)
            found.append(Cache(cache.path, path, store, cache.key, cache.line))
        return tuple(found)

    def check_contradictions(self, grants: tuple[Grant, ...]) -> tuple[Grant, ...]:
        """Two names resolving to one target must not ask for different things.

        A default hide gives way to a grant the spec wrote for the same folder (through
        a link): the person named it.
        """
        granted = {g.target: g for g in grants if g.access in ("read", "write") and g.target}
        kept = []
        for grant in grants:
            if grant.access == "hide" and grant.key is None and grant.target in granted:
                continue
            kept.append(grant)
        by_target: dict[str, Grant] = {}
        for grant in kept:
            if grant.target is None or grant.access == "protect":
                continue
            earlier = by_target.setdefault(grant.target, grant)
            if earlier is grant or earlier.access == grant.access:
                continue
            rule = PathRule(grant.name, grant.access, False, grant.reason, grant.key,
                            grant.line)
            raise self.error(
                rule,
                f"resolves to {grant.target}, the same as {earlier.name!r} "
                f"({earlier.key or earlier.reason}), which is {earlier.access}",
                hint="a folder is either hidden, read or written: keep one of the two",
            )
        return tuple(kept)

    def programs(self, grants: tuple[Grant, ...]) -> tuple[Program, ...] | None:
        """Each listed program's file; a bare name is looked up in PATH as the sandbox
        will look it up: the first match in a folder the sandbox sees."""
        if self.policy.programs is None:
            return None
        path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        found = []
        for i, name in enumerate(self.policy.programs):
            written = self.expand(name) if name.startswith("~/") else name
            if "/" in written:
                target: str | None = os.path.realpath(written)
            else:
                target = self.lookup(written, path, grants)
            if target is None or not os.path.isfile(target):
                raise SpecError(
                    f"{name!r} is not a program on this machine"
                    + ("" if "/" in name else " (not found in PATH)"),
                    file=self.policy.source,
                    key=f"commands.programs[{i}]",
                    line=self.policy.programs_line,
                    hint="install it, or remove it from the list",
                )
            found.append(Program(name, target))
        return tuple(found)


    def lookup(self, name: str, path: str, grants: tuple[Grant, ...]) -> str | None:
        first = None
        for folder in path.split(os.pathsep):
            candidate = os.path.join(folder, name)
            if not folder.startswith("/") or not os.access(candidate, os.X_OK):
                continue
            target = os.path.realpath(candidate)
            if not os.path.isfile(target):
                continue
            first = first or target
            if _seen(target, grants, self.context.system_folders):
                return target
        return first


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the folder at `path`, links followed; None where there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _meets(hidden: str, path: str) -> bool:
    """Whether a folder hidden at `hidden` holds `path` (a pattern, perhaps), or holds
    what a folder of it could be: a reopened place never shows what the spec hides."""
    if is_within(path, hidden):
        return True
    want = path.split("/")
    depth_hidden = len(hidden.split("/"))
    return depth_hidden <= len(want) and pattern_folder(
        hidden, "/".join(want[:depth_hidden])) == hidden


def _walked(home: str, path: str) -> str | None:
    """`path` in `home` when it is there, reached from `home` without a link; else None."""
    walked = home
    for part in path[len(home):].strip("/").split("/"):
        walked = os.path.join(walked, part)
        try:
            if stat.S_ISLNK(os.lstat(walked).st_mode):
                return None
        except OSError:
            return None
    return walked


_NARROWER = {"~/.config": "~/.config/NAME", "~/.local": "~/.local/share/NAME",
             "~/.local/share": "~/.local/share/NAME", "~/.cache": "~/.cache/NAME"}


def _holder_hint(place: Place, path: str) -> str:
    """Where to point a grant refused for holding `place`: the narrower folder to grant
    instead, by the kind of holder it is."""
    if place.name in _NARROWER:
        return (f"grant a narrower folder, such as '{_NARROWER[place.name]}' for what one "
                "tool keeps there")
    if place.real != place.path and is_within(place.real, path):
        return (f"grant a folder inside {path} that does not hold {place.real} (where "
                f"{place.name} leads)")
    from .fish_variables import FISH_PATHS, LABEL

    if place.what.startswith("a folder of your PATH") and LABEL in place.what:
        return ("grant a folder that holds no folder of your PATH, or take "
                f"{place.name} out of fish's universal fish_user_paths (where "
                "`fish_add_path` puts it) in fish")
    if place.what.startswith("a folder of your PATH"):
        return ("grant a folder that holds no folder of your PATH, or run lnk from a "
                f"shell whose PATH does not name {place.name} (an active virtual "
                "environment's bin/ is on it)")
    from .home_places import CODE_PATHS

    for variable, _ in (*CODE_PATHS, *FISH_PATHS):
        if place.what.startswith(f"a folder of your {variable}:"):
            return (f"grant a folder inside it, or run lnk with {variable} not naming "
                    f"{place.name} (env -u {variable} lnk ...)")
        if place.what.startswith(f"a folder of your {variable}{LABEL}:"):
            return (f"grant a folder inside it, or take {place.name} out of fish's "
                    f"universal {variable} in fish")
    return "grant a folder outside it, such as a project's"


def _place_hint(place: Place) -> str:
    """Where to point a grant refused for lying inside `place`."""
    if place.what.startswith("what ") and " on your PATH runs" in place.what:
        command = place.what.removeprefix("what ").split(" on your PATH", 1)[0]
        return (f"take {command} off your PATH while a sandbox writes there (npm unlink, "
                "pipx uninstall, or remove its link), or grant a folder outside "
                f"{place.name}")
    if place.instead:
        return (f"give the sandbox a {place.instead} of its own in a folder the spec "
                f"grants (set it in [env] set), rather than writing {place.name}")
    return "grant a folder that holds nothing that runs as you"


def pattern_folder(path: str, pattern: str) -> str | None:
    """The folder `pattern` (a path some of whose components are `*`, any one name, or
    `.*`, any one name starting with a dot) stands for that is or holds `path`: as many
    of `path`'s first components as the pattern has, when each is one the pattern's
    stands for; None when no folder of it holds `path`."""
    from .home_config import matches

    want = pattern.split("/")
    have = path.split("/")
    if len(have) < len(want) or not all(
            matches(h, w) for h, w in zip(have[:len(want)], want, strict=True)):
        return None
    return "/".join(have[:len(want)])


def pattern_paths(pattern: str, limit: int) -> tuple[str, ...]:
    """The paths `pattern` names that exist now, reached without a link: each folder on
    the way a real folder, the last a folder or a regular file; at most `limit`."""
    from .home_config import ANY, ANY_DOT, matches

    found = ["/"]
    parts = [p for p in pattern.split("/") if p]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        reached: list[str] = []
        for folder in found:
            if part in (ANY, ANY_DOT):
                try:
                    with os.scandir(folder) as listing:
                        names = sorted(e.name for e in listing if matches(e.name, part))
                except OSError:
                    continue
            else:
                names = [part]
            for name in names:
                path = os.path.join(folder, name)
                try:
                    mode = os.lstat(path).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(mode) or (last and stat.S_ISREG(mode)):
                    reached.append(path)
        found = reached[:limit]
    return tuple(found)


def placed(path: str, grants: Iterable[Grant],
           patterns: Iterable[Grant] = ()) -> list[tuple[str, Grant]]:
    """(folder, grant) as `deepest` judges them for `path`: each pattern at the folder
    of it that holds `path`, laid first (of rules at one folder, the spec's own rule
    there decides over one lnk-sandbox adds by pattern), then each grant at its target."""
    found = [(folder, g) for g in patterns
             if g.target and (folder := pattern_folder(path, g.target)) is not None]
    found += [(g.target, g) for g in grants if g.target is not None]
    return found


def seen_by(path: str, grants: tuple[Grant, ...],
            patterns: tuple[Grant, ...] = ()) -> Grant | None:
    """The spec's grant through which the sandbox sees `path`, or None: the deepest
    rule holding it decides (a hide deeper than the grant closes it, and home's dot
    entries are hidden by pattern), and a grant inside `path` shows part of it."""
    best = deepest(path, ((t, g) for t, g in placed(path, grants, patterns)
                          if g.access != "protect"))
    if best is not None and best.access in ("read", "write") and best.key:
        return best
    inside = [g for g in grants if g.access in ("read", "write") and g.key and g.target
              and g.target != path and is_within(g.target, path)]
    return inside[0] if inside else None


def seen(path: str, grants: tuple[Grant, ...], system: tuple[str, ...],
         patterns: tuple[Grant, ...] = ()) -> bool:
    """Whether the sandbox sees `path` (read or written): see _seen."""
    return _seen(path, grants, system, patterns)


def _seen(path: str, grants: tuple[Grant, ...], system: tuple[str, ...],
          patterns: tuple[Grant, ...] = ()) -> bool:
    """Whether the sandbox sees `path`: the deepest grant or system folder holding it
    reads or writes it (a hide deeper than it closes it, and a spec's rule at a system
    folder is laid after it, as its mount is; a pattern's rule is laid first)."""
    holders = [(folder, "read") for folder in system]
    holders += [(t, g.access) for t, g in placed(path, grants, patterns)
                if g.access != "protect"]
    return deepest(path, holders) in ("read", "write")


def working_directory_problem(snapshot: Snapshot, system: tuple[str, ...]) -> SpecError | None:
    """Why the command could not start in the working directory, or None when it can.

    A sandbox that does not see the working directory would start the command somewhere
    else (bwrap's fallback is `/`), where a search or a build runs over what it was
    never meant to. Showing the folder anyway would grant what the spec does not, so the
    least that still does the job is to refuse, naming the key that would let it start.
    `system`: the folders every sandbox reads on this OS.
    """
    cwd = snapshot.cwd
    if cwd == "/" or _seen(cwd, snapshot.grants, system, snapshot.patterns):
        return None  # "/" is the sandbox's own root: where it was started
    holder = deepest(cwd, ((t, g) for t, g in placed(cwd, snapshot.grants,
                                                     snapshot.patterns)
                           if g.access == "hide"))
    if holder is not None:
        why = holder.key or holder.reason
        return SpecError(
            f"the working directory {cwd} is hidden from the sandbox ({why}: "
            f"{holder.name}), so the command would start elsewhere",
            file=snapshot.source, key=holder.key, line=holder.line,
            hint="start lnk-sandbox in a folder the spec grants, or grant this one by "
            "its own path")
    return SpecError(
        f"the working directory {cwd} is in no folder the spec grants, so the command "
        "would start elsewhere",
        file=snapshot.source, key="files",
        hint='add "." to files.read (or files.write) to let the sandbox see it, or start '
        "lnk-sandbox in a folder the spec grants")


def home_rule_due(snapshot: Snapshot) -> bool:
    """Whether `snapshot` reads home without hiding home's configuration: one saved
    before the rule (home_config.py), which a launch must not use as it is."""
    home = os.path.realpath(snapshot.home)
    return not snapshot.patterns and home != "/" and any(
        g.access == "read" and g.target and is_within(home, g.target)
        for g in snapshot.grants)


def resolve(policy: Policy, context: Context) -> Snapshot:
    """Resolve every name of the policy once; SpecError names the rule that cannot be."""
    return _Resolver(policy, context).resolve()
