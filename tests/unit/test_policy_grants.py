"""The effective policy and the grant snapshot, resolved against real folders and links."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import supervisor
from supervisor.environment import DEFAULT_KEEP
from supervisor.errors import LaunchError, SpecError
from supervisor.grants import (
    SNAPSHOT_VERSION,
    Grant,
    Program,
    Snapshot,
    expand_name,
    is_within,
    resolve,
)
from supervisor.home_config import PROFILES_REASON
from supervisor.limits import Limits
from supervisor.limits import resolve as resolve_limits
from supervisor.policy import (
    Context,
    PathRule,
    Policy,
    RunSettings,
    credential_names,
    effective_policy,
    installation_paths,
    profile_names,
)
from supervisor.spec import load_spec, parse_spec
from support.capabilities import missing

CREDENTIALS = "default hide: credentials"
SETTINGS = "lnk-sandbox's settings ($LNK_HOME)"


@dataclass(frozen=True)
class Tree:
    """A machine in miniature: root/home/u (with proj, .ssh, .lnk) and root/data/d."""

    root: Path
    home: Path
    proj: Path
    lnk: Path
    data: Path

    def context(self, **changes: Any) -> Context:
        context = Context(
            home=str(self.home),
            cwd=str(self.proj),
            lnk_home=str(self.lnk),
            uid=1000,
            runtime_dir=None,
            installation=(),
        )
        return context._replace(**changes)

    def snapshot(self, text: str, **changes: object) -> Snapshot:
        context = self.context(**changes)
        return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                       context)

    def refused(self, text: str, **changes: object) -> SpecError:
        with pytest.raises(SpecError) as caught:
            self.snapshot(text, **changes)
        assert caught.value.file == "spec.toml"
        return caught.value


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = tmp_path.resolve()
    home = root / "home" / "u"
    tree = Tree(root, home, home / "proj", home / ".lnk", root / "data")
    for folder in (tree.proj, home / ".ssh", tree.lnk, tree.data / "d" / "sub"):
        folder.mkdir(parents=True)
    (home / "link").symlink_to(tree.data / "d")
    return tree


def by_name(snapshot: Snapshot, name: str) -> Grant:
    found = [g for g in snapshot.grants if g.name == name]
    assert len(found) == 1, found
    return found[0]


def default_hides(names_left_out: tuple[str, ...] = ()) -> tuple[PathRule, ...]:
    """The credentials' hides, then the folders without a dot that hold programs'
    profiles (~/snap, ~/Games), each left out where the spec names it."""
    return tuple(PathRule(n, "hide", True, CREDENTIALS) for n in credential_names("linux")
                 if n not in names_left_out) + tuple(
        PathRule(n, "hide", True, PROFILES_REASON) for n in profile_names("linux")
        if n not in names_left_out)


# --- the effective policy ----------------------------------------------------------------


def test_effective_policy_of_the_default_spec(tree: Tree) -> None:
    policy = effective_policy(load_spec(None), tree.context())
    assert policy == Policy(
        source="<default spec>",
        rules=(
            PathRule(".", "write", False, "files.write[0]", "files.write[0]", 6),
            *default_hides(),
            PathRule("$LNK_HOME", "hide", True, SETTINGS),
        ),
        programs=None,
        programs_line=None,
        settings=RunSettings(network_mode="none", env_keep=DEFAULT_KEEP,
                             env_assign=(), agent=None, session=None),
    )


def test_everything_the_policy_adds(tree: Tree) -> None:
    spec = parse_spec(
        b'agent = "rev"\nsession = "s1"\n[files]\nread = ["~", "~/.ssh/known_hosts"]\n'
        b'write = ["."]\nhide = ["~/.aws"]\nwrite_dot_files = ["."]\n'
        b'[commands]\nprograms = ["git"]\n[network]\nmode = "proxy"\nallow = ["pypi.org"]\n'
        b'[env]\nkeep = ["PATH"]\nset = { A = "1" }\n',
        "spec.toml",
    )
    context = tree.context(runtime_dir="/run/user/1000", installation=("/opt/lnk", "/venv"))
    policy = effective_policy(spec, context)
    assert policy.rules == (
        PathRule("~", "read", False, "files.read[0]", "files.read[0]", 4),
        PathRule("~/.ssh/known_hosts", "read", False, "files.read[1]", "files.read[1]", 4),
        PathRule(".", "write", False, "files.write[0]", "files.write[0]", 5,
                 dot_files_writable=True),
        PathRule("~/.aws", "hide", False, "files.hide[0]", "files.hide[0]", 6),
        # ~/.aws is named by the spec, so its default hide is not added twice; naming a
        # path inside ~/.ssh leaves ~/.ssh itself hidden.
        *default_hides(("~/.aws",)),
        PathRule("/run/user/1000", "hide", True,
                 "default hide: agent sockets ($XDG_RUNTIME_DIR)"),
        PathRule("$LNK_HOME", "hide", True, SETTINGS),
        PathRule("$LNK_HOME/agents/rev", "write", False, "the agent 'rev''s own folder",
                 dot_files_writable=True),
        PathRule("$LNK_HOME/sessions/s1", "write", False, "the session 's1''s folder",
                 dot_files_writable=True),
        PathRule("/opt/lnk", "protect", True, "the installation running lnk-sandbox"),
        PathRule("/venv", "protect", True, "the installation running lnk-sandbox"),
    )
    assert (policy.programs, policy.programs_line) == (("git",), 9)
    assert (policy.settings.network_mode, policy.network.texts("allow")) == ("proxy",
                                                                             ("pypi.org",))
    assert (policy.settings.env_keep, policy.settings.env_assign) == (("PATH",), (("A", "1"),))
    assert (policy.settings.agent, policy.settings.session) == ("rev", "s1")


def test_a_spec_naming_the_runtime_dir_or_a_credential_replaces_the_default_hide(
    tree: Tree,
) -> None:
    spec = parse_spec(b'[files]\nread = ["~/.ssh", "/run/user/1000"]\n', "spec.toml")
    rules = effective_policy(spec, tree.context(runtime_dir="/run/user/1000")).rules
    hides = [r.name for r in rules if r.access == "hide"]
    assert hides == [*(n for n in credential_names("linux") if n != "~/.ssh"),
                     *profile_names("linux"), "$LNK_HOME"]


def test_context_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path) + "//h/")
    monkeypatch.delenv("LNK_HOME", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/run")
    monkeypatch.chdir(tmp_path)
    context = Context.current()
    assert context.home == f"{tmp_path}/h"
    assert context.lnk_home == f"{tmp_path}/h/.lnk"
    assert context.cwd == os.getcwd()
    assert context.uid == os.geteuid()
    assert context.runtime_dir is None
    monkeypatch.setenv("LNK_HOME", str(tmp_path) + "//l/")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/7/")
    context = Context.current()
    assert context.lnk_home == f"{tmp_path}/l"
    assert context.runtime_dir == "/run/user/7"


@pytest.mark.parametrize("name", ["HOME", "LNK_HOME"])
@pytest.mark.parametrize("value", ["rel/lnk", ".", "~/x", "./x"])
def test_a_relative_home_or_lnk_home_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path, name: str, value: str) -> None:
    """A relative one would be another folder from each working directory: settings
    made in the project the sandbox writes, a home that is wherever a command starts."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LaunchError) as caught:
        Context.current()
    assert caught.value.message == (f"{name}={value!r} is not an absolute path, so it "
                                    "would name another folder from each working directory")
    assert caught.value.hint and caught.value.hint.startswith(f"set {name} to the absolute")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("home", "expected"), [("/", "/"), ("//", "/"), ("//h//", "/h"),
                                                ("///h", "/h")])
