"""Home's configuration under a read grant of home (home_config.py), judged without a
sandbox: what the snapshot adds, what the view decides for any name, what the Linux
plan mounts and Landlock allows, what describe and check say, and a saved snapshot from
before the rule. Sandboxes run it in tests/attacks/test_home_config.py."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import pytest

from supervisor.check import home_lines
from supervisor.describe import describe, render
from supervisor.errors import LaunchError
from supervisor.grants import (
    Snapshot,
    home_rule_due,
    pattern_folder,
    pattern_paths,
    resolve,
    working_directory_problem,
)
from supervisor.home_config import (
    DOT_ENTRIES,
    HIDDEN_REASON,
    PROFILES_REASON,
    REOPENED,
    REOPENED_REASON,
    SHOW_HINT,
)
from supervisor.linux.confine import landlock_rules
from supervisor.linux.home import HOME_FOLDER, MAX_SHOWN, Entry, HomeLayout
from supervisor.linux.home import probe as home_probe
from supervisor.linux.plan import HostLayout, MountOp, build_plan, host_access
from supervisor.permissions import digest, load_snapshot, save_snapshot
from supervisor.policy import LINUX_SYSTEM_FOLDERS, Context, effective_policy
from supervisor.spec import parse_spec
from supervisor.view import view_of


class Home:
    """A home at `root/home/u` with a project, a few of each kind of entry."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home" / "u"
        self.proj = self.home / "src" / "proj"
        for folder in (self.proj, self.home / ".ssh", self.home / ".config" / "pip",
                       self.home / ".rustup" / "toolchains", self.home / "Documents",
                       self.home / "snap" / "firefox" / "common",
                       self.home / ".nvm" / "versions" / "node" / "v20.1.0" / "bin",
                       self.home / ".nvm" / "versions" / "node" / "v20.1.0" / "etc"):
            folder.mkdir(parents=True)
        (self.home / "notes.txt").write_text("n")
        (self.home / ".netrc").write_text("x")
        (self.home / "code").symlink_to("src")

    def context(self, **changes: Any) -> Context:
        return Context(home=str(self.home), cwd=str(self.proj), lnk_home=str(
            self.home / ".lnk"), uid=1000, runtime_dir=None, installation=())._replace(
                **changes)

    def snapshot(self, text: str, **changes: Any) -> Snapshot:
        context = self.context(**changes)
        return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                       context)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path.resolve())


READ_HOME = '[files]\nread = ["~"]\nwrite = ["."]\n'


# -- the snapshot ---------------------------------------------------------------------------


def test_a_read_grant_of_home_adds_the_rule_and_the_places_reopened(home: Home) -> None:
    snapshot = home.snapshot(READ_HOME)
    h = str(home.home)
    assert snapshot.patterns[0] == snapshot.patterns[0]._replace(
        name=DOT_ENTRIES, target=f"{h}/.*", access="hide", reason=HIDDEN_REASON, key=None)
    assert {g.name for g in snapshot.patterns[1:]} == {
        e.name for e in REOPENED if "*" in e.name}
    reopened = {g.name: g.target for g in snapshot.grants if g.reason == REOPENED_REASON}
    assert reopened["~/.rustup"] == f"{h}/.rustup"
    assert reopened["~/.cargo/bin"] is None  # missing: left out
    hides = {g.name: g.target for g in snapshot.grants if g.reason == PROFILES_REASON}
    assert hides == {"~/snap": f"{h}/snap", "~/Games": None}


@pytest.mark.parametrize("reads", ["/", "{root}/home", "{root}"])
def test_a_read_grant_holding_home_adds_it_too(home: Home, reads: str) -> None:
    spec = f'[files]\nread = ["{reads.format(root=home.root)}"]\nwrite = ["."]\n'
    assert home.snapshot(spec).patterns[0].name == DOT_ENTRIES


def test_no_read_grant_of_home_adds_nothing(home: Home) -> None:
    assert home.snapshot('[files]\nread = ["~/Documents"]\nwrite = ["."]\n').patterns == ()
    assert not any(g.reason == REOPENED_REASON
                   for g in home.snapshot('[files]\nwrite = ["."]\n').grants)


