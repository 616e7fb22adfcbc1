"""Placing one run in its sandbox (linux/placement.py): a session's /tmp in place of the
fresh tmpfs, and a working directory among what the sandbox sees, against exact plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.grants import Snapshot
from supervisor.limits import Limits, resolve
from supervisor.linux.confine import WRITE, landlock_rules
from supervisor.linux.placement import SESSION_TMP_REASON, confirm_working_directory
from supervisor.linux.plan import LaunchPlan, MountOp, RunMounts, build_plan
from support.snapshots import a_snapshot
from support.views import linux_view

from .test_plan import LAYOUT, snapshot, spec_grant


def spec(tmp_path: Path, *, tmp_granted: bool = False, size_asked: bool = False) -> Snapshot:
    """A project written, a folder in it hidden, /tmp granted itself or not."""
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True, exist_ok=True)
    grants = [spec_grant(".", str(project), "write", "files.write[0]"),
              spec_grant("./hidden", str(project / "hidden"), "hide", "files.hide[0]")]
    if tmp_granted:
        grants.append(spec_grant("/tmp", "/tmp", "write", "files.write[1]"))
    limits = resolve(Limits())
    return a_snapshot(*grants, home="/home/u", cwd=str(project), lnk_home="/home/u/.lnk",
                      limits=limits._replace(written=("tmp",)) if size_asked else limits)


def plan(tmp_path: Path, *, cwd: str | None = None, tmp: str | None = None,
         tmp_granted: bool = False, size_asked: bool = False,
         root_mode: bool = False) -> LaunchPlan:
    """The plan of `spec` placed as a harness asks, its working directory looked for on
    the host as a launch does (backend.plan_for)."""
    built = build_plan(linux_view(spec(tmp_path, tmp_granted=tmp_granted,
                                       size_asked=size_asked)),
                       LAYOUT, RunMounts(cwd=cwd, tmp=tmp), root_mode=root_mode)
    if cwd is not None:
        confirm_working_directory(built)
    return built


def test_a_session_tmp_replaces_the_fresh_one_in_place(tmp_path: Path) -> None:
    before = plan(tmp_path)
    after = plan(tmp_path, tmp="/home/u/.lnk/tmp/s1")
    at = before.ops.index(MountOp("tmpfs", "/tmp", reason="a fresh /tmp", size=1 << 30))
    assert after.ops[at] == MountOp("bind", "/tmp", "/home/u/.lnk/tmp/s1", SESSION_TMP_REASON)
    assert after.ops[:at] == before.ops[:at] and after.ops[at + 1:] == before.ops[at + 1:]
    assert after.chdir == before.chdir
    # Landlock holds it as a write grant, at /tmp, as it held the fresh one.
    rules = dict(landlock_rules(after, snapshot(), {}))
    assert set(WRITE) <= set(rules["/tmp"])


def test_a_spec_sizing_tmp_has_no_session_tmp(tmp_path: Path) -> None:
    """[limits] tmp is a tmpfs's size, which a folder kept on disk cannot hold."""
    with pytest.raises(LaunchError, match=r"\[limits\] tmp"):
        plan(tmp_path, tmp="/home/u/.lnk/tmp/s1", size_asked=True)
    assert MountOp("tmpfs", "/tmp", reason="a fresh /tmp", size=1 << 30) in plan(
        tmp_path, size_asked=True).ops


def test_run_by_root_the_session_tmp_is_the_sandboxs_own(tmp_path: Path) -> None:
    after = plan(tmp_path, tmp="/root/.lnk/tmp/s1", root_mode=True)
    assert MountOp("bind", "/tmp", "/root/.lnk/tmp/s1", SESSION_TMP_REASON,
                   idmapped=True) in after.ops


def test_a_spec_granting_tmp_itself_has_no_session_tmp(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="grants /tmp itself"):
        plan(tmp_path, tmp="/home/u/.lnk/tmp/s1", tmp_granted=True)


def test_the_working_directory_moves_only_the_chdir(tmp_path: Path) -> None:
    before = plan(tmp_path)
    sub = str(tmp_path / "proj" / "sub")
    assert plan(tmp_path, cwd=sub) == before._replace(chdir=sub)
    assert plan(tmp_path, cwd="/usr").chdir == "/usr"
    assert plan(tmp_path, cwd="/tmp").chdir == "/tmp"


@pytest.mark.parametrize("where", ["/home", "/proc", "{proj}/hidden/inside", "{proj}/missing",
                                   "/tmp/made-by-an-earlier-run", "relative/path"])
def test_a_working_directory_the_sandbox_does_not_see_is_refused(tmp_path: Path,
                                                                  where: str) -> None:
    cwd = where.format(proj=tmp_path / "proj")
    with pytest.raises(LaunchError, match="working directory"):
        plan(tmp_path, cwd=cwd)


def test_a_working_directory_in_the_session_tmp_is_looked_up_there(tmp_path: Path) -> None:
    session = tmp_path / "session"
    (session / "work").mkdir(parents=True)
    assert plan(tmp_path, cwd="/tmp/work", tmp=str(session)).chdir == "/tmp/work"
    with pytest.raises(LaunchError, match="does not exist in the sandbox"):
        plan(tmp_path, cwd="/tmp/other", tmp=str(session))