def test_a_home_at_the_root_or_below_two_slashes_is_plain(
        monkeypatch: pytest.MonkeyPatch, home: str, expected: str) -> None:
    """POSIX lets two leading slashes mean something else, so normpath keeps them, and
    every folder above `//h` was `//` again (a RecursionError resolving home's places)."""
    monkeypatch.setenv("HOME", home)
    monkeypatch.setenv("LNK_HOME", "/nonexistent/lnk")
    context = Context.current()
    assert context.home == expected
    assert context.lnk_home == "/nonexistent/lnk"


def test_installation_paths_are_the_packages_and_both_prefixes() -> None:
    package_root = Path(supervisor.__file__).resolve().parent.parent
    paths = installation_paths()
    assert paths == tuple(sorted(paths))
    assert str(package_root / "supervisor") in paths
    assert str(package_root / "inner") in paths
    assert str(package_root / "lnk_sandbox") in paths  # the harnesses' API runs outside too
    assert os.path.realpath(sys.prefix) in paths
    assert os.path.realpath(sys.base_prefix) in paths


# --- names and paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expanded"),
    [
        ("~", "/home/u"),
        ("~/a/b", "/home/u/a/b"),
        (".", "/work/p"),
        ("./src", "/work/p/src"),
        ("$LNK_HOME", "/home/u/.lnk"),
        ("$LNK_HOME/agents/a", "/home/u/.lnk/agents/a"),
        ("$LNK_HOMEX", "$LNK_HOMEX"),
        ("/srv/data", "/srv/data"),
        ("/", "/"),
        ("~user", "~user"),
    ],
)
def test_expand_name(name: str, expanded: str) -> None:
    assert expand_name(name, "/home/u", "/work/p", "/home/u/.lnk") == expanded


