"""The check after a files.commit run (supervisor/commit_check.py) on real repositories,
with the run's writes made here between the record and the check: what is removed, set
aside or put back, and what is left alone. The attacks themselves, from a real sandbox
with the person's git run after, are tests/attacks/test_commit_mode.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from supervisor import commit_check
from supervisor.commit_check import _state, finish_killed
from supervisor.commit_git import HELD, _find_git
from supervisor.commit_undo import Check
from supervisor.host_walk import MAX_DEPTH

GIT = shutil.which("git")
pytestmark = pytest.mark.requires_git
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
       "GIT_CONFIG_GLOBAL": "/dev/null", "LANG": "C", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run([GIT or "git", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, check=True).stdout


def repository(tmp_path: Path) -> Path:
    top = tmp_path.resolve() / "repo"
    top.mkdir()
    git("init", "-q", "-b", "main", cwd=top)
    (top / "README").write_text("hello\n")
    git("add", "README", cwd=top)
    git("commit", "-qm", "first", cwd=top)
    return top


def check(top: Path, run: object) -> list[str]:
    """Record, let `run` (a callable) write as a sandbox would, check; what was said."""
    state = _state(str(top))
    assert state is not None
    run()  # type: ignore[operator]
    return Check(json.loads(json.dumps(state)), [str(top)]).run()


def test_a_link_deep_in_refs_is_removed_and_its_target_kept(tmp_path: Path) -> None:
    top = repository(tmp_path)
    outside = tmp_path / "outside"
    outside.write_text("yours\n")
    said = check(top, lambda: os.symlink(outside, top / ".git/refs/heads/x"))
    assert not os.path.lexists(top / ".git/refs/heads/x")
    assert outside.read_text() == "yours\n"
    assert any("refs/heads/x" in line for line in said)


def test_a_folder_deeper_than_git_makes_is_set_aside_unread(tmp_path: Path) -> None:
    top = repository(tmp_path)
    deep = top / ".git" / "refs" / "/".join(["d"] * (MAX_DEPTH + 5))

    def run() -> None:
        deep.mkdir(parents=True)
        os.symlink("/", deep / "link")

    said = check(top, run)
    assert any(f"more than {MAX_DEPTH} deep" in line for line in said)
    assert not os.path.lexists(deep / "link")  # its folder went, unread, link and all
    assert (top / ".git" / HELD / "unread-0").is_dir()


def test_lnk_held_made_a_link_is_replaced_not_followed(tmp_path: Path) -> None:
    top = repository(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run() -> None:
        os.symlink(elsewhere, top / ".git" / HELD)
        (top / ".git" / "sequencer").mkdir()
        (top / ".git" / "sequencer" / "todo").write_text("pick 0 x\n")

    said = check(top, run)
    assert any("set aside the cherry-pick" in line for line in said)
    assert (top / ".git" / HELD).is_dir() and not (top / ".git" / HELD).is_symlink()
    assert os.listdir(elsewhere) == []


def test_only_an_operations_own_names_are_put_back(tmp_path: Path) -> None:
    """What a run put in lnk-held/ comes back into the git directory only under the
    operation's own names: never as .git/config, nor over a rebase of yours."""
    top = repository(tmp_path)
    config = (top / ".git" / "config").read_bytes()
    aside = top / ".git" / HELD / "rebase"
    aside.mkdir(parents=True)
    (aside / "rebase-merge").mkdir()
    (aside / "config").write_text("[core]\n\tfsmonitor = evil\n")
    (aside / "hooks").mkdir()
    state = _state(str(top))
    assert state is not None and state["restored"] == {f"{top}/.git": ["rebase"]}
    assert (top / ".git" / "rebase-merge").is_dir()
    assert (top / ".git" / "config").read_bytes() == config
    assert not (aside).exists()
    # Yours in progress: nothing comes back over it.
    (aside / "rebase-merge").mkdir(parents=True)
    (aside / "rebase-merge" / "theirs").write_text("x")
    state = _state(str(top))
    assert state is not None and state["restored"] == {f"{top}/.git": []}
    assert not (top / ".git" / "rebase-merge" / "theirs").exists()


def test_an_operation_of_yours_left_as_it_was_stays(tmp_path: Path) -> None:
    top = repository(tmp_path)
    (top / ".git" / "BISECT_START").write_text("main\n")
    (top / ".git" / "BISECT_LOG").write_text("# yours\n")
    said = check(top, lambda: (top / ".git" / "COMMIT_EDITMSG").write_text("msg\n"))
    assert said == []
    assert (top / ".git" / "BISECT_START").read_text() == "main\n"


def test_an_operation_of_yours_the_run_changed_is_set_aside(tmp_path: Path) -> None:
    top = repository(tmp_path)
    (top / ".git" / "BISECT_START").write_text("main\n")
    said = check(top, lambda: (top / ".git" / "BISECT_START").write_text(
        "--pathspec-from-file=/etc/shadow\n"))
    assert any("set aside the bisect" in line for line in said)
    assert (top / ".git" / HELD / "bisect" / "BISECT_START").exists()
    assert not (top / ".git" / "BISECT_START").exists()


def test_a_gitlink_path_git_would_refuse_is_never_followed_out(tmp_path: Path) -> None:
    top = repository(tmp_path)
    for path in ("", ".", "..", "../x", "/etc", "a/../..", "sub/.git/x", "a//b"):
        assert Check.set_repository_aside(str(top), path) == ""
    assert (top / ".git").is_dir()


def test_git_is_never_taken_from_a_folder_the_sandbox_writes(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    written = tmp_path.resolve() / "project"
    (written / "bin").mkdir(parents=True)
    planted = written / "bin" / "git"
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"bin:{written}/bin:/usr/bin:/bin")
    found = _find_git([str(written)])
    assert found is not None and not found.startswith(str(written))


def test_a_killed_runs_record_is_checked_once_and_a_live_ones_left(tmp_path: Path) -> None:
    """A record whose lock is free is a killed run's, whatever its pid names (another pid
    namespace may share $LNK_HOME); one locked is alive, and left."""
    top = repository(tmp_path)
    lnk_home = tmp_path / "lnk"
    state = _state(str(top))
    assert state is not None
    live = commit_check._save(str(lnk_home), [state], [str(top)])
    assert live is not None
    folder = lnk_home / commit_check.PENDING
    os.symlink("/etc/passwd", top / ".git" / "COMMIT_EDITMSG.lnk")
    record = json.dumps({"states": [state], "written": [str(top)]})
    (folder / f"{os.getpid()}-00000000.json").write_text(record)  # this pid, unlocked: dead
    (folder / "1-00000001.json").write_text("not a record")
    finish_killed(str(lnk_home))
    assert not os.path.lexists(top / ".git" / "COMMIT_EDITMSG.lnk")
    assert sorted(os.listdir(folder)) == [live[1]]
    commit_check.CommitCheck([], [], live).finish()
    assert os.listdir(folder) == []
