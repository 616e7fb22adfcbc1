"""The view (supervisor/view.py): one judgement of what a sandbox sees, that Linux's
plan, macOS's profile and describe each render.

First the judgement itself, on fixed cases: the deepest rule decides, of one folder the
one laid last (system folders, then grants, then what keeps a written path read-only,
then hides); a rule keeping a path read-only counts only where the sandbox writes; a
link in a protected path the sandbox writes refuses the launch, naming its folder.
Then, for random grants, hides and dot files, that both backends render the same view:
what the Linux plan's mounts show of each host path, and what the macOS profile lets a
process read and write (read back with the Seatbelt model), are what the view says.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.dotfiles import DotFiles, Protected
from supervisor.errors import LaunchError
from supervisor.grants import Grant, Snapshot, is_within, pattern_folder
from supervisor.home_config import DOT_ENTRIES, HIDDEN_REASON, REOPENED_REASON
from supervisor.linux.home import Entry, HomeLayout
from supervisor.linux.plan import HostLayout, build_plan, host_access
from supervisor.macos.profile import MacHost, compile_profile
from supervisor.policy import LINUX_SYSTEM_FOLDERS, MACOS_SYSTEM_FOLDERS, Access, RunSettings
from supervisor.view import View, view_of

from .macos_seatbelt import Seatbelt

HOME = "/home/u"


def grant(name: str, target: str, access: Access, index: int = 0, *,
          dot_files_writable: bool = False) -> Grant:
    key = f"files.{access}[{index}]"
    return Grant(name, target, access, key, key, 1, dot_files_writable)


def snap(*grants: Grant, home: str = HOME) -> Snapshot:
    return Snapshot(
        1,
        "spec.toml",
        home,
        home,
        home + "/.lnk",
        1000,
        grants,
        None,
        RunSettings("none", (), (), None, None))


def view(*grants: Grant, dots: tuple[Protected, ...] = (), top: str = f"{HOME}/p",
         system: tuple[str, ...] = LINUX_SYSTEM_FOLDERS, home: str = HOME) -> View:
    return view_of(snap(*grants, home=home), system, {top: DotFiles(top, dots)} if dots else {})


GIT = Protected(f"{HOME}/p/.git", ".git", "folder", True, "git runs what is there")


# -- the judgement ---------------------------------------------------------------------


def test_the_deepest_rule_decides_and_system_folders_are_laid_first() -> None:
    seen = view(grant("~", HOME, "read"), grant("~/p", f"{HOME}/p", "write", 1),
                grant("~/p/s", f"{HOME}/p/s", "hide", 2),
                grant("~/p/s/o", f"{HOME}/p/s/o", "read", 3),
                grant("/opt", "/opt", "write", 4))
    assert seen.access(f"{HOME}/x") == "read"
    assert seen.access(f"{HOME}/p/x") == "write"
    assert seen.access(f"{HOME}/p/s/x") == "hide" and not seen.sees(f"{HOME}/p/s/x")
    assert seen.access(f"{HOME}/p/s/o/x") == "read"  # a grant inside a hide: open again
    assert seen.access("/usr/bin/git") == "read"  # a system folder
    assert seen.access("/opt/x") == "write"  # a grant at a system folder decides
    assert seen.access("/srv/x") is None and not seen.sees("/srv/x")


def test_of_rules_at_one_folder_the_one_that_narrows_decides() -> None:
    """A hide at a granted folder closes it (a default hide and a grant of one folder),
    a protection at a written one keeps it read-only; `strict` asks what holds it."""
    closed = view(grant("~/p", f"{HOME}/p", "write"), grant("~/p", f"{HOME}/p", "hide", 1))
    assert closed.access(f"{HOME}/p/x") == "hide"
    kept = view(grant("~/p", f"{HOME}/p", "write"),
                grant("lnk", f"{HOME}/p", "protect", 1))
    assert kept.access(f"{HOME}/p/x") == "keep"
    assert kept.access(f"{HOME}/p/x", keeps=False) == "write"
    assert kept.access(f"{HOME}/p", strict=True) is None


def test_what_keeps_a_path_read_only_counts_only_where_the_sandbox_writes() -> None:
    """A protection inside a hidden or unseen folder decides nothing (Linux lays no bind
    there, macOS emits no deny): the path stays hidden, not read."""
    hidden = view(grant("~", HOME, "read"), grant("~/s", f"{HOME}/s", "hide", 1),
                  grant("lnk", f"{HOME}/s/lnk", "protect", 2))
    assert hidden.access(f"{HOME}/s/lnk/x") == "hide"
    assert all(r.effect != "keep" for r in hidden.rules)
    written = view(grant("~/p", f"{HOME}/p", "write"), dots=(GIT,))
    assert written.access(f"{HOME}/p/.git/config") == "keep"
    assert [r.protected for r in written.rules if r.effect == "keep"] == [GIT]


def test_a_dot_file_the_spec_writes_by_its_own_path_is_the_persons_choice() -> None:
    named = view(grant("~/p", f"{HOME}/p", "write"),
                 grant("~/p/.git", f"{HOME}/p/.git", "write", 1), dots=(GIT,))
    assert named.access(f"{HOME}/p/.git/config") == "write"
    assert named.protections == ((named.snapshot.grants[0], GIT),)


def test_a_link_in_a_protected_path_where_the_sandbox_writes_refuses_the_launch() -> None:
    linked = GIT._replace(path="/elsewhere/git", link=f"{HOME}/p/.git")
    written = view(grant("~/p", f"{HOME}/p", "write"), dots=(linked,))
    with pytest.raises(LaunchError) as caught:
        written.check_links()
    assert caught.value.message.startswith(
        f"{HOME}/p/.git is a link in the path of .git (git runs what is there), in "
        f"{HOME}/p, which the sandbox writes")
    # Read-only or hidden where it lies: no one's to repoint.
    view(grant("~/p", f"{HOME}/p", "write"), grant("~/p/.git", f"{HOME}/p/.git", "read", 1),
         dots=(linked,)).check_links()
    view(grant("~/p", f"{HOME}/p", "write"), grant("~/p/.git", f"{HOME}/p/.git", "hide", 1),
         dots=(linked,)).check_links()


def test_a_missing_dot_file_a_program_could_make_is_held() -> None:
    hooks = Protected(f"{HOME}/p/tools/hooks", "core.hooksPath", "folder", False, "hooks",
                      placeholder=f"{HOME}/p/tools")
    envrc = Protected(f"{HOME}/p/.envrc", ".envrc", "file", False, "direnv")
    seen = view(grant("~/p", f"{HOME}/p", "write"), dots=(GIT, hooks, envrc))
    assert [item for _, item in seen.held()] == [hooks]


def test_opened_tops_have_no_protections() -> None:
    opened = view(grant("~/p", f"{HOME}/p", "write", dot_files_writable=True), dots=(GIT,))
    assert opened.protections == () and opened.access(f"{HOME}/p/.git/x") == "write"


# -- both backends render the same view --------------------------------------------------

NAMES = ("a", "b", ".git", ".c")
Case = tuple[tuple[Grant, ...], tuple[Protected, ...], tuple[Grant, ...]]


@st.composite
def cases(draw: st.DrawFn, home: str) -> Case:
    """Grants, hides and protected dot files at random paths in home; and, half the
    time, home's dot entries hidden by pattern, with a reopened pattern inside one."""
    paths = draw(st.lists(
        st.lists(st.sampled_from(NAMES), min_size=0, max_size=3).map(
            lambda parts: "/".join([home, *parts])),
        min_size=1, max_size=6, unique=True))
    grants = []
    for i, path in enumerate(paths):
        choices: list[Access] = ["read", "write", "hide"] if path != home else ["read", "hide"]
        access = draw(st.sampled_from(choices))
        grants.append(grant(path.replace(home, "~", 1), path, access, i,
                            dot_files_writable=access == "write" and draw(st.booleans())))
    protected = tuple(Protected(f"{g.target}/.git", ".git", "folder", True, "git")
                      for g in grants if g.access == "write" and not g.dot_files_writable)
    patterns: tuple[Grant, ...] = ()
    if draw(st.booleans()):
        patterns = (Grant(DOT_ENTRIES, home + "/.*", "hide", HIDDEN_REASON, None, None),)
        if draw(st.booleans()):
            patterns += (Grant("~/.c/*/b", home + "/.c/*/b", "read", REOPENED_REASON,
                               None, None),)
    return tuple(grants), protected, patterns