def test_a_place_reached_through_a_link_is_left_out(home: Home) -> None:
    target = home.root / "elsewhere" / "rustup"
    target.mkdir(parents=True)
    (home.home / ".rustup" / "toolchains").rmdir()
    (home.home / ".rustup").rmdir()
    (home.home / ".rustup").symlink_to(target)
    reopened = {g.name: g.target for g in home.snapshot(READ_HOME).grants
                if g.reason == REOPENED_REASON}
    assert reopened["~/.rustup"] is None


@pytest.mark.parametrize("hidden", ["~/.nvm", "~/.nvm/versions/node/v20.1.0",
                                    "~/.nvm/versions/node/v20.1.0/bin"])
def test_what_the_spec_hides_is_never_reopened(home: Home, hidden: str) -> None:
    snapshot = home.snapshot(READ_HOME + f'hide = ["{hidden}"]\n')
    assert "~/.nvm/versions/node/*/bin" not in {g.name for g in snapshot.patterns}
    view = view_of(snapshot, LINUX_SYSTEM_FOLDERS)
    assert view.access(f"{home.home}/.nvm/versions/node/v20.1.0/bin/node") == "hide"


def test_a_spec_rule_at_a_reopened_place_is_the_specs(home: Home) -> None:
    snapshot = home.snapshot(READ_HOME + 'hide = ["~/.rustup"]\n')
    assert [g.reason for g in snapshot.grants if g.name == "~/.rustup"] == ["files.hide[0]"]


def test_home_at_the_root_gets_no_rule(home: Home) -> None:
    assert home.snapshot('[files]\nread = ["/"]\n', home="/", cwd="/").patterns == ()


# -- the view ----------------------------------------------------------------------------------


def test_the_view_hides_every_dot_path_and_shows_what_is_named(home: Home) -> None:
    h = str(home.home)
    spec = READ_HOME.replace('["~"]', '["~", "~/.config/pip", "~/.netrc"]')
    view = view_of(home.snapshot(spec), LINUX_SYSTEM_FOLDERS)
    name = secrets.token_hex(4)
    assert view.access(f"{h}/.{name}") == "hide"
    assert view.access(f"{h}/.{name}/{name}/{name}") == "hide"
    assert view.access(f"{h}/notes.txt") == "read"
    assert view.access(f"{h}/{name}") == "read"  # a file without a dot, made later
    assert view.access(f"{h}/.config/pip/x") == "read"
    assert view.access(f"{h}/.config/other") == "hide"
    assert view.access(f"{h}/.netrc") == "read"  # named itself: the person's choice
    assert view.access(f"{h}/snap/firefox/common/x") == "hide"
    assert view.access(f"{h}/.rustup/toolchains/x") == "read"
    assert view.access(f"{h}/.nvm/versions/node/v{name}/bin/node") == "read"
    assert view.access(f"{h}/.nvm/versions/node/v{name}/etc/npmrc") == "hide"
    assert view.access(f"{h}/src/proj/x") == "write"


def test_a_working_directory_in_home_s_configuration_is_refused(home: Home) -> None:
    config = home.home / ".config" / "pip"
    snapshot = home.snapshot('[files]\nread = ["~"]\n', cwd=str(config))
    problem = working_directory_problem(snapshot, LINUX_SYSTEM_FOLDERS)
    assert problem is not None and problem.message == (
        f"the working directory {config} is hidden from the sandbox ({HIDDEN_REASON}: "
        f"{DOT_ENTRIES}), so the command would start elsewhere")
    assert working_directory_problem(home.snapshot('[files]\nread = ["~"]\n'),
                                     LINUX_SYSTEM_FOLDERS) is None


def test_patterns_name_folders() -> None:
    assert pattern_folder("/h/.a/b", "/h/.*") == "/h/.a"
    assert pattern_folder("/h/a/b", "/h/.*") is None
    assert pattern_folder("/h/.n/v/v1/bin/x", "/h/.n/v/*/bin") == "/h/.n/v/v1/bin"
    assert pattern_folder("/h/.n/v/v1/etc", "/h/.n/v/*/bin") is None
    assert pattern_folder("/h/.n/v", "/h/.n/v/*/bin") is None


