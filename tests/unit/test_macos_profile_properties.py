"""Properties of the macOS profile for random specs, read back with a model of how
Seatbelt decides (tests/unit/macos_seatbelt.py: filtered rules last-match-wins, an
unfiltered rule only the operation's default, a specific operation before its wildcard,
and the operations `(deny default)` does not reach).

The model is checked first against the measured cases it encodes. Then, for random
grants, hides, protected dot files (some below the top, under missing folders) and
program lists:
- read, write, exec and socket connects decided by the profile are what the deepest rule
  gives, as the deepest mount decides on Linux (system folders read, a hide closed, a dot
  file or a read grant below a write grant read-only, a grant inside a hide open again;
  sockets only in write grants);
- every hidden folder is denied after every read grant that holds it; no write grant
  reopens a protected dot file;
- the folders holding a closed path inside a write grant can be neither removed nor made
  (a missing `tools` cannot become a link that moves `tools/hooks`);
- a hidden folder and a protected path are closed in any letter case;
- what `(deny default)` does not reach is closed all the same, and no rule opens shared
  memory, another program's semaphores, hard links or setuid bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.dotfiles import Protected
from supervisor.grants import Grant, Program, Snapshot, is_within
from supervisor.macos import system
from supervisor.macos.profile import MacHost, compile_profile
from supervisor.policy import Access, RunSettings
from support.views import mac_view

from .macos_seatbelt import Seatbelt

HOME = "/Users/me"
TEMP = "/private/var/folders/zz/T/lnk-sandbox-1"
NAMES = ("a", "b", ".git", ".envrc")


# -- the model, against what was measured ----------------------------------------------


def test_filtered_rules_last_match_wins() -> None:
    text = ('(version 1)\n(deny default)\n(allow file-read* (subpath (param "A")))\n'
            '(deny file-read* (subpath (param "B")))  ; x\n'
            '(allow file-read-data (regex (param "C")))\n')
    ev = Seatbelt(text, (("A", "/a"), ("B", "/a/b"), ("C", "^/a/b/c$")))
    assert ev.allows("file-read-data", "/a/x")
    assert not ev.allows("file-read-data", "/a/b/x")
    assert ev.allows("file-read-data", "/a/b/c")
    assert not ev.allows("file-read-metadata", "/a/b/c")
    assert not ev.allows("file-write-data", "/a")


def test_an_unfiltered_rule_is_the_operations_default_wherever_it_is() -> None:
    # mxc: a later (allow network-outbound) with no filter does not override an
    # earlier path-scoped deny; and an unfiltered deny after a filtered allow holds
    # nothing the allow opened.
    ev = Seatbelt('(version 1)(deny default)(deny network-outbound (literal "/s"))'
                  "(allow network-outbound)")
    assert not ev.allows("network-outbound", "/s")
    assert ev.allows("network-outbound", "/t")
    ev = Seatbelt("(version 1)(deny default)(allow ipc-posix-sem (semaphore-owner self))"
                  "(deny ipc-posix-sem)")
    assert ev.allows("ipc-posix-sem-open", owner="self")
    assert not ev.allows("ipc-posix-sem-open", owner="others")


def test_a_specific_operation_is_tried_before_its_wildcard() -> None:
    # sandbox-runtime: a (deny file-write-unlink) is not undone by a later (allow file-write*).
    ev = Seatbelt('(version 1)(deny default)(deny file-write-unlink (literal "/d/x"))'
                  '(allow file-write* (subpath "/d"))')
    assert not ev.allows("file-write-unlink", "/d/x")
    assert ev.allows("file-write-data", "/d/x") and ev.allows("file-write-unlink", "/d/y")


def test_deny_default_leaves_some_operations_open() -> None:
    # Apple's daemon profiles: (deny default) then (deny file-map-executable
    # iokit-get-properties process-info* nvram*); Chromium: "allowed by default".
    ev = Seatbelt("(version 1)(deny default)")
    for op in ("process-info-pidinfo", "nvram-get", "iokit-get-properties",
               "file-map-executable"):
        assert ev.allows(op, "/x", target="others"), op
    for op in ("file-read-data", "process-exec*", "job-creation", "file-link",
               "ipc-posix-sem-open", "sysctl-read"):
        assert not ev.allows(op, "/x"), op


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
        choices: list[Access] = ["read", "write", "hide"] if path != HOME else ["read", "hide"]
        access = draw(st.sampled_from(choices))
        writable = access == "write" and draw(st.booleans())
        grants.append(Grant(path.replace(HOME, "~", 1), path, access, f"files.{access}[{i}]",
                            f"files.{access}[{i}]", 1, writable))
    protected: list[Protected] = []
    for grant in grants:
        if grant.access == "write" and not grant.dot_files_writable:
            top = grant.target
            for name, kind in ((".git", "folder"), (".envrc", "file")):
                path = f"{top}/{name}"
                protected.append(Protected(path, path, kind, False, name))  # type: ignore[arg-type]
            if draw(st.booleans()):
                # core.hooksPath = tools/hooks (or a/b/hooks), its folders missing: the
                # placeholder Linux would put there is the first missing one.
                below = draw(st.sampled_from(["tools/hooks", "a/b/hooks"]))
                first = below.split("/")[0]
                if any(is_within(g.target, f"{top}/{first}") for g in grants if g.target):
                    continue  # a grant's folder is there, so the one above it is too
                protected.append(Protected(f"{top}/{below}", below, "folder", False,
                                           "core.hooksPath", placeholder=f"{top}/{first}"))
    programs = None
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from([*paths, "/usr/bin/git", "/bin/sh"]),
                               max_size=4, unique=True))
        programs = tuple(Program(p, p + ("/tool" if p.startswith(HOME) else ""))
                         for p in chosen)
    return Case(tuple(grants), tuple(protected), programs, draw(st.booleans()))


def snapshot_of(case: Case) -> Snapshot:
    return Snapshot(
        1,
        "spec.toml",
        HOME,
        HOME + "/a",
        HOME + "/.lnk",
        501,
        case.grants,
        case.programs,
        RunSettings("none", (), (), None, None))


def profile_of(case: Case) -> Seatbelt:
    profile = compile_profile(mac_view(snapshot_of(case), case.protected), MacHost(HOME, TEMP),
                              learn=case.learn)
    return Seatbelt(profile.text, profile.parameters)


def holders(case: Case) -> list[tuple[str, str]]:
    found = [(f, "read") for f in system.SYSTEM_FOLDERS] + [(TEMP, "write")]
    found += [(path, "hide") for path, _ in system.SYSTEM_HIDES]
    found += [(g.target, g.access) for g in case.grants if g.target]
    return found


def deepest(path: str, case: Case) -> str | None:
    """The access the deepest system folder, grant or hide holding `path` gives."""
    best: tuple[int, str] | None = None
    for folder, access in holders(case):
        if is_within(path, folder) and (best is None or _depth(folder) > best[0]):
            best = (_depth(folder), access)
    return best[1] if best else None


def _holding(path: str, case: Case) -> tuple[str, str] | None:
    holding = [(f, a) for f, a in holders(case) if f != path and is_within(path, f)]
    return max(holding, key=lambda h: _depth(h[0])) if holding else None


def closed_in_writes(case: Case) -> list[tuple[str, str]]:
    """(closed path, the outermost of the write grants holding it one in another): what
    the renames protect (a folder between two write grants moved away would carry the
    inner one with it)."""
    closed = [p.path for p in case.protected]
    closed += [g.target for g in case.grants if g.target and g.access in ("hide", "read")]
    found = []
    for path in closed:
        held = _holding(path, case)
        if held is None or held[1] != "write":
            continue
        folder = held[0]
        while (outer := _holding(folder, case)) is not None and outer[1] == "write":
            folder = outer[0]
        found.append((path, folder))
    return found


def move_blocked(path: str, case: Case) -> bool:
    return any(is_within(closed, path) and closed != path and is_within(path, root)
               for closed, root in closed_in_writes(case))


def protected_here(path: str, case: Case) -> bool:
    """Whether a protected dot file holds `path` below the deepest write grant holding
    it; one a write grant names by its own path is the person's to write (view.py),
    on macOS as on Linux."""
    written = {g.target for g in case.grants if g.access == "write"}
    top = max((_depth(f) for f in [TEMP, *(g.target or "" for g in case.grants)]
               if f and is_within(path, f) and deepest(f, case) == "write"), default=0)
    return any(is_within(path, p.path) and _depth(p.path) >= top and p.path not in written
               for p in case.protected)


def expected(op: str, path: str, case: Case) -> bool:
    access = deepest(path, case)
    if op == "file-read-data":
        return access in ("read", "write")
    if op.startswith("file-write") or op == "network-outbound":
        if access != "write" or protected_here(path, case):
            return False
        return not (op in ("file-write-create", "file-write-unlink")
                    and move_blocked(path, case))
    assert op == "process-exec*"
    if case.programs is None or case.learn:
        return access in ("read", "write")
    return access in ("read", "write") and path in {p.target for p in case.programs}


def queries(case: Case) -> list[tuple[str, str]]:
    found = {HOME, HOME + "/x", "/usr/bin/git", "/Users", TEMP + "/f"}
    for grant in case.grants:
        assert grant.target is not None
        found |= {grant.target, grant.target + "/x", grant.target + "/.git/config",
                  grant.target + "/agent.sock"}
    for item in case.protected:
        found |= {item.path, item.path + "/hooks", item.path + "/pre-commit"}
        found |= {a for a in ancestors(item.path) if is_within(a, HOME)}
    for program in case.programs or ():
        found.add(program.target)
    roots = {TEMP, *(g.target for g in case.grants)}
    ops = ("file-read-data", "file-write-data", "file-write-create", "file-write-unlink",
           "network-outbound", "process-exec*")
    # Making a grant's own folder is no question a profile answers: it is there.
    return [(op, path) for path in sorted(found) for op in ops
            if not (op == "file-write-create" and path in roots)]


def ancestors(path: str) -> list[str]:
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def case_variant(path: str) -> str:
    head, _, last = path.rpartition("/")
    return f"{head}/{last.swapcase()}"


@settings(max_examples=300, deadline=None)
@given(cases())
def test_the_profile_decides_as_the_deepest_rule(case: Case) -> None:
    ev = profile_of(case)
    for op, path in queries(case):
        assert ev.allows(op, path) == expected(op, path, case), (op, path)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_hidden_folders_are_denied_after_the_read_grants_holding_them(case: Case) -> None:
    ev = profile_of(case)
    for hide in (g for g in case.grants if g.access == "hide"):
        assert hide.target is not None
        denies = [r.index for r in ev.covering("file-read-data", hide.target)
                  if r.verb == "deny"]
        for grant in case.grants:
            if grant.access in ("read", "write") and grant.target and grant.target != \
                    hide.target and is_within(hide.target, grant.target):
                allows = [r.index for r in ev.covering("file-read-data", grant.target)
                          if r.verb == "allow" and not any(
                              ev.matches(f, "file-read-data", {"path": "/nowhere"})
                              for f in r.filters)]
                assert denies and max(denies) > max(allows), (hide.target, grant.target)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_no_write_grant_reopens_a_protected_dot_file(case: Case) -> None:
    ev = profile_of(case)
    for item in case.protected:
        if deepest(item.path, case) != "write" or any(
                g.access == "write" and g.target and is_within(g.target, item.path)
                for g in case.grants):
            continue  # closed otherwise, or a write grant the spec wrote at it or inside
        rules = ev.covering("file-write-create", item.path)
        denies = [r.index for r in rules if r.verb == "deny"]
        writes = [r.index for r in rules if r.verb == "allow"]
        assert denies and (not writes or max(writes) < max(denies)), item.path
        assert not ev.allows("file-write-create", item.path)
        assert not ev.allows("file-write-data", item.path + "/hooks/pre-commit")


@settings(max_examples=300, deadline=None)
@given(cases())
def test_a_missing_folder_above_a_protected_path_cannot_be_made(case: Case) -> None:
    """A hooks folder below a missing `tools`: `ln -s elsewhere tools` would move it."""
    ev = profile_of(case)
    checked = 0
    for item in case.protected:
        if item.placeholder is None or not protected_here(item.path, case):
            continue
        for folder in [item.placeholder, *(a for a in ancestors(item.path)
                                           if is_within(a, item.placeholder))]:
            assert not ev.allows("file-write-create", folder), (item.path, folder)
            assert not ev.allows("file-write-unlink", folder), (item.path, folder)
        checked += 1
    assert checked == sum(1 for p in case.protected
                          if p.placeholder and protected_here(p.path, case))


@settings(max_examples=300, deadline=None)
@given(cases())
def test_closed_paths_are_closed_in_any_letter_case(case: Case) -> None:
    ev = profile_of(case)
    for grant in case.grants:
        if grant.access == "hide" and deepest(grant.target or "", case) == "hide" and \
                any(deepest(a, case) in ("read", "write")
                    for a in ancestors(grant.target or "")):
            variant = case_variant(grant.target or "")
            if variant != grant.target:
                assert not ev.allows("file-read-data", variant + "/id_ed25519"), variant
    for item in case.protected:
        if protected_here(item.path, case):
            variant = case_variant(item.path)
            assert not ev.allows("file-write-create", variant), variant
            assert not ev.allows("file-write-data", variant + "/config"), variant


@settings(max_examples=100, deadline=None)
@given(cases())
def test_what_deny_default_does_not_reach_is_closed(case: Case) -> None:
    ev = profile_of(case)
    for op in ("process-info-pidinfo", "process-info-listpids", "process-info-pidfdinfo"):
        assert not ev.allows(op, target="others"), op
        assert ev.allows(op, target="self") and ev.allows(op, target="same-sandbox"), op
    for op in ("nvram-get", "nvram-set", "iokit-get-properties", "job-creation"):
        assert not ev.allows(op), op
    for path in (HOME + "/a/x", TEMP + "/x", "/usr/bin/x"):
        assert not ev.allows("file-write-setugid", path), path
        assert not ev.allows("file-link", path), path
    for op in ("ipc-posix-shm-read-data", "ipc-posix-shm-write-create"):
        assert not ev.allows(op, name="apple.shm.notification_center", owner="self"), op
    for op in ("ipc-posix-sem-create", "ipc-posix-sem-open", "ipc-posix-sem-wait"):
        assert ev.allows(op, name="/mp-abc", owner="same-sandbox"), op
        assert not ev.allows(op, name="/mp-abc", owner="others"), op
    ipc = [r for r in ev.rules if r.verb == "allow" and any(o.startswith("ipc") for o in r.ops)]
    assert [(r.ops, r.filters) for r in ipc] == [
        (["ipc-posix-sem*"], [["semaphore-owner", "same-sandbox"]])]