@pytest.mark.parametrize(
    ("path", "folder", "expected"),
    [
        ("/a", "/a", True),
        ("/a/b", "/a", True),
        ("/ab", "/a", False),
        ("/a", "/a/b", False),
        ("/anything", "/", True),
        ("/", "/", True),
        ("/", "/a", False),
    ],
)
def test_is_within(path: str, folder: str, expected: bool) -> None:
    assert is_within(path, folder) is expected


# --- resolution ---------------------------------------------------------------------------


def test_default_spec_snapshot(tree: Tree) -> None:
    (tree.home / ".netrc").write_text("machine x\n")
    context = tree.context()
    snapshot = resolve(effective_policy(load_spec(None), context), context)
    hidden = {
        "~/.ssh": str(tree.home / ".ssh"),
        "~/.netrc": str(tree.home / ".netrc"),
    }
    assert snapshot == Snapshot(
        version=SNAPSHOT_VERSION,
        source="<default spec>",
        home=str(tree.home),
        cwd=str(tree.proj),
        lnk_home=str(tree.lnk),
        uid=1000,
        grants=(
            Grant(".", str(tree.proj), "write", "files.write[0]", "files.write[0]", 6),
            *(Grant(n, hidden.get(n), "hide", CREDENTIALS, None, None, False,
                    is_dir=n != "~/.netrc") for n in credential_names("linux")),
            *(Grant(n, None, "hide", PROFILES_REASON, None, None)
              for n in profile_names("linux")),
            Grant("$LNK_HOME", str(tree.lnk), "hide", SETTINGS, None, None),
        ),
        programs=None,
        settings=RunSettings(network_mode="none", env_keep=DEFAULT_KEEP,
                             env_assign=(), agent=None, session=None),
        # The defaults for this machine's memory (limits.py), resolved into the snapshot.
        limits=resolve_limits(Limits()),
    )
    assert snapshot.visible() == (snapshot.grants[0],)


def test_a_name_through_a_link_keeps_the_name_and_the_target(tree: Tree) -> None:
    snapshot = tree.snapshot('[files]\nread = ["~/link"]\n')
    assert snapshot.grants[0] == Grant("~/link", str(tree.data / "d"), "read",
                                       "files.read[0]", "files.read[0]", 2)


def test_a_file_grant_is_not_a_folder(tree: Tree) -> None:
    (tree.data / "f").write_text("x")
    snapshot = tree.snapshot(f'[files]\nread = ["{tree.data}/f"]\n')
    assert (snapshot.grants[0].target, snapshot.grants[0].is_dir) == (str(tree.data / "f"),
                                                                      False)


def test_a_file_below_a_grant_and_a_second_name_of_it_are_not_folders(tree: Tree) -> None:
    (tree.home / "file").write_text("x")
    snapshot = tree.snapshot('[files]\nread = ["~", "~/file", "~/proj"]\n')
    assert [(g.name, g.is_dir) for g in snapshot.grants[:3]] == [
        ("~", True), ("~/file", False), ("~/proj", True)]
    snapshot = tree.snapshot(f'[files]\nread = ["~/file", "{tree.home}/file"]\n')
    assert [(g.target, g.is_dir) for g in snapshot.grants[:2]] == [
        (str(tree.home / "file"), False)] * 2


def test_the_root_grant_is_the_outer_grant_whatever_the_order(tree: Tree) -> None:
    if not os.path.islink("/bin"):
        missing("this machine's /bin is not a link (no merged /usr)")
    for text in ('[files]\nread = ["/bin", "/"]\n', '[files]\nread = ["/", "/bin"]\n'):
        error = tree.refused(text)
        assert error.message.startswith(
            f"'/bin': /bin is a link (to {os.readlink('/bin')}) inside the grant '/'")