def test_a_pattern_s_paths_are_found_without_following_a_link(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    for name in ("v1", "v2"):
        (versions / name / "bin").mkdir(parents=True)
    (versions / "v3").symlink_to(versions / "v1")
    (versions / "v4").mkdir()
    (versions / "v4" / "bin").symlink_to(versions / "v1" / "bin")
    assert pattern_paths(f"{versions}/*/bin", 10) == (f"{versions}/v1/bin",
                                                      f"{versions}/v2/bin")
    assert pattern_paths(f"{versions}/*/bin", 1) == (f"{versions}/v1/bin",)


# -- the Linux plan, Landlock ------------------------------------------------------------------


LAYOUT = HostLayout(system=dict.fromkeys(LINUX_SYSTEM_FOLDERS), inner_source="/i",
                    interpreter="/usr/bin/python3", interpreter_prefix="/usr")


def _plan_ops(home: Home, spec: str) -> tuple[Snapshot, tuple[MountOp, ...]]:
    snapshot = home.snapshot(spec)
    layout = LAYOUT._replace(home=home_probe(snapshot))
    plan = build_plan(view_of(snapshot, LINUX_SYSTEM_FOLDERS), layout, root_mode=False)
    return snapshot, plan.ops


def test_home_is_a_folder_of_its_own_with_its_shown_entries_bound_back(home: Home) -> None:
    import socket

    h = str(home.home)
    with socket.socket(socket.AF_UNIX) as agent:
        agent.bind(f"{h}/agent.sock")  # at home's top: never shown, whatever it is
        _, ops = _plan_ops(home, READ_HOME)
    mine = [(op.kind, op.dest, op.source) for op in ops
            if op.dest.startswith(h) and not op.dest.startswith(f"{h}/src/proj/")]
    assert mine == [
        ("tmpfs", h, None),
        ("ro-bind", f"{h}/.rustup", f"{h}/.rustup"),
        ("ro-bind", f"{h}/Documents", f"{h}/Documents"),
        ("symlink", f"{h}/code", "src"),
        ("ro-bind", f"{h}/notes.txt", f"{h}/notes.txt"),
        ("ro-bind", f"{h}/src", f"{h}/src"),
        ("bind", f"{h}/src/proj", f"{h}/src/proj"),
        ("ro-bind", f"{h}/.nvm/versions/node/v20.1.0/bin",
         f"{h}/.nvm/versions/node/v20.1.0/bin"),
        ("remount-ro", h, None),
    ]


def test_a_read_grant_of_the_root_shows_home_the_same_way(home: Home) -> None:
    snapshot, ops = _plan_ops(home, '[files]\nread = ["/"]\nwrite = ["."]\n')
    h = str(home.home)
    assert next(op.kind for op in ops if op.dest == "/") == "ro-bind"
    assert ("tmpfs", HOME_FOLDER) in [(op.kind, op.reason) for op in ops if op.dest == h]
    plan = build_plan(view_of(snapshot, LINUX_SYSTEM_FOLDERS),
                      LAYOUT._replace(home=home_probe(snapshot)), root_mode=False)
    assert host_access(plan, h) == "read"
    assert host_access(plan, f"{h}/.ssh") is None
    assert host_access(plan, f"{h}/notes.txt") == "read"
    # Landlock: home's own folder is listed, nothing more.
    assert dict(landlock_rules(plan, snapshot, {}))[h] == ["read_dir"]


def test_too_many_entries_to_bind_back_refuse_the_launch(home: Home) -> None:
    snapshot = home.snapshot(READ_HOME)
    entries = tuple(Entry(f"e{i}", "folder") for i in range(MAX_SHOWN + 1))
    layout = LAYOUT._replace(home=HomeLayout(str(home.home), entries, {}))
    with pytest.raises(LaunchError) as caught:
        build_plan(view_of(snapshot, LINUX_SYSTEM_FOLDERS), layout, root_mode=False)
    assert caught.value.message.startswith(
        f"home ({home.home}) has {MAX_SHOWN + 1} entries without a dot at its top")
    assert caught.value.hint is not None and "files.read" in caught.value.hint


# -- describe, check, saved snapshots ---------------------------------------------------------


def test_describe_and_check_say_what_is_hidden_and_the_key_to_add(
        home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home.home))
    described = describe(home.snapshot(READ_HOME))
    config = described.home_configuration
    assert config is not None
    assert config.hidden == ["~/.config", "~/.netrc", "~/.nvm", "~/.ssh", "~/snap"]
    assert [item.name for item in config.shown] == ["~/.rustup", "~/.nvm/versions/node/*/bin"]
    assert config.how_to_show == SHOW_HINT
    text = render(described)
    assert (f"home's configuration ({home.home}): hidden, whatever its name; a read grant "
            "of home shows your files, not it:\n  hidden now: 5 entries: ~/.config, "
            "~/.netrc, ~/.nvm, ~/.ssh, ~/snap\n  shown: ~/.rustup, "
            f"~/.nvm/versions/node/*/bin\n  to show one, {SHOW_HINT}\n") in text
    assert json.loads(json.dumps(described.to_dict()))["home_configuration"]["hidden"][0] \
        == "~/.config"
    assert home_lines(home.snapshot(READ_HOME))[2] == f"to show a folder of it, {SHOW_HINT}"
    assert describe(home.snapshot('[files]\nwrite = ["."]\n')).home_configuration is None


