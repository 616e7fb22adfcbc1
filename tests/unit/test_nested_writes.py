"""What a sandbox could still move, reopen or write around what a written folder keeps,
found by a red team comparing the plans and profiles before and after the view (commit
1699755 against a272e6a) and attacking real runs: a protection only the run's temp folder
writes (macOS, a regression of the view), the folders between two write grants and
above the installation (a repository or lnk-sandbox itself moved away and planted
again), and a folder the name rule hides shown again by a dot file's mount point. Each
test is the property, the run that showed it in its docstring.
"""

from __future__ import annotations

from pathlib import Path

from supervisor.dotfiles import DotFiles, Protected
from supervisor.grants import Grant, Snapshot
from supervisor.linux.plan import HostLayout, LaunchPlan, build_plan, host_access
from supervisor.macos.profile import MacHost, compile_profile
from supervisor.policy import LINUX_SYSTEM_FOLDERS, MACOS_SYSTEM_FOLDERS
from supervisor.secret_names import Found
from supervisor.view import View, view_of
from support.snapshots import a_snapshot

from .macos_seatbelt import Seatbelt

LAYOUT = HostLayout(system=dict.fromkeys(LINUX_SYSTEM_FOLDERS), inner_source="/i",
                    interpreter="/usr/bin/python3", interpreter_prefix="/usr")
INSTALLATION = "the installation running lnk-sandbox"


def write(name: str, target: str, index: int = 0) -> Grant:
    key = f"files.write[{index}]"
    return Grant(name, target, "write", key, key, 1)


def snap(home: str, *grants: Grant) -> Snapshot:
    return a_snapshot(*grants, source="spec.toml", home=home, cwd=home, keep=())


def mount_points(plan: LaunchPlan) -> set[str]:
    return {op.dest for op in plan.ops if op.kind in ("bind", "ro-bind", "tmpfs")}


def between(outer: str, inner: str) -> list[str]:
    """The folders strictly between `outer` and `inner`."""
    parts = inner[len(outer):].strip("/").split("/")[:-1]
    return [outer + "/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


# -- a regression of the view (macOS) -------------------------------------------------


def test_a_protection_only_the_runs_temp_folder_writes_stays_read_only_on_macos() -> None:
    """The view keeps a rule that keeps a path read-only only where its own rules (the
    spec's) write it; the macOS profile then adds its own write rule, the run's temp
    folder, and can no longer close what lies there. Before the view the profile judged
    that with its own rules too, and kept it read-only. Latent: the temp folder is made
    fresh for each run (or is a session's, in $LNK_HOME), so nothing protected is in it
    today; but the profile no longer says what the view says."""
    home = "/Users/me"
    grant = Grant("/Users/me/t/inst", "/Users/me/t/inst", "protect", INSTALLATION, None, None)
    profile = compile_profile(view_of(snap(home, grant), MACOS_SYSTEM_FOLDERS),
                              MacHost(home, temp="/Users/me/t"))
    model = Seatbelt(profile.text, profile.parameters)
    assert model.allows("file-write-data", "/Users/me/t/x")  # the temp folder writes
    assert not model.allows("file-write-data", "/Users/me/t/inst/x")


# -- what held in neither version before ------------------------------------------------


def nested(home: str, system: tuple[str, ...]) -> tuple[str, str, View]:
    """write = ["~/src", "~/src/team/proj"], proj a repository: (outer, inner, view)."""
    outer, inner = f"{home}/src", f"{home}/src/team/proj"
    dots = {inner: DotFiles(inner, (Protected(f"{inner}/.git", ".git", "folder", True,
                                              "git"),))}
    return outer, inner, view_of(snap(home, write("~/src", outer),
                                      write("~/src/team/proj", inner, 1)), system, dots)


def test_folders_between_two_write_grants_holding_protections_are_mount_points() -> None:
    outer, inner, view = nested("/home/u", LINUX_SYSTEM_FOLDERS)
    plan = build_plan(view, LAYOUT, root_mode=False)
    assert set(between(outer, inner)) <= mount_points(plan)


def test_folders_between_two_write_grants_holding_protections_cannot_move_on_macos() -> None:
    home = "/Users/me"
    outer, inner, view = nested(home, MACOS_SYSTEM_FOLDERS)
    profile = compile_profile(view, MacHost(home))
    model = Seatbelt(profile.text, profile.parameters)
    assert not model.allows("file-write-data", f"{inner}/.git/config")
    for folder in between(outer, inner):
        assert not model.allows("file-write-unlink", folder), folder


def test_the_installation_inside_a_write_grant_cannot_be_renamed_away_on_linux() -> None:
    home = "/home/u"
    package = f"{home}/src/tools/lnk/supervisor"
    view = view_of(snap(home, write("~/src", f"{home}/src"),
                        Grant(package, package, "protect", INSTALLATION, None, None)),
                   LINUX_SYSTEM_FOLDERS)
    plan = build_plan(view, LAYOUT, root_mode=False)
    assert package in mount_points(plan)
    assert set(between(f"{home}/src", package)) <= mount_points(plan)


def test_a_folder_the_name_rule_hides_stays_hidden_when_a_dot_file_lies_below_it() -> None:
    home = "/home/u"
    top = f"{home}/.config/app"
    dots = {top: DotFiles(top, (Protected(f"{top}/tokens/hooks", "core.hooksPath", "folder",
                                          True, "hooks"),))}
    layout = LAYOUT._replace(secrets=(Found(f"{top}/tokens", True),))
    plan = build_plan(view_of(snap(home, write("~/.config/app", top)), LINUX_SYSTEM_FOLDERS,
                              dots), layout, root_mode=False)
    at = [op for op in plan.ops if op.dest == f"{top}/tokens"
          and op.kind in ("bind", "ro-bind", "tmpfs")]
    assert at and at[-1].kind == "tmpfs", at  # the last mount there is the hide


def test_no_mount_point_is_made_writable_inside_a_read_grant() -> None:
    """Folders are bound onto themselves only between a written folder and what is
    mounted inside it: one inside a read grant below it stays read-only."""
    home = "/home/u"
    view = view_of(snap(home, write("~/p", f"{home}/p"),
                        Grant("~/p/r", f"{home}/p/r", "read", "files.read[0]",
                              "files.read[0]", 1),
                        Grant("~/p/r/s/x", f"{home}/p/r/s/x", "hide", "files.hide[0]",
                              "files.hide[0]", 1)),
                   LINUX_SYSTEM_FOLDERS)
    plan = build_plan(view, LAYOUT, root_mode=False)
    assert not any(op.dest == f"{home}/p/r/s" for op in plan.ops)
    assert host_access(plan, f"{home}/p/r/s/y") == "read"


def test_describe_lists_no_protection_the_spec_writes_by_its_own_path(
        tmp_path: Path) -> None:
    """With write = ["~/p", "~/p/.vscode"], .vscode is the sandbox's to write (the view
    keeps it open, and the run does): describe no longer lists it as read-only."""
    from supervisor.describe import describe

    project = tmp_path / "p"
    (project / ".vscode").mkdir(parents=True)
    (project / ".idea").mkdir()
    view_snapshot = snap(str(tmp_path), write("~/p", str(project)),
                         write("~/p/.vscode", str(project / ".vscode"), 1))
    shown = {item.name for item in describe(view_snapshot).protected}
    assert str(project / ".idea") in shown and str(project / ".vscode") not in shown
