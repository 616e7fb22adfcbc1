"""Properties of the macOS profile for random specs, read back with a small evaluator of
the SBPL it writes (the last matching rule wins, as Seatbelt decides).

For random grants, hides, protected dot files and program lists:
- every hidden folder is denied after every read grant that holds it;
- no write grant reopens a protected dot file: its allow comes before the dot file's
  deny, and writing in it or making it is refused;
- read, write and exec decided by the profile are what the deepest rule gives, as the
  deepest mount decides on Linux (system folders read, a hide closed, a dot file or a
  read grant below a write grant read-only, a grant inside a hide open again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.dotfiles import Protected
from supervisor.grants import Grant, Program, Snapshot, is_within
from supervisor.macos import system
from supervisor.macos.profile import MacHost, compile_profile

HOME = "/Users/me"
TEMP = "/private/var/folders/zz/T/lnk-sandbox-1"
NAMES = ("a", "b", ".git", ".envrc")

# -- a reader for the SBPL the compiler writes ---------------------------------------------

_TOKEN = re.compile(r'\s*(?:(;[^\n]*)|(#"(?:[^"\\]|\\.)*")|("(?:[^"\\]|\\.)*")|(\()|(\))'
                    r'|([^\s()";]+))')


def parse(text: str) -> list[list[object]]:
    stack: list[list[object]] = [[]]
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
    index: int
    verb: str
    ops: list[str]
    filters: list[list[object]]


def rules_of(text: str) -> list[Rule]:
    found = []
    for i, form in enumerate(parse(text)):
        if form[0] not in ("allow", "deny"):
            continue
        ops = [x for x in form[1:] if isinstance(x, str)]
        filters = [x for x in form[1:] if isinstance(x, list) and x[0] != "with"]
        found.append(Rule(i, str(form[0]), ops, filters))
    return found


class Evaluator:
    def __init__(self, text: str, parameters: tuple[tuple[str, str], ...]):
        self.rules = rules_of(text)
        self.params = dict(parameters)

    def value(self, item: object) -> str:
        if isinstance(item, list) and item[0] == "param":
            value = item[1]
            assert isinstance(value, tuple)
            return self.params[value[1]]
        assert isinstance(item, tuple), item
        return str(item[1])

    def matches(self, form: list[object], path: str, op: str = "") -> bool:
        kind = form[0]
        if kind in ("subpath", "literal", "regex"):
            value = self.value(form[1])
            if kind == "subpath":
                # Codex: `subpath` alone leaves the first creation of the path itself open.
                return is_within(path, value) and not (
                    op == "file-write-create" and path == value)
            if kind == "literal":
                return path == value
            return re.search(value, path) is not None
        return False  # not a path filter: never matches a path

    @staticmethod
    def op_matches(rule_op: str, op: str) -> bool:
        if rule_op == "default":
            return True
        if rule_op.endswith("*"):
            return op.startswith(rule_op[:-1])
        return rule_op == op

    def covering(self, op: str, path: str) -> list[Rule]:
        return [r for r in self.rules if any(self.op_matches(o, op) for o in r.ops)
                and (not r.filters or any(self.matches(f, path, op) for f in r.filters))]

    def allows(self, op: str, path: str) -> bool:
        found = self.covering(op, path)
        return bool(found) and found[-1].verb == "allow"


def test_the_evaluator_reads_last_match_wins() -> None:
    text = ('(version 1)\n(deny default)\n(allow file-read* (subpath (param "A")))\n'
            '(deny file-read* (subpath (param "B")))  ; x\n'
            '(allow file-read-data (regex (param "C")))\n')
    ev = Evaluator(text, (("A", "/a"), ("B", "/a/b"), ("C", "^/a/b/c$")))
    assert ev.allows("file-read-data", "/a/x")
    assert not ev.allows("file-read-data", "/a/b/x")
    assert ev.allows("file-read-data", "/a/b/c")
    assert not ev.allows("file-read-metadata", "/a/b/c")
    assert not ev.allows("file-write-data", "/a")


# -- random specs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    grants: tuple[Grant, ...]
    protected: tuple[Protected, ...]
    programs: tuple[Program, ...] | None
    learn: bool


def _depth(path: str) -> int:
    return path.count("/")


@st.composite
def cases(draw: st.DrawFn) -> Case:
    paths = draw(st.lists(
        st.lists(st.sampled_from(NAMES), min_size=0, max_size=3).map(
            lambda parts: "/".join([HOME, *parts])),
        min_size=1, max_size=7, unique=True))
    grants: list[Grant] = []
    for i, path in enumerate(paths):
        access = draw(st.sampled_from(["read", "write", "hide"] if path != HOME
                                      else ["read", "hide"]))
        writable = access == "write" and draw(st.booleans())
        grants.append(Grant(path.replace(HOME, "~", 1), path, access, f"files.{access}[{i}]",
                            f"files.{access}[{i}]", 1, writable))
    protected: list[Protected] = []
    for grant in grants:
        if grant.access == "write" and not grant.dot_files_writable:
            for name, kind in ((".git", "folder"), (".envrc", "file")):
                path = f"{grant.target}/{name}"
                protected.append(Protected(path, path, kind, False, name))  # type: ignore[arg-type]
    programs = None
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from([*paths, "/usr/bin/git", "/bin/sh"]),
                               max_size=4, unique=True))
        programs = tuple(Program(p, p + ("/tool" if p.startswith(HOME) else ""))
                         for p in chosen)
    return Case(tuple(grants), tuple(protected), programs, draw(st.booleans()))


def snapshot_of(case: Case) -> Snapshot:
    return Snapshot(1, "spec.toml", HOME, HOME + "/a", HOME + "/.lnk", 501, case.grants,
                    case.programs, "none", (), (), (), None, None)


def deepest(path: str, case: Case) -> str | None:
    """The access the deepest system folder, grant or hide holding `path` gives."""
    holders = [(f, "read") for f in system.SYSTEM_FOLDERS] + [(TEMP, "write")]
    holders += [(g.target, g.access) for g in case.grants if g.target]
    best: tuple[int, str] | None = None
    for folder, access in holders:
        if is_within(path, folder) and (best is None or _depth(folder) > best[0]):
            best = (_depth(folder), access)
    return best[1] if best else None


def expected(op: str, path: str, case: Case) -> bool:
    access = deepest(path, case)
    if op == "file-read-data":
        return access in ("read", "write")
    if op.startswith("file-write"):
        if access != "write":
            return False
        top = max((_depth(f) for f in [TEMP, *(g.target or "" for g in case.grants)]
                   if f and is_within(path, f) and deepest(f, case) == "write"), default=0)
        return not any(is_within(path, p.path) and _depth(p.path) >= top
                       for p in case.protected)
    assert op == "process-exec"
    if case.programs is None or case.learn:
        return access in ("read", "write")
    return access in ("read", "write") and path in {p.target for p in case.programs}


def queries(case: Case) -> list[tuple[str, str]]:
    found = {HOME, HOME + "/x", "/usr/bin/git", "/Users", TEMP + "/f"}
    for grant in case.grants:
        assert grant.target is not None
        found |= {grant.target, grant.target + "/x", grant.target + "/.git/config"}
    for item in case.protected:
        found |= {item.path, item.path + "/hooks"}
    for program in case.programs or ():
        found.add(program.target)
    roots = {TEMP, *(g.target for g in case.grants)}
    ops = ("file-read-data", "file-write-data", "file-write-create", "process-exec")
    # Making a grant's own folder is no question a profile answers: it is there.
    return [(op, path) for path in sorted(found) for op in ops
            if not (op == "file-write-create" and path in roots)]


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_profile_decides_as_the_deepest_rule(case: Case) -> None:
    profile = compile_profile(snapshot_of(case), case.protected, MacHost(HOME, TEMP),
                              learn=case.learn)
    ev = Evaluator(profile.text, profile.parameters)
    for op, path in queries(case):
        assert ev.allows(op, path) == expected(op, path, case), (op, path)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_hidden_folders_are_denied_after_the_read_grants_holding_them(case: Case) -> None:
    profile = compile_profile(snapshot_of(case), case.protected, MacHost(HOME, TEMP),
                              learn=case.learn)
    ev = Evaluator(profile.text, profile.parameters)
    for hide in (g for g in case.grants if g.access == "hide"):
        assert hide.target is not None
        denies = [r.index for r in ev.covering("file-read-data", hide.target)
                  if r.verb == "deny"]
        for grant in case.grants:
            if grant.access in ("read", "write") and grant.target and grant.target != \
                    hide.target and is_within(hide.target, grant.target):
                allows = [r.index for r in ev.covering("file-read-data", grant.target)
                          if r.verb == "allow" and not any(
                              ev.matches(f, "/nowhere") for f in r.filters)]
                assert denies and max(denies) > max(allows), (hide.target, grant.target)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_no_write_grant_reopens_a_protected_dot_file(case: Case) -> None:
    profile = compile_profile(snapshot_of(case), case.protected, MacHost(HOME, TEMP),
                              learn=case.learn)
    ev = Evaluator(profile.text, profile.parameters)
    for item in case.protected:
        if deepest(item.path, case) != "write" or any(
                g.access == "write" and g.target and g.target != item.path
                and is_within(g.target, item.path) for g in case.grants):
            continue  # closed otherwise, or a deeper write grant the spec wrote inside it
        rules = ev.covering("file-write-create", item.path)
        denies = [r.index for r in rules if r.verb == "deny"]
        writes = [r.index for r in rules if r.verb == "allow"]
        assert denies and (not writes or max(writes) < max(denies)), item.path
        assert not ev.allows("file-write-create", item.path)
        assert not ev.allows("file-write-data", item.path + "/hooks/pre-commit")