def view_with(case: Case, home: str, system: tuple[str, ...]) -> View:
    grants, protected, patterns = case
    found: dict[str, DotFiles] = {}
    for item in protected:
        top = item.path.rsplit("/", 1)[0]
        found[top] = DotFiles(top, (*found.get(top, DotFiles(top, ())).protected, item))
    return view_of(snap(*grants, home=home)._replace(patterns=patterns), system, found)


def queries(case: Case, home: str) -> list[str]:
    found = {home, f"{home}/x", f"{home}/a/x", "/usr/bin/git", "/srv/x", f"{home}/.x/y",
             f"{home}/.c/z/b/f", f"{home}/.c/z/b", f"{home}/.c/z/o", f"{home}/.c/a/b/c"}
    for g in case[0]:
        assert g.target is not None
        found |= {g.target, f"{g.target}/x", f"{g.target}/.git/config", f"{g.target}/a/b"}
    return sorted(found)


LAYOUT = HostLayout(system=dict.fromkeys(LINUX_SYSTEM_FOLDERS), inner_source="/i",
                    interpreter="/usr/bin/python3", interpreter_prefix="/usr")
SHOWN = {"read": "read", "keep": "read", "write": "write", "hide": None, None: None}


def linux_layout(case: Case, home: str) -> HostLayout:
    """The host the queries ask about: each of their first components in home is a
    folder there, and each path a reopened pattern names is found."""
    paths = queries(case, home)
    entries = sorted({p[len(home) + 1:].split("/")[0] for p in paths
                      if is_within(p, home) and p != home})
    expanded = {g.target: tuple(sorted({folder for p in paths if (folder := pattern_folder(
        p, g.target)) is not None})) for g in case[2] if g.access == "read" and g.target}
    return LAYOUT._replace(home=HomeLayout(home, tuple(Entry(e, "folder") for e in entries),
                                           expanded))


@settings(max_examples=400, deadline=None)
@given(cases(HOME))
def test_the_linux_plan_shows_what_the_view_says(case: Case) -> None:
    seen = view_with(case, HOME, LINUX_SYSTEM_FOLDERS)
    plan = build_plan(seen, linux_layout(case, HOME), root_mode=False)
    for path in queries(case, HOME):
        if is_within(path, HOME + "/.lnk"):
            continue
        assert host_access(plan, path) == SHOWN[seen.access(path)], path


MAC_HOME = "/Users/me"


@settings(max_examples=400, deadline=None)
@given(cases(MAC_HOME))
def test_the_macos_profile_allows_what_the_view_says(case: Case) -> None:
    seen = view_with(case, MAC_HOME, MACOS_SYSTEM_FOLDERS)
    profile = compile_profile(seen, MacHost(MAC_HOME))
    model = Seatbelt(profile.text, profile.parameters)
    for path in queries(case, MAC_HOME):
        access = SHOWN[seen.access(path)]
        assert model.allows("file-read-data", path) == (access is not None), path
        assert model.allows("file-write-data", path) == (access == "write"), path
