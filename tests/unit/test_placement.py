"""Placing one run in its sandbox (linux/placement.py): a session's /tmp in place of the
fresh tmpfs, and a working directory among what the sandbox sees, against exact plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.linux.confine import WRITE, landlock_rules
from supervisor.linux.placement import SESSION_TMP_REASON, place
from supervisor.linux.plan import LaunchPlan, MountOp

from .test_plan import snapshot


def plan(tmp_path: Path, *, tmp_granted: bool = False, root_mode: bool = False) -> LaunchPlan:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True, exist_ok=True)
    ops = [
        MountOp("ro-bind", "/usr", "/usr", "system folder"),
        MountOp("proc", "/proc", reason="a fresh /proc"),
        MountOp("dev", "/dev", reason="a minimal /dev"),
        (MountOp("bind", "/tmp", "/tmp", "files.write: /tmp") if tmp_granted
         else MountOp("tmpfs", "/tmp", reason="a fresh /tmp")),
        MountOp("bind", str(project), str(project), "files.write[0]: ."),
        MountOp("tmpfs", str(project / "hidden"), reason="files.hide[0]: ./hidden"),
    ]
    return LaunchPlan(ops=tuple(ops), chdir=str(project), root_mode=root_mode,
                      share_net=False, interpreter="/usr/bin/python3")


def test_a_session_tmp_replaces_the_fresh_one_in_place(tmp_path: Path) -> None:
    before = plan(tmp_path)
    after = place(before, cwd=None, tmp="/home/u/.lnk/tmp/s1")
    assert after.ops[3] == MountOp("bind", "/tmp", "/home/u/.lnk/tmp/s1", SESSION_TMP_REASON)
    assert after.ops[:3] == before.ops[:3] and after.ops[4:] == before.ops[4:]
    assert after.chdir == before.chdir
    # Landlock holds it as a write grant, at /tmp, as it held the fresh one.
    rules = dict(landlock_rules(after, snapshot(), {}))
    assert set(WRITE) <= set(rules["/tmp"])


def test_a_spec_sizing_tmp_has_no_session_tmp(tmp_path: Path) -> None:
    """[limits] tmp is a tmpfs's size, which a folder kept on disk cannot hold."""
    with pytest.raises(LaunchError, match=r"\[limits\] tmp"):
        place(plan(tmp_path), cwd=None, tmp="/home/u/.lnk/tmp/s1", tmp_size_asked=True)
    assert place(plan(tmp_path), cwd=None, tmp=None, tmp_size_asked=True).ops[3].kind == \
        "tmpfs"


def test_run_by_root_the_session_tmp_is_the_sandboxs_own(tmp_path: Path) -> None:
    after = place(plan(tmp_path, root_mode=True), cwd=None, tmp="/root/.lnk/tmp/s1")
    assert after.ops[3].idmapped


def test_a_spec_granting_tmp_itself_has_no_session_tmp(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="grants /tmp itself"):
        place(plan(tmp_path, tmp_granted=True), cwd=None, tmp="/home/u/.lnk/tmp/s1")


def test_the_working_directory_moves_only_the_chdir(tmp_path: Path) -> None:
    before = plan(tmp_path)
    sub = str(tmp_path / "proj" / "sub")
    after = place(before, cwd=sub, tmp=None)
    assert after == before._replace(chdir=sub)
    assert place(before, cwd="/usr", tmp=None).chdir == "/usr"
    assert place(before, cwd="/tmp", tmp=None).chdir == "/tmp"


@pytest.mark.parametrize("where", ["/home", "/proc", "{proj}/hidden/inside", "{proj}/missing",
                                   "/tmp/made-by-an-earlier-run", "relative/path"])
def test_a_working_directory_the_sandbox_does_not_see_is_refused(tmp_path: Path,
                                                                  where: str) -> None:
    cwd = where.format(proj=tmp_path / "proj")
    with pytest.raises(LaunchError, match="working directory"):
        place(plan(tmp_path), cwd=cwd, tmp=None)


def test_a_working_directory_in_the_session_tmp_is_looked_up_there(tmp_path: Path) -> None:
    session = tmp_path / "session"
    (session / "work").mkdir(parents=True)
    after = place(plan(tmp_path), cwd="/tmp/work", tmp=str(session))
    assert after.chdir == "/tmp/work"
    with pytest.raises(LaunchError, match="does not exist in the sandbox"):
        place(plan(tmp_path), cwd="/tmp/other", tmp=str(session))