def test_a_grant_below_a_linked_grant_resolves_only_the_outer_root(tree: Tree) -> None:
    snapshot = tree.snapshot('[files]\nread = ["~/link"]\nwrite = ["~/link/sub"]\n')
    assert by_name(snapshot, "~/link").target == str(tree.data / "d")
    assert by_name(snapshot, "~/link/sub") == Grant(
        "~/link/sub", str(tree.data / "d" / "sub"), "write", "files.write[0]",
        "files.write[0]", 3)


def test_a_link_in_a_nested_grants_suffix_is_refused_and_named(tree: Tree) -> None:
    (tree.proj / "out").symlink_to(tree.data / "d")
    error = tree.refused('[files]\nread = ["~"]\nwrite = ["./out/sub"]\n')
    assert (error.key, error.line) == ("files.write[0]", 3)
    assert error.message == (
        f"'./out/sub': {tree.proj}/out is a link (to {tree.data}/d) inside the grant "
        f"{str(tree.home)!r}; inside a granted folder only the folder itself is resolved"
    )
    assert error.hint == ("name the link's target in the spec if that is what you mean "
                          "(the sandbox may have planted the link)")


def test_a_nested_grant_listed_first_still_resolves_below_its_outer_grant(tree: Tree) -> None:
    (tree.proj / "docs").symlink_to(tree.data / "d")
    error = tree.refused('[files]\nread = ["./docs", "~"]\n')
    assert error.key == "files.read[0]"
    assert f"{tree.proj}/docs is a link" in error.message


def test_without_an_outer_grant_the_same_link_resolves(tree: Tree) -> None:
    (tree.proj / "out").symlink_to(tree.data / "d")
    snapshot = tree.snapshot('[files]\nwrite = ["./out/sub"]\n')
    assert snapshot.grants[0].target == str(tree.data / "d" / "sub")


def test_a_link_deep_in_the_suffix_is_the_one_named(tree: Tree) -> None:
    (tree.proj / "a").mkdir()
    (tree.proj / "a" / "b").symlink_to(tree.data / "d")
    error = tree.refused('[files]\nread = ["~"]\nwrite = ["./a/b/sub"]\n')
    assert error.message.startswith(
        f"'./a/b/sub': {tree.proj}/a/b is a link (to {tree.data}/d) inside the grant")


def test_the_outer_grant_of_a_nested_grant_may_be_optional_and_missing(tree: Tree) -> None:
    (tree.home / "gone").symlink_to(tree.data / "d")
    snapshot = tree.snapshot(
        '[files]\nread = [{ path = "~/nope", optional = true }, "~/gone/sub"]\n')
    assert [g.target for g in snapshot.grants[:2]] == [None, str(tree.data / "d" / "sub")]


def test_optional_missing_grants_have_no_target(tree: Tree) -> None:
    snapshot = tree.snapshot(
        '[files]\nread = ["~", { path = "~/nope", optional = true }]\n'
        'write = [{ path = "/nonexistent-lnk-test", optional = true }]\n')
    assert by_name(snapshot, "~/nope").target is None
    assert by_name(snapshot, "/nonexistent-lnk-test").target is None
    assert [g.name for g in snapshot.visible()] == ["~"]


@pytest.mark.parametrize(
    ("text", "key", "line", "missing"),
    [
        ('[files]\nread = ["~/nope"]\n', "files.read[0]", 2, "{home}/nope"),
        ('[files]\nread = ["~"]\nwrite = ["./nope/x"]\n', "files.write[0]", 3,
         "{home}/proj/nope/x"),
        ('[files]\nwrite = [\n  { path = "/nonexistent-lnk-test" },\n]\n', "files.write[0]", 2,
         "/nonexistent-lnk-test"),
    ],
)
def test_required_missing_grants_are_refused(
    tree: Tree, text: str, key: str, line: int, missing: str
) -> None:
    error = tree.refused(text)
    name = text.split('"')[-2]
    expanded = missing.format(home=tree.home)
    assert (error.key, error.line) == (key, line)
    assert error.message == f"{name!r}: {expanded} cannot be granted: No such file or directory"
    assert error.hint == 'create it, or write the grant as { path = "...", optional = true }'


