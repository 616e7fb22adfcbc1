"""A model of how Seatbelt decides, to read the profiles lnk-sandbox writes back as rules.

It follows Apple's SBPL v1 prelude (`sbpl1.scm`, the version with the `%action` rule
table) and what was measured on real Macs (microsoft/mxc PR #754, sandbox-runtime):
- Each operation keeps its own list of rules. A rule naming several operations is added
  to each; several filters in one rule are any-of.
- A rule with a filter is put first in its operation's list: among them the last
  written is tried first, and the first that matches decides (last match wins).
- A rule without a filter replaces the operation's unconditional rule, its default:
  tried after every filtered rule of that operation, wherever it was written. So a
  later `(allow network-outbound)` does not override an earlier filtered deny.
- An operation with no unconditional rule of its own falls back to its parent's rules
  (file-write-unlink, then file-write*, then file*, then default), so a rule naming the
  specific operation beats one naming its wildcard, whatever their order.
- A few operations have an unconditional rule of their own, allow, which `(deny default)`
  does not replace: process-info*, iokit-get-properties, file-map-executable, nvram*
  (Apple's daemon profiles deny them right after `(deny default)`; Chromium: "These
  operations are allowed by default"). job-creation's own is deny.
Operations newer than that prelude (file-test-existence, file-link, file-clone, nvram*)
are placed where their names put them [U: tools/macos_probe.py checks file-link].

Facts a query can carry: `path` (resolved), `target` and `owner` ("self",
"same-sandbox", "others") for process and semaphore filters, `name` for Mach and IPC
names, `sysctl`, `extensions` a file carries, `remote` for `(remote ip ...)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from supervisor.grants import is_within

PARENT = {
    "file*": "default",
    "file-read*": "file*",
    "file-read-data": "file-read*",
    "file-read-metadata": "file-read*",
    "file-read-xattr": "file-read*",
    "file-test-existence": "file*",
    "file-write*": "file*",
    "file-map-executable": "file*",
    "file-ioctl": "file*",
    "file-link": "file*",
    "file-clone": "file*",
    "ipc*": "default",
    "ipc-posix*": "ipc*",
    "ipc-posix-sem*": "ipc-posix*",
    "ipc-posix-shm*": "ipc-posix*",
    "ipc-posix-shm-read*": "ipc-posix-shm*",
    "ipc-posix-shm-write*": "ipc-posix-shm*",
    "iokit*": "default",
    "iokit-get-properties": "iokit*",
    "iokit-open": "iokit*",
    "job-creation": "default",
    "mach*": "default",
    "mach-lookup": "mach*",
    "mach-register": "mach*",
    "network*": "default",
    "network-inbound": "network*",
    "network-bind": "network-inbound",
    "network-outbound": "network*",
    "nvram*": "default",
    "process*": "default",
    "process-exec*": "process*",
    "process-exec-interpreter": "process-exec*",
    "process-fork": "process*",
    "process-info*": "process*",
    "pseudo-tty": "default",
    "signal": "default",
    "sysctl*": "default",
    "sysctl-read": "sysctl*",
    "system*": "default",
    "system-socket": "system*",
}
for _op in ("create", "data", "flags", "mode", "owner", "setugid", "times", "unlink", "xattr"):
    PARENT[f"file-write-{_op}"] = "file-write*"
for _op in ("create", "open", "post", "unlink", "wait"):
    PARENT[f"ipc-posix-sem-{_op}"] = "ipc-posix-sem*"
for _op in ("read-data", "read-metadata"):
    PARENT[f"ipc-posix-shm-{_op}"] = "ipc-posix-shm-read*"
for _op in ("write-create", "write-data", "write-unlink"):
    PARENT[f"ipc-posix-shm-{_op}"] = "ipc-posix-shm-write*"
for _op in ("pidinfo", "listpids", "pidfdinfo", "setcontrol", "rusage", "codesignature"):
    PARENT[f"process-info-{_op}"] = "process-info*"
for _op in ("get", "set", "delete"):
    PARENT[f"nvram-{_op}"] = "nvram*"

# An operation's own unconditional rule, before any profile replaces it.
OWN_DEFAULT = {
    "default": "deny",
    "job-creation": "deny",
    "process-info*": "allow",
    "iokit-get-properties": "allow",
    "file-map-executable": "allow",
    "nvram*": "allow",
}

ALIASES = {
    "ipc-posix-sem": "ipc-posix-sem*",
    "ipc-posix-shm": "ipc-posix-shm*",
    "process-exec": "process-exec*",
    "sysctl-write": "sysctl*",
}

_TOKEN = re.compile(r'\s*(?:(;[^\n]*)|(#"(?:[^"\\]|\\.)*")|("(?:[^"\\]|\\.)*")|(\()|(\))'
                    r'|([^\s()";]+))')


def parse(text: str) -> list[list[Any]]:
    """The forms of a profile, each a nested list; strings as ("string", s), regex
    literals as ("regex", s); comments dropped."""
    stack: list[list[Any]] = [[]]
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        assert match is not None, text[position:position + 40]
        position = match.end()
        comment, regex, string, opening, closing, symbol = match.groups()
        if opening:
            stack.append([])
        elif closing:
            done = stack.pop()
            stack[-1].append(done)
        elif regex:
            stack[-1].append(("regex", regex[2:-1]))
        elif string:
            stack[-1].append(("string", string[1:-1]))
        elif symbol:
            stack[-1].append(symbol)
        elif comment is None and match.group(0).strip():
            raise AssertionError(match.group(0))
    assert len(stack) == 1
    return [r for r in stack[0] if isinstance(r, list)]


@dataclass
class Rule:
    """One rule as written: its place in the text, verdict, operations and filters."""

    index: int
    verb: str
    ops: list[str]
    filters: list[list[Any]]


@dataclass
class Seatbelt:
    """A profile's decisions, as Seatbelt makes them (see the module docstring)."""

    text: str
    parameters: tuple[tuple[str, str], ...] = ()
    rules: list[Rule] = field(init=False)
    filtered: dict[str, list[Rule]] = field(init=False)
    unconditional: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.params = dict(self.parameters)
        self.rules = []
        self.filtered = {}
        self.unconditional = dict(OWN_DEFAULT)
        for index, form in enumerate(parse(self.text)):
            if form[0] not in ("allow", "deny"):
                continue
            ops = [ALIASES.get(x, x) for x in form[1:] if isinstance(x, str)]
            filters = [x for x in form[1:] if isinstance(x, list) and x[0] != "with"]
            rule = Rule(index, str(form[0]), ops, filters)
            self.rules.append(rule)
            for op in ops:
                assert op in PARENT or op == "default", f"unknown operation {op}"
                if filters:
                    self.filtered.setdefault(op, []).append(rule)
                else:
                    self.unconditional[op] = rule.verb

    # -- filters ---------------------------------------------------------------------

    def value(self, item: Any) -> str:
        if isinstance(item, list) and item[0] == "param":
            assert isinstance(item[1], tuple)
            return self.params[item[1][1]]
        assert isinstance(item, tuple), item
        return str(item[1])

    def matches(self, form: list[Any], op: str, facts: dict[str, Any]) -> bool:
        kind = form[0]
        path = facts.get("path")
        if kind in ("subpath", "literal", "regex"):
            if path is None:
                return False
            value = self.value(form[1])
            if kind == "subpath":
                # Codex: `subpath` alone leaves the first creation of the path itself open.
                return is_within(path, value) and not (
                    op == "file-write-create" and path == value)
            if kind == "literal":
                return bool(path == value)
            return re.search(value, path) is not None
        if kind == "require-any":
            return any(self.matches(f, op, facts) for f in form[1:])
        if kind == "require-all":
            return all(self.matches(f, op, facts) for f in form[1:])
        if kind == "require-not":
            return not self.matches(form[1], op, facts)
        if kind in ("target", "semaphore-owner"):
            who = facts.get("target" if kind == "target" else "owner")
            wanted = form[1]
            if wanted == "same-sandbox":
                return who in ("self", "same-sandbox")
            return bool(who == wanted)
        if kind in ("global-name", "ipc-posix-name"):
            return bool(facts.get("name") == self.value(form[1]))
        if kind == "ipc-posix-name-prefix":
            return str(facts.get("name", "")).startswith(self.value(form[1]))
        if kind == "sysctl-name":
            return bool(facts.get("sysctl") == self.value(form[1]))
        if kind == "sysctl-name-prefix":
            return str(facts.get("sysctl", "\0")).startswith(self.value(form[1]))
        if kind == "extension":
            return self.value(form[1]) in facts.get("extensions", ())
        if kind in ("remote", "local"):
            return bool(facts.get(kind) == self.value(form[2]))
        if kind == "socket-domain":
            return bool(facts.get("domain") == form[1])
        raise AssertionError(f"filter the model does not know: {kind}")

    # -- decisions -------------------------------------------------------------------

    def decide(self, op: str, **facts: Any) -> str:
        """allow or deny, and nothing else."""
        current = ALIASES.get(op, op)
        while True:
            for rule in reversed(self.filtered.get(current, [])):
                if any(self.matches(f, op, facts) for f in rule.filters):
                    return rule.verb
            if current in self.unconditional:
                return self.unconditional[current]
            current = PARENT[current]

    def allows(self, op: str, path: str | None = None, **facts: Any) -> bool:
        if path is not None:
            facts["path"] = path
        return self.decide(op, **facts) == "allow"

    def deciding(self, op: str, **facts: Any) -> Rule | None:
        """The rule that decides, or None when an unconditional rule does."""
        current = ALIASES.get(op, op)
        while True:
            for rule in reversed(self.filtered.get(current, [])):
                if any(self.matches(f, op, facts) for f in rule.filters):
                    return rule
            if current in self.unconditional:
                return None
            current = PARENT[current]

    def covering(self, op: str, path: str) -> list[Rule]:
        """Every filtered rule naming `op` (or an operation it falls back to) whose
        filters match `path`, in the order written."""
        found: list[Rule] = []
        current = ALIASES.get(op, op)
        while current != "default":
            found += [r for r in self.filtered.get(current, [])
                      if any(self.matches(f, op, {"path": path}) for f in r.filters)]
            current = PARENT[current]
        return sorted(found, key=lambda r: r.index)
