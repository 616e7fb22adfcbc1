"""The macOS profile: a snapshot compiled to Seatbelt's SBPL and its parameters (pure).

Facts (docs/macos.md keeps the sources; nothing here was run on a Mac, [U] marks what
tools/macos_probe.py settles):
- Seatbelt's order (system.py has the whole model): among the rules that carry a filter
  and name the same operation, the last matching one wins; an unfiltered rule is only the
  operation's default; a rule naming a specific operation (file-write-unlink) is tried
  before one naming its wildcard (file-write*), whatever their order. So every file rule
  here carries a filter, allows and denies of a path use the same wildcard operations,
  and the specific ones (the renames and creations refused at the end) are denies no
  allow follows.
- A path reaches the profile only as a parameter (`-D NAME=path`, read by
  `(param "NAME")`): nothing from a spec or the machine is spliced into the text, so no
  path needs SBPL quoting. Comments carry rule keys, printable ASCII only.
- Seatbelt matches resolved paths (/private/tmp, not /tmp): snapshot targets are
  resolved already; a name through a link gets its metadata allowed so it resolves.
- `(subpath P)` alone leaves the first creation of P itself open (Codex), so a protected
  dot file is closed as `(literal P)` and `(subpath P)` both: a missing `.git` cannot be
  made, nor an `.envrc`.
- A volume is case-insensitive by default, and whether `literal`/`subpath` fold case is
  unsettled [U] (regexes do not). So every deny of a path also carries a regex of the
  same paths in any letter case: `.GIT` is closed as `.git` is, whichever way Seatbelt
  matches. Denies are never folded into plain regexes; allows with more than FOLD_AT
  filters are, into regexes of at most REGEX_LIMIT bytes (sandbox-exec refuses a string
  over 1025 bytes, and compiles a few dozen regexes far faster than thousands of path
  filters: sandbox-runtime).
- A path socket is reached by `network-outbound` of its path and made by `network-bind`
  there. A socket is a channel, not something read (mxc): a container engine's socket
  or an SSH agent's under a read grant is a control plane, so sockets are reached only
  in write grants, as a folder the sandbox may change anyway.
- Renaming a folder moves what a path rule closed inside it to a path no rule names;
  making a missing one (as a link, say) points a protected path below it elsewhere. So
  the folders holding a closed path inside a write grant, the grant's own root included,
  can be neither unlinked nor created (sandbox-runtime's move-blocking rules): a hooks
  folder git's settings name below a missing `tools` cannot be planted through a link.

The order, each layer after what it narrows (DESIGN, "macOS mechanism"):
1. `(deny default)`, the operations' own defaults; the process's own needs;
   `[commands]`; system folders and devices; network.
2. Files, in levels. Level 0: the grants (read, then write); then what is closed inside
   them: hidden folders (every agent's folder with `$LNK_HOME`, macOS's own hides), and,
   inside write grants, protected dot files (their first creation too), the installation
   and read grants below a write grant. Level 1: the spec's own folders inside a closed
   one (an agent's own folder, a grant inside a hide), allowed again; then what is closed
   inside those; and so on. A rule is emitted after every rule whose path holds it and
   does the opposite, so the deepest rule decides, as the deepest mount does on Linux;
   an allow follows a deny only where it brings a spec's own folder back.
3. Renames and creations refused; last, the Keychain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..grants import Grant, depth, expand_name, is_within, pattern_folder
from ..home_config import ANY, ANY_DOT
from ..view import View, ViewRule
from . import system
from .programs import Companion
from .regexes import REGEX_LIMIT, any_case, any_case_regexes, chunks, fold, regex_escape

__all__ = ["FOLD_AT", "REGEX_LIMIT", "MacHost", "Profile", "any_case", "any_case_regexes",
           "compile_profile", "fold", "readable", "regex_escape", "sandbox_exec_argv"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
FOLD_AT = 16

READ_OPS = ("file-read*", "file-test-existence", "file-map-executable")
WRITE_OPS = (*READ_OPS, "file-write*", "network-outbound", "network-bind")
HIDE_OPS = WRITE_OPS
KEEP_OPS = ("file-write*", "network-outbound", "network-bind")
EXEC_OP = "process-exec*"
METADATA_OPS = ("file-read-metadata", "file-test-existence")
MOVE_OPS = ("file-write-unlink", "file-write-create")
TERMINAL_OPS = ("file-read*", "file-write-data", "file-ioctl")

Effect = Literal["read", "write", "hide", "keep"]
TEMP = "the run's own temp folder (TMPDIR)"
DEVELOPER = "the developer tools xcode-select names (the xcrun stubs load them)"


@dataclass(frozen=True)
class MacHost:
    """The facts of this launch a profile needs besides the snapshot.

    `home`: the person's home, resolved (their keychains are below it); `temp`: the run's
    own temp folder (TMPDIR), writable, or None; `proxy_ports`: where the supervisor's
    proxy listens on localhost (proxy mode; none: no network); `terminals`: the terminal
    devices the command was given (its stdin, stdout, stderr), openable by name;
    `hides`: macOS's own hides, (path, reason), each left out when the spec names that
    path itself; `companions`: files listed programs run in their place; `developer_dir`:
    the developer tools xcode-select names, made readable where nothing else shows them.
    """

    home: str
    temp: str | None = None
    proxy_ports: tuple[int, ...] = ()
    terminals: tuple[str, ...] = ()
    hides: tuple[tuple[str, str], ...] = ()
    companions: tuple[Companion, ...] = ()
    developer_dir: str | None = None


@dataclass(frozen=True)
class Profile:
    """An SBPL profile and the parameters it reads; `notes` say what was left out."""

    text: str
    parameters: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()
    origins: tuple[tuple[str, str], ...] = ()  # (parameter, the rule it comes from)

    def arguments(self) -> list[str]:
        """sandbox-exec's arguments before the command's `--`."""
        return ["-p", self.text, *(f"-D{name}={value}" for name, value in self.parameters)]

    def listing(self) -> str:
        """The profile, then each parameter with the rule it comes from, then the notes:
        what `plan --os macos` prints and the golden files hold."""
        origins = dict(self.origins)
        lines = [";; ---- parameters (-D NAME=value), each read as (param \"NAME\") ----"]
        for name, value in self.parameters:
            shown = value if value.isprintable() else repr(value)
            lines.append(f"; {name}={shown}    <- {_comment(origins.get(name, ''))}")
        lines += [f";; note: {_comment(note)}" for note in self.notes]
        return self.text + "\n" + "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Rule:
    """One path rule. `label` goes into the profile's comments (keys and fixed words,
    never a path); `why` names the rule fully, for the parameters' origins."""

    path: str
    effect: Effect
    folder: bool
    label: str
    why: str
    creation: bool = False  # closed as literal and subpath: its first creation too
    below_write: bool = False  # a read grant's own protection, below a write grant
    pattern: bool = False  # `path` has `*` or `.*` components: a regex of what it names

    @property
    def anchor(self) -> str:
        """The folder the rule lies in: its path, or a pattern's part before its first
        wildcard (what holds every path it names)."""
        return pattern_anchor(self.path) if self.pattern else self.path

    @property
    def allows(self) -> bool:
        return self.effect in ("read", "write")