def test_the_digest_counts_the_rule_and_not_where_a_reopened_place_is(home: Home) -> None:
    before = home.snapshot(READ_HOME)
    (home.home / ".cargo" / "bin").mkdir(parents=True)  # a toolchain installed since
    after = home.snapshot(READ_HOME)
    assert before != after and digest(before) == digest(after)
    assert digest(before) != digest(before._replace(patterns=()))
    # A spec without the rule keeps the digest it always had: no "patterns" in it.
    from supervisor.permissions import _allowed_content

    assert "patterns" not in _allowed_content(home.snapshot('[files]\nwrite = ["."]\n'))
    assert "patterns" in _allowed_content(before)


def test_a_snapshot_saved_before_the_rule_is_not_used(home: Home) -> None:
    snapshot = home.snapshot(READ_HOME)
    os.makedirs(snapshot.lnk_home, mode=0o700)
    old = snapshot._replace(patterns=())
    assert home_rule_due(old) and not home_rule_due(snapshot)
    key = save_snapshot(old)
    with pytest.raises(LaunchError) as caught:
        load_snapshot(snapshot.lnk_home, key)
    assert "was saved before a read grant of home hid home's configuration" \
        in caught.value.message


def test_the_inner_s_interpreter_in_a_reopened_toolchain_is_not_bound_whole(
        home: Home) -> None:
    """lnk-sandbox run by a pyenv Python: the inner needs the program and its standard
    library, both reopened, so the version's top (its pip.conf) is not bound too."""
    version = home.home / ".pyenv" / "versions" / "3.12.1"
    for folder in ("bin", "lib/python3.12"):
        (version / folder).mkdir(parents=True)
    (version / "pip.conf").write_text("[global]\nindex-url = https://u:SECRET@x\n")
    interpreter = LAYOUT._replace(interpreter=f"{version}/bin/python3.12",
                                  interpreter_prefix=str(version))
    for spec, whole in ((READ_HOME, False), ('[files]\nwrite = ["."]\n', True)):
        snapshot = home.snapshot(spec)
        plan = build_plan(view_of(snapshot, LINUX_SYSTEM_FOLDERS),
                          interpreter._replace(home=home_probe(snapshot)), root_mode=False)
        bound = [op.dest for op in plan.ops if op.reason == "the inner confiner's interpreter"]
        assert bound == ([str(version)] if whole else []), spec
        assert (host_access(plan, f"{version}/pip.conf") is not None) == whole