def test_a_file_in_the_middle_of_a_path_is_missing_not_a_crash(tree: Tree) -> None:
    (tree.home / "file").write_text("x")
    error = tree.refused('[files]\nread = ["~/file/x"]\n')
    assert error.message.endswith("cannot be granted: Not a directory")
    error = tree.refused('[files]\nread = ["~"]\nwrite = ["~/file/x"]\n')
    assert error.message.endswith("cannot be granted: Not a directory")


def test_a_link_loop_is_missing_not_a_crash(tree: Tree) -> None:
    (tree.home / "loop").symlink_to(tree.home / "loop")
    error = tree.refused('[files]\nread = ["~/loop"]\n')
    assert error.message.endswith("cannot be granted: Too many levels of symbolic links")


def test_a_write_grant_resolving_to_the_root_is_refused(tree: Tree) -> None:
    (tree.home / "rootlink").symlink_to("/")
    error = tree.refused('[files]\nwrite = ["~/rootlink"]\n')
    assert (error.key, error.line) == ("files.write[0]", 2)
    assert error.message == ("'~/rootlink': resolves to '/', and a write grant of '/' opens "
                             "every file")


@pytest.mark.parametrize("which", ["home", "holder", "link", "holder-link"])
def test_a_write_grant_of_home_or_of_a_folder_holding_it_is_refused(
    tree: Tree, which: str
) -> None:
    (tree.root / "to-home").symlink_to(tree.home)
    (tree.root / "to-holder").symlink_to(tree.home.parent)
    name, target = {
        "home": (str(tree.home), tree.home),
        "holder": (str(tree.root), tree.root),
        "link": (f"{tree.root}/to-home", tree.home),
        "holder-link": (f"{tree.root}/to-holder", tree.home.parent),
    }[which]
    error = tree.refused(f'[files]\nwrite = ["{name}"]\n')
    assert (error.key, error.line) == ("files.write[0]", 2)
    assert error.message == (
        f"{name!r}: resolves to {target}, which is or holds the home folder; a sandbox "
        "writing there could change what runs at your next login "
        "(.bashrc, .profile, .ssh, autostart)")


def test_a_write_grant_of_the_real_home_behind_a_linked_home_is_refused(tree: Tree) -> None:
    (tree.root / "home-link").symlink_to(tree.home)
    error = tree.refused(f'[files]\nwrite = ["{tree.home}"]\n', home=str(tree.root / "home-link"))
    assert "which is or holds the home folder" in error.message


def test_a_read_grant_of_home_is_allowed_and_keeps_its_hides(tree: Tree) -> None:
    snapshot = tree.snapshot('[files]\nread = ["~"]\n')
    assert by_name(snapshot, "~").target == str(tree.home)
    assert by_name(snapshot, "~/.ssh").target == str(tree.home / ".ssh")
    assert by_name(snapshot, "$LNK_HOME").target == str(tree.lnk)


@pytest.mark.parametrize(
    ("access", "name", "inside"),
    [
        ("read", "~/.lnk", "{lnk}"),
        ("read", "~/.lnk/x", "{lnk}/x"),
        ("write", "~/.lnk/agents", "{lnk}/agents"),
        ("read", "~/settings", "{lnk}"),
        ("write", "~/out", "{lnk}/out"),
    ],
)
def test_grants_inside_lnk_home_are_refused(
    tree: Tree, access: str, name: str, inside: str
) -> None:
    for folder in ("x", "agents", "out"):
        (tree.lnk / folder).mkdir()
    (tree.home / "settings").symlink_to(tree.lnk)
    (tree.home / "out").symlink_to(tree.lnk / "out")
    error = tree.refused(f'[files]\n{access} = ["{name}"]\n')
    assert (error.key, error.line) == (f"files.{access}[0]", 2)
    assert error.message == (
        f"{name!r}: {inside.format(lnk=tree.lnk)} is inside lnk-sandbox's settings "
        f"($LNK_HOME = {tree.lnk}), which every sandbox is denied")
    assert error.hint == 'use `agent = "NAME"` or `session = "ID"` for a folder kept there'


def test_lnk_home_outside_home_and_behind_a_link(tree: Tree) -> None:
    real = tree.root / "settings-real"
    real.mkdir()
    (tree.root / "settings").symlink_to(real)
    error = tree.refused(f'[files]\nread = ["{real}"]\n', lnk_home=str(tree.root / "settings"))
    assert f"{real} is inside lnk-sandbox's settings" in error.message