@dataclass
class _Params:
    """Parameter names in order of first use; one name per path."""

    values: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    by_path: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def _new(self, prefix: str, value: str, why: str) -> str:
        number = self.counts.get(prefix, 0)
        self.counts[prefix] = number + 1
        name = f"{prefix}_{number}"
        self.values[name] = value
        self.origins[name] = why
        return name

    def path(self, path: str, prefix: str, why: str) -> str:
        if path not in self.by_path:
            self.by_path[path] = self._new(prefix, path, why)
        return self.by_path[path]

    def regex(self, prefix: str, value: str, why: str) -> str:
        return self._new(f"{prefix}_RE", value, why)

    def any_case(self, prefix: str, value: str, why: str) -> str:
        return self._new(f"{prefix}_CASE", value, why)


@dataclass(frozen=True)
class _Filter:
    kind: str  # "subpath", "literal" or "regex" (`path` is then the regex)
    path: str
    label: str
    why: str


def pattern_anchor(pattern: str) -> str:
    """A pattern's components before its first wildcard: the folder holding it all (a
    path without one is its own)."""
    parts = pattern.split("/")
    fixed = next((i for i, part in enumerate(parts) if part in (ANY, ANY_DOT)), len(parts))
    return "/".join(parts[:fixed]) or "/"


