"""git's identity and trace, read without running git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from supervisor.gitsupport import (
    Identity,
    failed_writers,
    identity_files,
    read_identity,
)


def test_the_identity_and_nothing_else_follows_includes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[user]\n\tname = Old Name\n")
    (home / ".gitconfig").write_text(
        "[include]\n\tpath = ~/.id\n[core]\n\tfsmonitor = /evil\n"
        '[includeIf "gitdir:./work/"]\n\tpath = work.inc\n'
        '[includeIf "onbranch:main"]\n\tpath = other.inc\n')
    (home / ".id").write_text('[user]\n\tname = "Ann \\"A\\" Example"\n\temail = ann@x.org\n')
    (home / "work.inc").write_text("[user]\n\temail = ann@work.example\n")
    (home / "other.inc").write_text("[core]\n\tpager = less\n")  # no identity: left out
    identity = read_identity(str(home))
    assert identity == Identity('Ann "A" Example', "ann@x.org",
                                ((f"gitdir:{home}/work/", None, "ann@work.example"),))
    files = identity_files(identity, "/run/lnk-sandbox/git")
    assert files == {
        "include-1": "# lnk-sandbox: your git identity, and nothing else of your git "
                     'settings\n[user]\n\temail = "ann@work.example"\n',
        "config": "# lnk-sandbox: your git identity, and nothing else of your git settings\n"
                  '[user]\n\tname = "Ann \\"A\\" Example"\n\temail = "ann@x.org"\n'
                  f'[includeIf "gitdir:{home}/work/"]\n'
                  '\tpath = "/run/lnk-sandbox/git/include-1"\n'}
    # git itself reads the file as meant.
    config = tmp_path / "config"
    config.write_text(files["config"].replace("/run/lnk-sandbox/git", str(tmp_path)))
    (tmp_path / "include-1").write_text(files["include-1"])
    read = subprocess.run(["git", "config", "--file", str(config), "--includes", "--list"],
                          capture_output=True, text=True, check=True).stdout
    assert read.splitlines()[:2] == ['user.name=Ann "A" Example', "user.email=ann@x.org"]


def test_no_settings_no_identity(tmp_path: Path) -> None:
    assert not read_identity(str(tmp_path))


def test_only_failed_writers_in_a_repository_are_found(tmp_path: Path) -> None:
    def trace(name: str, *events: dict[str, object]) -> None:
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in events))

    trace("a", {"event": "def_repo", "repo": 1, "worktree": "/p"},
          {"event": "cmd_name", "name": "add"}, {"event": "exit", "code": 128})
    trace("b", {"event": "def_repo", "repo": 1, "worktree": "/p"},
          {"event": "cmd_name", "name": "status"}, {"event": "exit", "code": 1})
    trace("c", {"event": "def_repo", "repo": 1, "worktree": "/p"},
          {"event": "cmd_name", "name": "commit"}, {"event": "exit", "code": 0})
    (tmp_path / "d").symlink_to(tmp_path / "a")  # planted: never followed
    (tmp_path / "e").write_text("not json\n[1]\n")
    assert [(f.command, f.worktree, f.code) for f in failed_writers(str(tmp_path))] == [
        ("add", "/p", 128)]


def test_stored_git_files_are_reused_and_old_ones_pruned(tmp_path: Path) -> None:
    import os

    from supervisor.linux.gitrun import UNUSED_DAYS, _identity_folder

    first = _identity_folder(str(tmp_path), {"config": "[user]\n\tname = A\n"})
    assert _identity_folder(str(tmp_path), {"config": "[user]\n\tname = A\n"}) == first
    assert (Path(first) / "config").read_text() == "[user]\n\tname = A\n"
    old = (UNUSED_DAYS + 1) * 86400
    stamp = os.stat(first).st_mtime - old
    os.utime(first, (stamp, stamp))
    kept = _identity_folder(str(tmp_path), {"config": "[user]\n\tname = B\n"})
    assert sorted(p.name for p in (tmp_path / "git").iterdir()) == [Path(kept).name]