def test_a_default_hide_yields_to_an_explicit_grant_of_the_same_target(tree: Tree) -> None:
    (tree.home / "keys").symlink_to(tree.home / ".ssh")
    snapshot = tree.snapshot('[files]\nread = ["~/keys"]\n')
    assert by_name(snapshot, "~/keys").target == str(tree.home / ".ssh")
    assert "~/.ssh" not in [g.name for g in snapshot.grants]
    # Named by its own path inside a home grant, the same holds.
    snapshot = tree.snapshot(f'[files]\nread = ["~", "{tree.home}/.ssh"]\n')
    assert [g.name for g in snapshot.grants if g.target == str(tree.home / ".ssh")] == [
        f"{tree.home}/.ssh"]


def test_a_spec_hide_does_not_yield_it_contradicts(tree: Tree) -> None:
    (tree.home / "keys").symlink_to(tree.home / ".ssh")
    error = tree.refused('[files]\nread = ["~/keys"]\nhide = ["~/.ssh"]\n')
    assert (error.key, error.line) == ("files.hide[0]", 3)
    assert error.message == (f"'~/.ssh': resolves to {tree.home}/.ssh, the same as '~/keys' "
                             "(files.read[0]), which is read")
    assert error.hint == "a folder is either hidden, read or written: keep one of the two"


def test_read_and_write_of_one_target_contradict(tree: Tree) -> None:
    error = tree.refused('[files]\nread = ["~/link"]\nwrite = ["/' +
                         str(tree.data / "d").lstrip("/") + '"]\n')
    assert error.key == "files.write[0]"
    assert error.message.endswith("the same as '~/link' (files.read[0]), which is read")


def test_two_names_of_one_target_with_one_access_are_both_kept(tree: Tree) -> None:
    snapshot = tree.snapshot(f'[files]\nread = ["~/link", "{tree.data}/d"]\n')
    assert [(g.name, g.target) for g in snapshot.visible()] == [
        ("~/link", str(tree.data / "d")), (f"{tree.data}/d", str(tree.data / "d"))]


def test_hides_follow_links_and_may_be_missing(tree: Tree) -> None:
    (tree.home / ".aws").symlink_to(tree.data / "d")
    snapshot = tree.snapshot('[files]\nread = ["~"]\nhide = ["~/nothing-here"]\n')
    assert by_name(snapshot, "~/.aws").target == str(tree.data / "d")
    assert by_name(snapshot, "~/nothing-here").target is None
    assert by_name(snapshot, "~/.gnupg").target is None


def test_installation_inside_a_grant_is_protected(tree: Tree) -> None:
    venv = tree.proj / ".venv"
    venv.mkdir()
    snapshot = tree.snapshot('[files]\nwrite = ["."]\n',
                             installation=(str(venv), "/nonexistent-lnk-test"))
    assert snapshot.grants[-2:] == (
        Grant(str(venv), str(venv), "protect", "the installation running lnk-sandbox",
              None, None),
        Grant("/nonexistent-lnk-test", None, "protect",
              "the installation running lnk-sandbox", None, None),
    )


def test_agent_and_session_folders_are_reopened_writable(tree: Tree) -> None:
    (tree.lnk / "agents" / "rev").mkdir(parents=True)
    (tree.lnk / "sessions" / "s1").mkdir(parents=True)
    snapshot = tree.snapshot('agent = "rev"\nsession = "s1"\n[files]\nread = ["~"]\n')
    assert by_name(snapshot, "$LNK_HOME/agents/rev") == Grant(
        "$LNK_HOME/agents/rev", str(tree.lnk / "agents" / "rev"), "write",
        "the agent 'rev''s own folder", None, None, dot_files_writable=True)
    assert by_name(snapshot, "$LNK_HOME/sessions/s1") == Grant(
        "$LNK_HOME/sessions/s1", str(tree.lnk / "sessions" / "s1"), "write",
        "the session 's1''s folder", None, None, dot_files_writable=True)
    assert (snapshot.settings.agent, snapshot.settings.session) == ("rev", "s1")


def test_a_missing_agent_folder_is_refused_naming_the_rule(tree: Tree) -> None:
    error = tree.refused('agent = "rev"\n')
    assert error.key == "the agent 'rev''s own folder"
    assert error.message == (f"'$LNK_HOME/agents/rev': {tree.lnk}/agents/rev cannot be "
                             "granted: No such file or directory")