def pattern_regex(pattern: str, *, folder: bool, any_letter_case: bool = False) -> str:
    """A pattern as an anchored regex: `*` any one name, `.*` any one name starting
    with a dot; a folder's regex holds what is below it too. `any_letter_case`: its
    fixed names matched in any letter case, as a deny's paths are."""
    spelled = []
    for part in pattern.split("/"):
        if part == ANY:
            spelled.append("[^/]+")
        elif part == ANY_DOT:
            spelled.append("\\.[^/]*")
        else:
            spelled.append(any_case(part) if any_letter_case else regex_escape(part))
    return "^" + "/".join(spelled) + ("(/.*)?$" if folder else "$")


def _comment(text: str) -> str:
    """Printable ASCII only: nothing from a spec ends a comment and starts a rule."""
    return "".join(c if " " <= c <= "~" else "?" for c in text)


def _label(grant: Grant) -> str:
    return grant.key or grant.reason


def _why(grant: Grant) -> str:
    return f"{_label(grant)}: {grant.name}"


def _ancestors(path: str) -> list[str]:
    """Every folder above `path`, outermost first, "/" left out."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


class _Compiler:
    def __init__(self, view: View, host: MacHost, learn: bool):
        self.view = view
        self.snapshot = view.snapshot
        self.host = host
        self.learn = learn
        self.open_exec = learn or self.snapshot.programs is None
        self.params = _Params()
        self.notes: list[str] = []
        self.own = self._own()
        self.rules = self._rules()

    # -- the path rules --------------------------------------------------------------

    def _own(self) -> list[ViewRule]:
        """This launch's rules besides the view's: the run's temp folder, macOS's own
        hides (left out, as the default hides are, where the spec named the path
        itself), and the developer tools where nothing else shows them."""
        own = []
        if self.host.temp is not None:
            own.append(ViewRule(self.host.temp, "write", True, TEMP, TEMP))
        named = {g.target for g in self.snapshot.grants if g.key is not None and g.target}
        for path, reason in (*system.SYSTEM_HIDES, *self.host.hides):
            if path not in named:
                own.append(ViewRule(path, "hide", True, reason, f"{reason}: {path}"))
        developer = self.host.developer_dir
        if developer is not None and self.view.access(developer, own, keeps=False) not in (
                "read", "write"):
            own.append(ViewRule(developer, "read", True, DEVELOPER, DEVELOPER))
        return own

    def _rules(self) -> list[_Rule]:
        """The view's rules and this launch's own, as the profile emits them: a hide only
        where the sandbox would otherwise see, a protection only where it would otherwise
        write, and a read grant below a write grant closed for writing, as a deeper
        read-only mount is on Linux (Seatbelt's read allow does not undo a write allow)."""
        # What keeps a path read-only is taken as the view found it before judging where
        # it matters (View.laid): this launch's own write rule (the run's temp folder)
        # is one the view does not know of, and what lies in it is kept all the same.
        spec = [r for r in self.view.laid if r.protected is None]
        dots = [r for r in self.view.laid if r.protected is not None]
        rules = [_Rule(r.path, r.effect, r.folder, r.label, r.why, creation=r.creation,
                       pattern=r.pattern)
                 for r in (*spec, *self.own, *dots)]
        written = [r.path for r in rules if r.effect == "write"]
        for rule in list(rules):
            if rule.effect != "read":
                continue
            # A pattern below (or around) a write grant: its paths kept read-only where
            # it decides, as a concrete read grant's are.
            below = any(is_within(rule.anchor, w) or is_within(w, rule.anchor)
                        for w in written) if rule.pattern else self.holder(
                            rule.path, strict=True) == "write"
            if below:
                rules.append(_Rule(rule.path, "keep", rule.folder, f"{rule.label}, below a "
                                   "write grant", f"{rule.why} (read-only below a write "
                                   "grant)", below_write=True, pattern=rule.pattern))
        self.view.check_links(self.own)
        kept = []
        seen: set[tuple[str, str]] = set()
        for rule in rules:
            if (rule.path, rule.effect) in seen:
                continue
            if rule.effect == "hide" and not self.shown_under(rule):
                continue  # a hide of what the sandbox does not see anyway
            if rule.effect == "keep" and not rule.below_write and self.holder(
                    rule.path, strict=False) != "write":
                continue
            seen.add((rule.path, rule.effect))
            kept.append(rule)
        return kept

    def shown_under(self, hide: _Rule) -> bool:
        """Whether the sandbox would see what `hide` closes, but for it: the rule holding
        its path (for a pattern, its anchor) allows, or a reopened pattern laid before it
        stands for its very path."""
        if hide.pattern:
            return self.holder(hide.anchor, strict=False) in ("read", "write")
        return self.holder(hide.path, strict=True) in ("read", "write") or any(
            r.pattern and r.allows and pattern_folder(hide.path, r.path) == hide.path
            for r in self.view.rules)

    def holder(self, path: str, *, strict: bool) -> str | None:
        """What the deepest grant, hide or system folder holding `path` does to it (the
        view's judgement, with this launch's own rules and without what keeps a path
        read-only: what such a rule would be inside)."""
        return self.view.access(path, self.own, strict=strict, keeps=False)

    def visible(self, path: str) -> bool:
        return self.holder(path, strict=False) in ("read", "write")

    def levels(self) -> dict[_Rule, int]:
        """Level of each rule: an allow comes after every closer laid before it that it
        meets, a closer after every allow laid before it that it meets (see the module
        docstring). Rules are laid as the view lays them: outer to inner, and at one
        folder a pattern's first, then allows, then closers. Two rules meet where one's
        anchor holds the other's: a pattern counts as holding all of its anchor, which
        only ever orders a rule after one whose paths it does not share."""
        level: dict[_Rule, int] = {}
        laid = sorted(self.rules, key=lambda r: (depth(r.path), -1 if r.pattern
                                                 else 0 if r.allows else 1))
        for rule in laid:
            before = [c for c in level if c.allows != rule.allows
                      and (is_within(rule.anchor, c.anchor) or is_within(c.anchor, rule.anchor))]
            level[rule] = max((level[c] + (1 if rule.allows else 0) for c in before),
                              default=0)
        return level

    def name_level(self, path: str, level: dict[_Rule, int]) -> int:
        """The level at which a path's metadata may be allowed: after the hides holding it."""
        return max((level[c] + 1 for c in level if c.effect == "hide"
                    and is_within(path, c.anchor)), default=0)

    # -- rendering ---------------------------------------------------------------------

    def filters(self, rule: _Rule) -> list[_Filter]:
        if rule.pattern:
            found = [_Filter("regex", pattern_regex(rule.path, folder=rule.folder),
                             rule.label, rule.why)]
            if not rule.allows:  # a deny also in any letter case, as a path's is
                found.append(_Filter("regex", pattern_regex(
                    rule.path, folder=rule.folder, any_letter_case=True), rule.label,
                    f"any letter case: {rule.why}"))
            return found
        kinds = ["literal", "subpath"] if rule.creation else [
            "subpath" if rule.folder else "literal"]
        return [_Filter(kind, rule.path, rule.label, rule.why) for kind in kinds]

    def render(self, verb: str, ops: Sequence[str], filters: Sequence[_Filter], prefix: str,
               modifier: str | None = None) -> list[str]:
        """One rule. An allow of more than FOLD_AT filters has them folded into regexes;
        a deny is never folded, and also matches its paths in any letter case."""
        head = f"({verb} {' '.join(ops)}"
        tail = f" {modifier})" if modifier else ")"
        lines: list[str] = []
        items: list[tuple[str, str]] = []  # (filter text, comment)
        for item in filters:  # a pattern's regex, as it is: never folded with paths
            if item.kind == "regex":
                name = self.params.regex(prefix, item.path, item.why)
                items.append((f'(regex (param "{name}"))', item.label))
        filters = [f for f in filters if f.kind != "regex"]
        if verb == "allow" and len(filters) > FOLD_AT:
            subpaths: dict[str, bool] = {}
            labels: dict[str, None] = {}
            for item in filters:
                subpaths[item.path] = subpaths.get(item.path, False) or item.kind == "subpath"
                labels[item.label] = None
            lines.append(f"; {len(subpaths)} paths folded into regexes, of: "
                         + _comment(", ".join(labels)))
            whys = {f.path: f.why for f in filters}
            for subpath in (True, False):
                paths = [p for p, s in subpaths.items() if s == subpath]
                folded, alone = chunks(paths, subpath=subpath, limit=REGEX_LIMIT,
                                       escape=regex_escape)
                for regex, held in folded:
                    name = self.params.regex(prefix, regex, "folded: " + ", ".join(
                        whys[p] for p in held))
                    items.append((f'(regex (param "{name}"))', f"{len(regex.encode())} bytes"))
                for path in alone:
                    kind = "subpath" if subpath else "literal"
                    name = self.params.path(path, prefix, whys[path])
                    items.append((f'({kind} (param "{name}"))', ""))
        else:
            shown: set[tuple[str, str]] = set()
            for item in filters:
                if (item.kind, item.path) in shown:
                    continue
                shown.add((item.kind, item.path))
                name = self.params.path(item.path, prefix, item.why)
                items.append((f'({item.kind} (param "{name}"))', item.label))
        if verb == "deny":
            items += self.any_case(filters, prefix)
        if not items:
            return []
        lines.append(head)
        for i, (text, why) in enumerate(items):
            end = tail if i == len(items) - 1 else ""
            note = f"  ; {_comment(why)}" if why else ""
            lines.append(f"    {text}{end}{note}")
        return lines

    def any_case(self, filters: Sequence[_Filter], prefix: str) -> list[tuple[str, str]]:
        """The regexes that close a deny's paths in any letter case."""
        subpaths: dict[str, bool] = {}
        whys: dict[str, str] = {}
        for item in filters:
            subpaths[item.path] = subpaths.get(item.path, False) or item.kind == "subpath"
            whys.setdefault(item.path, item.why)
        items: list[tuple[str, str]] = []
        for subpath in (True, False):
            paths = [p for p, s in subpaths.items() if s == subpath]
            for regex, held in any_case_regexes(paths, subpath=subpath):
                name = self.params.any_case(prefix, regex, "any letter case: " + ", ".join(
                    whys[p] for p in held))
                items.append((f'(regex (param "{name}"))',
                              f"the same, any letter case ({len(regex.encode())} bytes)"))
        return items

    def commands(self) -> list[str]:
        if self.learn:
            return [";; [commands], learn: any program the sandbox sees runs, and each is "
                    "reported", ";; to the log (allowed with each folder below)."]
        if self.snapshot.programs is None:
            return [";; [commands] absent: any program the sandbox sees may run (allowed "
                    "with each", ";; folder below; a hidden one cannot)."]
        if not self.snapshot.programs:
            return [";; [commands] programs = []: no program at all, the command included."]
        filters: list[_Filter] = []
        listed: set[str] = set()
        for i, program in enumerate(self.snapshot.programs):
            if not self.visible(program.target):
                self.notes.append(f"{program.name} ({program.target}) is hidden from the "
                                  "sandbox, so it cannot run there")
                continue
            if program.target not in listed:
                listed.add(program.target)
                filters.append(_Filter("literal", program.target, f"commands.programs[{i}]",
                                       f"commands.programs[{i}]: {program.name}"))
            for companion in self.host.companions:
                if companion.program != i or companion.path in listed:
                    continue
                if not self.visible(companion.path):
                    self.notes.append(f"{program.name} runs {companion.path} "
                                      f"({companion.why}), which is hidden from the sandbox")
                    continue
                listed.add(companion.path)
                filters.append(_Filter(
                    "literal", companion.path, f"run by commands.programs[{i}]",
                    f"commands.programs[{i}]: {program.name} runs it ({companion.why})"))
                self.notes.append(f"{program.name} ({program.target}) runs "
                                  f"{companion.path} ({companion.why}): allowed with it")
        lines = [";; [commands]: only the listed files may run (Seatbelt checks the file "
                 "executed;", ";; an allowed interpreter runs any code)."]
        if filters:
            lines += self.render("allow", [EXEC_OP], filters, "PROGRAM")
        return lines

    def terminals(self) -> list[str]:
        if not self.host.terminals:
            return []
        filters = [_Filter("literal", path, "the command's terminal",
                           "the terminal the command was given") for path in self.host.terminals]
        return ["; the terminal the command was given, by name",
                *self.render("allow", TERMINAL_OPS, filters, "TERMINAL")]

    def files(self) -> tuple[list[str], dict[_Rule, int]]:
        level = self.levels()
        names = self.names_to_resolve()
        lines: list[str] = []
        top = max([*level.values(), *(self.name_level(p, level) for p in names)], default=0)
        for number in range(top + 1):
            here = sorted((r for r in level if level[r] == number),
                          key=lambda r: (depth(r.path), r.path))
            reads = [f for r in here if r.effect == "read" for f in self.filters(r)]
            writes = [f for r in here if r.effect == "write" for f in self.filters(r)]
            paths = [f for p, f in names.items() if self.name_level(p, level) == number]
            if reads or writes or paths:
                if number == 0:
                    lines.append(";; Files, level 0: the grants.")
                else:
                    lines.append(f";; Files, level {number}: the spec's own folders inside "
                                 f"what level {number - 1} closed, allowed again.")
            if reads:
                lines += self.render("allow", READ_OPS, reads, "READ")
            if writes:
                lines += self.render("allow", WRITE_OPS, writes, "WRITE")
            if self.open_exec and (reads or writes):
                modifier = "(with report)" if self.learn else None
                lines += self.render("allow", [EXEC_OP], [*reads, *writes], "READ", modifier)
            if paths:
                lines.append("; the folders above them and the links naming them, so that "
                             "paths resolve")
                lines += self.render("allow", METADATA_OPS, paths, "PATH")
            hides = [f for r in here if r.effect == "hide" for f in self.filters(r)]
            keeps = [f for r in here if r.effect == "keep" for f in self.filters(r)]
            if hides or keeps:
                lines.append(f";; Closed inside level {number}.")
            if hides:
                lines.append("; hidden: closed whatever else is open")
                lines += self.render("deny", self.hide_ops(), hides, "HIDE")
            if keeps:
                lines.append("; read-only inside a write grant (no socket there reached)")
                lines += self.render("deny", KEEP_OPS, keeps, "KEEP")
        return lines, level

    def hide_ops(self) -> tuple[str, ...]:
        return (*HIDE_OPS, EXEC_OP) if self.open_exec else HIDE_OPS

    def names_to_resolve(self) -> dict[str, _Filter]:
        """Folders above each grant and the links naming one, which the sandbox must be
        able to stat (realpath, getcwd) but not read: path -> its filter."""
        names: dict[str, _Filter] = {}
        grants = [g for g in self.snapshot.grants if g.target and g.access in ("read", "write")]
        wanted: list[tuple[str, str, str]] = []
        for grant in grants:
            assert grant.target is not None
            above = (f"above {_label(grant)}", f"above {_why(grant)}")
            wanted += [(a, *above) for a in _ancestors(grant.target)]
            name = expand_name(grant.name, self.snapshot.home, self.snapshot.cwd,
                               self.snapshot.lnk_home)
            if name != grant.target:
                wanted += [(a, *above) for a in _ancestors(name)]
                wanted.append((name, f"{_label(grant)}, a link", f"{_why(grant)}, a link"))
        if self.host.temp is not None:
            wanted += [(a, f"above {TEMP}", f"above {TEMP}") for a in _ancestors(self.host.temp)]
        for path, label, why in wanted:
            if path not in names and not self.visible(path):
                names[path] = _Filter("literal", path, label, why)
        for grant in self.snapshot.patterns:
            # The folders above a reopened pattern: its anchor's as paths, the ones with
            # a wildcard (each node version's folder) as a regex of exactly them.
            if grant.access != "read" or not grant.target:
                continue
            parts = grant.target.split("/")
            for i in range(2, len(parts)):
                folder = "/".join(parts[:i])
                fixed = pattern_anchor(folder) == folder
                if folder in names or (fixed and self.visible(folder)):
                    continue
                label, why = f"above {grant.reason}", f"above {grant.reason}: {grant.name}"
                names[folder] = (_Filter("literal", folder, label, why) if fixed else
                                 _Filter("regex", pattern_regex(folder, folder=False),
                                         label, why))
        return names

    def renames(self, level: dict[_Rule, int], keychains: str) -> list[str]:
        closed = [(r.path, r.label, r.why) for r in level if not r.allows and not r.pattern]
        closed.append((keychains, "the Keychain", "the person's keychains"))
        filters: list[_Filter] = []
        seen: set[str] = set()
        for path, label, why in closed:
            holder = self.view.decides(path, self.own, strict=True, keeps=False)
            if holder is None or holder.effect != "write":
                continue
            # Up through write grants holding this one: a folder between two of them
            # moved away would carry the inner grant, and its closed paths, with it.
            while (outer := self.view.decides(holder.path, self.own, strict=True,
                                              keeps=False)) is not None \
                    and outer.effect == "write":
                holder = outer
            for folder in [holder.path, *_ancestors(path)]:
                if is_within(folder, holder.path) and folder not in seen:
                    seen.add(folder)
                    filters.append(_Filter("literal", folder, f"holds {label}",
                                           f"holds {why}"))
        if not filters:
            return []
        return [";; Renames and creations refused: a folder holding a closed path inside a "
                "write", ";; grant can be neither moved (carrying what it holds to a path "
                "no rule closes)", ";; nor made where it is missing (as a link pointing "
                "the closed path elsewhere).", *self.render("deny", MOVE_OPS, filters, "PATH")]

    def compile(self) -> Profile:
        keychains = self.host.home.rstrip("/") + "/" + system.KEYCHAINS
        lines = [
            "(version 1)",
            ";; lnk-sandbox's profile. Every path is a parameter; among rules with a "
            "filter, the",
            ";; last matching one wins; an unfiltered rule is the operation's default.",
            "(deny default)",
            *system.defaults(),
            *system.fixed_rules(),
            *self.commands(),
            *system.system_file_rules(run=self.open_exec, report=self.learn),
            *self.terminals(),
            *system.network_rules(self.snapshot.settings.network_mode, self.host.proxy_ports,
                                  forward=self.snapshot.network.forward,
                                  expose=self.snapshot.network.expose),
        ]
        if self.snapshot.settings.network_mode == "proxy" and not self.host.proxy_ports:
            self.notes.append("proxy mode, but no proxy runs for this launch: no network")
        files, level = self.files()
        lines += files
        lines += self.renames(level, keychains)
        if self.snapshot.network.unix is not None:
            lines += system.unix_socket_rules([
                self.params.path(s.target, "UNIX", f"{s.key}: {s.name}")
                for s in self.snapshot.network.sockets() if s.target is not None])
        keychain_rule = self.render("deny", self.hide_ops(), [_Filter(
            "subpath", keychains, "~/" + system.KEYCHAINS, "the person's keychains")],
            "KEYCHAINS")
        lines += system.always_closed(keychain_rule)
        spaced: list[str] = []
        for i, line in enumerate(lines):
            if i > 4 and line.startswith(";;") and not lines[i - 1].startswith(";;"):
                spaced.append("")  # a blank line before each section
            spaced.append(line)
        return Profile("\n".join(spaced) + "\n", tuple(self.params.values.items()),
                       tuple(self.notes), tuple(self.params.origins.items()))


def compile_profile(view: View, host: MacHost, *, learn: bool = False) -> Profile:
    """The SBPL profile rendering a view (view.py: the grants, the dot files kept
    read-only inside write grants). `learn`: every program allowed and reported,
    whatever `[commands]` says. Raises LaunchError for a link in a protected path where
    the sandbox writes."""
    return _Compiler(view, host, learn).compile()


def readable(view: View, host: MacHost, path: str) -> bool:
    """Whether a sandbox of `view` on `host` reads `path` (resolved): what the
    environment needs to know of the files a program it runs will look for."""
    return _Compiler(view, host, learn=False).visible(path)


def sandbox_exec_argv(profile: Profile, command: Sequence[str], *,
                      sandbox_exec: str = SANDBOX_EXEC) -> list[str]:
    """The whole command line: sandbox-exec, the profile, its parameters, the command."""
    return [sandbox_exec, *profile.arguments(), "--", *command]