def test_dot_files_writable_is_carried_into_the_snapshot(tree: Tree) -> None:
    (tree.proj / "b").mkdir()
    snapshot = tree.snapshot('[files]\nwrite = [".", "./b"]\nwrite_dot_files = ["./b"]\n')
    assert [(g.name, g.dot_files_writable) for g in snapshot.visible()] == [
        (".", False), ("./b", True)]


# --- programs -----------------------------------------------------------------------------


def test_programs_resolve_through_path_and_links(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tree.root / "bin"
    bin_dir.mkdir()
    tool = tree.data / "tool-1.0"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    (bin_dir / "tool").symlink_to(tool)
    (tree.home / "bin").mkdir()
    (tree.home / "bin" / "mine").write_text("")
    monkeypatch.setenv("PATH", str(bin_dir))
    snapshot = tree.snapshot(f'[commands]\nprograms = ["tool", "{bin_dir}/tool", "~/bin/mine"]\n')
    assert snapshot.programs == (
        Program("tool", str(tool)),
        Program(f"{bin_dir}/tool", str(tool)),
        Program("~/bin/mine", str(tree.home / "bin" / "mine")),
    )
    assert tree.snapshot("[commands]\nprograms = []\n").programs == ()
    assert tree.snapshot("").programs is None


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("no-such-tool", "'no-such-tool' is not a program on this machine (not found in PATH)"),
        ("/nonexistent/tool", "'/nonexistent/tool' is not a program on this machine"),
        ("/", "'/' is not a program on this machine"),
    ],
)
def test_missing_programs_are_refused(
    tree: Tree, monkeypatch: pytest.MonkeyPatch, program: str, message: str
) -> None:
    monkeypatch.setenv("PATH", str(tree.data))
    error = tree.refused(f'\n[commands]\nprograms = ["{program}"]\n')
    assert (error.key, error.line, error.message) == ("commands.programs[0]", 3, message)


# --- the snapshot as data -----------------------------------------------------------------


def test_snapshot_json_round_trip(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree.lnk / "agents" / "a").mkdir(parents=True)
    (tree.data / "x").write_text("")
    (tree.data / "x").chmod(0o755)
    monkeypatch.setenv("PATH", str(tree.data))
    snapshot = tree.snapshot(
        'agent = "a"\n[files]\nread = ["~", { path = "~/nope", optional = true }]\n'
        'write = ["."]\nwrite_dot_files = ["."]\n[commands]\nprograms = ["x"]\n'
        '[network]\nmode = "proxy"\nallow = ["pypi.org"]\n'
        '[env]\nkeep = ["PATH"]\nset = { A = "1", B = "" }\n')
    text = snapshot.to_json()
    assert Snapshot.from_json(text) == snapshot
    assert json.loads(text)["version"] == SNAPSHOT_VERSION
    bare = tree.snapshot("")
    assert Snapshot.from_json(bare.to_json()) == bare


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_snapshot_of_another_version_is_refused(tree: Tree, version: object) -> None:
    data = json.loads(tree.snapshot("").to_json())
    data["version"] = version
    with pytest.raises(ValueError, match="is not supported"):
        Snapshot.from_json(json.dumps(data))


def test_a_saved_snapshot_keeps_its_run_settings_at_the_top_level() -> None:
    """The run settings are one record the policy and the snapshot share (RunSettings),
    but a saved snapshot (a wrapped command's) and a remembered permission's digest keep
    them flat, as before the record: a snapshot saved by an older lnk-sandbox loads, and
    every digest a person allowed stays the same."""
    from supervisor.hostnames import parse_host_pattern
    from supervisor.netpolicy import NetworkRules

    settings = RunSettings("proxy", ("PATH",), (("A", "1"),), "rev", "s1")
    snapshot = Snapshot(SNAPSHOT_VERSION, "s.toml", "/h", "/h/p", "/h/.lnk", 1000, (), None,
                        settings, NetworkRules(allow=(parse_host_pattern("pypi.org"),)))
    saved = json.loads(snapshot.to_json())
    assert "settings" not in saved
    assert {key: saved[key] for key in (*settings._fields, "network_allow")} == {
        "network_mode": "proxy", "network_allow": ["pypi.org"], "env_keep": ["PATH"],
        "env_assign": [["A", "1"]], "agent": "rev", "session": "s1"}
    assert Snapshot.from_json(json.dumps(saved)) == snapshot
