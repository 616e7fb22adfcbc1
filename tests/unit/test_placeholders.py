"""The placeholder state on real folders: made, joined, released, pruned after a killed
holder, never removed from under a live one, with 16 holders at once."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.linux.placeholders import (
    LOCK_NAME,
    STATE_NAME,
    Kind,
    Placeholders,
    Wanted,
    _parse,
    _render,
)
from supervisor.linux.proc_stat import process_start


@pytest.fixture
def lnk_home(tmp_path: Path) -> Path:
    return tmp_path.resolve() / "lnk"


@pytest.fixture
def top(tmp_path: Path) -> Path:
    folder = tmp_path.resolve() / "proj"
    folder.mkdir()
    return folder


def state(lnk_home: Path) -> dict[str, tuple[Kind, int, int, tuple[str, ...]]]:
    return Placeholders(str(lnk_home)).entries()


def test_a_missing_folder_is_made_listed_and_removed_after(lnk_home: Path, top: Path) -> None:
    places = Placeholders(str(lnk_home))
    held = places.hold([Wanted(str(top / ".git"), "folder")])
    info = os.lstat(top / ".git")
    assert os.listdir(top / ".git") == []
    assert held.paths == [str(top / ".git")]
    pid, start = os.getpid(), process_start(os.getpid())
    assert state(lnk_home) == {
        str(top / ".git"): ("folder", info.st_dev, info.st_ino, (held.token,))}
    # The pid and start time mean a process only in the pid namespace they were read in.
    namespace = os.stat("/proc/self/ns/pid").st_ino
    assert held.token.startswith(f"{pid}:{start}.{namespace}:")
    assert (lnk_home / LOCK_NAME).exists()
    assert os.stat(lnk_home).st_mode & 0o777 == 0o700
    held.release()
    assert not (top / ".git").exists()
    assert not (lnk_home / STATE_NAME).exists()  # nothing left to list
    held.release()  # a second release does nothing


def test_a_second_run_joins_and_the_last_one_out_removes(lnk_home: Path, top: Path) -> None:
    first = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".vscode"), "folder")])
    second = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".vscode"), "folder")])
    assert second.paths == [str(top / ".vscode")]
    holders = state(lnk_home)[str(top / ".vscode")][3]
    assert holders == (first.token, second.token)
    first.release()
    assert (top / ".vscode").is_dir()  # the second run still holds it
    second.release()
    assert not (top / ".vscode").exists()


def test_a_settings_folder_lingers_for_the_next_run_then_goes(
        lnk_home: Path, top: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A placeholder that may linger stays LINGER_SECONDS after its last run, held by
    `~DEADLINE`, and the next run joins it (the same folder, nothing made or removed
    around it); one that may not goes with its run; once the deadline passed, the next
    start removes it."""
    from supervisor.linux import placeholders as module

    places = Placeholders(str(lnk_home))
    wanted = [Wanted(str(top / ".vscode"), "folder", linger=True),
              Wanted(str(top / ".env"), "folder")]
    first = places.hold(wanted)
    made = os.lstat(top / ".vscode")
    assert first.lingering == [str(top / ".vscode")]
    first.release()
    assert not (top / ".env").exists()
    now = int(time.time())
    (holder,) = state(lnk_home)[str(top / ".vscode")][3]
    assert holder.startswith("~") and now < int(holder[1:]) <= now + module.LINGER_SECONDS + 1
    second = places.hold(wanted)
    assert os.lstat(top / ".vscode").st_ino == made.st_ino  # joined, not made again
    assert state(lnk_home)[str(top / ".vscode")][3] == (holder, second.token)
    second.release()
    assert len(state(lnk_home)[str(top / ".vscode")][3]) == 1  # one deadline, renewed
    monkeypatch.setattr(time, "time", lambda: now + module.LINGER_SECONDS + 60)
    places.hold([]).release()  # any later start prunes it
    assert not (top / ".vscode").exists() and state(lnk_home) == {}


def test_a_lingering_folder_written_to_is_the_persons(lnk_home: Path, top: Path) -> None:
    places = Placeholders(str(lnk_home))
    places.hold([Wanted(str(top / ".claude"), "folder", linger=True)]).release()
    (top / ".claude" / "settings.json").write_text("{}")  # the person's tool, meanwhile
    held = places.hold([Wanted(str(top / ".claude"), "folder", linger=True)])
    held.release()  # not empty: the person's now, forgotten, left as it is
    assert (top / ".claude" / "settings.json").read_text() == "{}"
    assert state(lnk_home) == {}


def test_a_socket_placeholder_is_no_folder_git_may_search(lnk_home: Path, top: Path) -> None:
    """refs held as a socket: nobody listening, mode 0644, so access(X_OK), git's test
    of refs/ and objects/, fails even for root; listed as `s`, removed after."""
    import stat

    held = Placeholders(str(lnk_home)).hold([Wanted(str(top / "refs"), "socket")])
    info = os.lstat(top / "refs")
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644
    assert not os.access(top / "refs", os.X_OK)
    assert state(lnk_home)[str(top / "refs")][0] == "socket"
    assert b"\ns " in (lnk_home / STATE_NAME).read_bytes()
    with pytest.raises(OSError) as opened:
        open(top / "refs", "rb")  # noqa: SIM115 - fails at once, never waits
    assert opened.value.errno == 6  # ENXIO
    held.release()
    assert not os.path.lexists(top / "refs")


def test_the_persons_own_folder_is_bound_but_never_listed(lnk_home: Path, top: Path) -> None:
    (top / ".idea").mkdir()
    held = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".idea"), "folder")])
    assert held.paths == []
    assert state(lnk_home) == {}
    held.release()
    assert (top / ".idea").is_dir()


def test_a_placeholder_written_to_or_replaced_is_left_and_forgotten(
        lnk_home: Path, top: Path) -> None:
    places = Placeholders(str(lnk_home))
    held = places.hold([Wanted(str(top / ".git"), "folder"),
                        Wanted(str(top / ".husky"), "folder"),
                        Wanted(str(top / "extra.cfg"), "file")])
    (top / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # outside, meanwhile
    os.rename(top / ".husky", top / "old")
    (top / ".husky").mkdir()  # another inode (the old one still there, so not reused)
    os.rmdir(top / "old")
    (top / "extra.cfg").write_text("[core]\n")
    held.release()
    assert (top / ".git" / "HEAD").exists()
    assert (top / ".husky").is_dir()
    assert (top / "extra.cfg").read_text() == "[core]\n"
    assert state(lnk_home) == {}


def test_an_empty_file_placeholder_is_removed(lnk_home: Path, top: Path) -> None:
    held = Placeholders(str(lnk_home)).hold([Wanted(str(top / "lefthook-local.yml"), "file")])
    assert (top / "lefthook-local.yml").read_bytes() == b""
    held.release()
    assert not (top / "lefthook-local.yml").exists()


def test_a_link_where_a_placeholder_goes_refuses_and_undoes_the_rest(
        lnk_home: Path, top: Path, tmp_path: Path) -> None:
    (top / ".idea").symlink_to(tmp_path)
    places = Placeholders(str(lnk_home))
    with pytest.raises(LaunchError) as caught:
        places.hold([Wanted(str(top / ".git"), "folder"), Wanted(str(top / ".idea"), "folder")])
    assert caught.value.message.startswith(f"{top}/.idea is a link (to {tmp_path}) where a "
                                           "dot file is held read-only for the run")
    assert caught.value.hint == "remove the link, or list its folder in files.write_dot_files"
    assert not (top / ".git").exists()  # made, then removed again
    assert state(lnk_home) == {}


def test_a_link_in_the_folders_above_refuses(lnk_home: Path, top: Path) -> None:
    (top / "real").mkdir()
    (top / "scripts").symlink_to("real")
    with pytest.raises(LaunchError, match=f"{top}/scripts is a link"):
        Placeholders(str(lnk_home)).hold([Wanted(str(top / "scripts" / "hooks"), "folder")])
    assert os.listdir(top / "real") == []


def test_a_killed_holder_is_pruned_at_the_next_start(lnk_home: Path, top: Path,
                                                     tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the "supervisor" that is killed
        try:
            os.close(read_end)
            Placeholders(str(lnk_home)).hold([Wanted(str(top / ".git"), "folder")])
            os.write(write_end, b"held")
            time.sleep(60)
        finally:
            os._exit(1)
    os.close(write_end)
    assert os.read(read_end, 4) == b"held"
    os.close(read_end)
    assert (top / ".git").is_dir()
    os.kill(pid, signal.SIGKILL)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie holds
    # nothing either
    other = tmp_path / "other"
    other.mkdir()
    held = Placeholders(str(lnk_home)).hold([])  # a start elsewhere, wanting nothing
    assert not (top / ".git").exists()
    assert state(lnk_home) == {}
    held.release()
    os.waitpid(pid, 0)


def test_a_reused_pid_is_no_holder(lnk_home: Path, top: Path) -> None:
    (top / ".git").mkdir()
    info = os.lstat(top / ".git")
    stale = f"{os.getpid()}:1:1"  # this pid, but a start time that is not this process's
    (lnk_home).mkdir(mode=0o700)
    (lnk_home / STATE_NAME).write_bytes(
        b"lnk-placeholders 1\nd %d %d %s %s\n" % (info.st_dev, info.st_ino, stale.encode(),
                                                  str(top / ".git").encode()))
    Placeholders(str(lnk_home)).hold([]).release()
    assert not (top / ".git").exists()


def test_nested_placeholders_go_with_the_last_holder(lnk_home: Path, top: Path) -> None:
    places = Placeholders(str(lnk_home))
    outer = places.hold([Wanted(str(top / "scripts"), "folder")])
    inner = places.hold([Wanted(str(top / "scripts" / "hooks"), "folder")])
    outer.release()
    assert (top / "scripts" / "hooks").is_dir()  # holding only a held placeholder: kept
    assert list(state(lnk_home)) == [str(top / "scripts"), str(top / "scripts" / "hooks")]
    inner.release()
    assert not (top / "scripts").exists()
    assert state(lnk_home) == {}


def test_the_state_format_keeps_any_path() -> None:
    data = (b"lnk-placeholders 1\n"
            b"d 1 2 10:20:1,11:21:3 /p/with space\\nnew\\\\line\n"
            b"f 3 4 - /q\n"
            b"x bad line\n"
            b"d notanumber 2 - /r\n")
    entries = _parse(data)
    assert list(entries) == ["/p/with space\nnew\\line", "/q"]
    assert entries["/p/with space\nnew\\line"].holders == ["10:20:1", "11:21:3"]
    assert entries["/q"].kind == "file" and entries["/q"].holders == []
    assert _parse(_render(entries)) == entries
    assert _parse(b"something else\nd 1 2 - /x\n") == {}


def test_a_start_with_nothing_to_hold_and_no_state_takes_no_lock(lnk_home: Path) -> None:
    held = Placeholders(str(lnk_home)).hold([])
    held.release()
    assert not lnk_home.exists()


_CHILD_CHECKS = 40


def test_sixteen_runs_at_once_none_loses_its_placeholder(lnk_home: Path, top: Path) -> None:
    """16 holders of one .git, each for a different time: each sees the same inode for
    its whole hold, and after all end nothing is left."""
    go_read, go_write = os.pipe()
    children = []
    for number in range(16):
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.close(go_write)
                os.read(go_read, 1)  # all start at once
                held = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".git"), "folder")])
                first = os.lstat(top / ".git")
                for _ in range(_CHILD_CHECKS):
                    time.sleep(0.001 * (number + 1) / 4)
                    now = os.lstat(top / ".git")
                    if (now.st_dev, now.st_ino) != (first.st_dev, first.st_ino):
                        os._exit(2)
                holders = Placeholders(str(lnk_home)).entries()[str(top / ".git")][3]
                if held.token not in holders:
                    os._exit(4)
                held.release()
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    os.close(go_read)
    os.write(go_write, b"x" * 16)
    os.close(go_write)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    assert codes == [0] * 16
    assert not (top / ".git").exists()
    assert state(lnk_home) == {}


def _killed_inside(lnk_home: Path, wanted: list[Wanted], call: str) -> None:
    """Hold in a child that SIGKILLs itself right after (mkdir) or right before
    (rename) the named call: a supervisor killed inside the locked section."""
    lnk_home.mkdir(mode=0o700, exist_ok=True)  # its own mkdir is not the one meant
    pid = os.fork()
    if pid == 0:
        try:
            real = getattr(os, call)

            def killed(*args: object, **kwargs: object) -> object:
                if call == "rename":
                    os.kill(os.getpid(), signal.SIGKILL)
                result = real(*args, **kwargs)
                os.kill(os.getpid(), signal.SIGKILL)
                return result

            setattr(os, call, killed)
            Placeholders(str(lnk_home)).hold(wanted)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_kill_between_mkdir_and_the_state_leaves_nothing_unlisted(
        lnk_home: Path, top: Path) -> None:
    _killed_inside(lnk_home, [Wanted(str(top / ".git"), "folder"),
                              Wanted(str(top / ".idea"), "folder")], "mkdir")
    assert os.listdir(top) == [".git"]  # made, then the kill
    # Listed before they were made, identity not yet noted: what the next start prunes.
    listed = state(lnk_home)
    assert {path: entry[:3] for path, entry in listed.items()} == {
        str(top / ".git"): ("folder", 0, 0), str(top / ".idea"): ("folder", 0, 0)}
    Placeholders(str(lnk_home)).hold([]).release()
    assert os.listdir(top) == []
    assert state(lnk_home) == {}


def test_a_listed_but_unnoted_path_that_is_not_what_would_be_made_is_left(
        lnk_home: Path, top: Path) -> None:
    _killed_inside(lnk_home, [Wanted(str(top / ".git"), "folder")], "mkdir")
    os.rmdir(top / ".git")
    (top / ".git").write_text("gitdir: elsewhere\n")  # the person's, made since
    Placeholders(str(lnk_home)).hold([]).release()
    assert (top / ".git").read_text() == "gitdir: elsewhere\n"
    assert state(lnk_home) == {}


def test_a_kill_before_the_rename_leaves_the_old_state_and_no_temp_file(
        lnk_home: Path, top: Path) -> None:
    first = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".git"), "folder")])
    before = (lnk_home / STATE_NAME).read_bytes()
    _killed_inside(lnk_home, [Wanted(str(top / ".git"), "folder")], "rename")
    assert (lnk_home / STATE_NAME).read_bytes() == before  # the join was never written
    assert (lnk_home / f"{STATE_NAME}.tmp").exists()
    first.release()  # takes the lock: the dead writer's temp file goes
    assert not (top / ".git").exists()
    assert list(lnk_home.iterdir()) == [lnk_home / LOCK_NAME]


def test_a_placeholder_removed_from_outside_is_made_again(lnk_home: Path, top: Path) -> None:
    first = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".vscode"), "folder")])
    os.rmdir(top / ".vscode")
    second = Placeholders(str(lnk_home)).hold([Wanted(str(top / ".vscode"), "folder")])
    info = os.lstat(top / ".vscode")
    assert state(lnk_home) == {str(top / ".vscode"): ("folder", info.st_dev, info.st_ino,
                                                      (second.token,))}
    first.release()
    assert (top / ".vscode").is_dir()
    second.release()
    assert not (top / ".vscode").exists()


def test_a_holder_from_another_pid_namespace_is_never_judged_gone(
        lnk_home: Path, top: Path) -> None:
    """A container sharing the project holds a placeholder with its own pid: read here,
    that pid is another process or none, so its placeholder stays."""
    from supervisor.linux.placeholders import _holder_alive

    foreign = "1:12345.1:1"  # pid 1 of another namespace, whose start is not init's
    assert _holder_alive(foreign, {})
    ours = os.stat("/proc/self/ns/pid").st_ino
    assert not _holder_alive(f"999999999:1.{ours}:1", {})  # this namespace's, gone
    assert not _holder_alive("999999999:1:1", {})  # before the namespace was written


def test_a_folder_and_what_goes_in_it_are_made_together(lnk_home: Path, top: Path) -> None:
    """.github missing: the run makes it, then holds .github/hooks in it; the workflow a
    sandbox wrote there is the person's after the run, the hooks placeholder goes."""
    wanted = [Wanted(str(top / ".github"), "folder"),
              Wanted(str(top / ".github" / "hooks"), "folder")]
    held = Placeholders(str(lnk_home)).hold(wanted)
    assert sorted(held.paths) == [str(top / ".github"), str(top / ".github" / "hooks")]
    (top / ".github" / "workflows").mkdir()
    held.release()
    assert sorted(os.listdir(top / ".github")) == ["workflows"]
    assert state(lnk_home) == {}
    again = Placeholders(str(lnk_home)).hold(wanted)  # .github is the person's now
    assert again.paths == [str(top / ".github" / "hooks")]
    again.release()
    assert sorted(os.listdir(top / ".github")) == ["workflows"]


def test_a_dead_runs_folder_pruned_and_made_again_in_one_start(lnk_home: Path,
                                                                top: Path) -> None:
    """A killed run's .github and .github/hooks, both dead: the next start wanting them
    prunes both and makes both again, in the new .github (not through a descriptor of
    the one it just removed)."""
    github, hooks = top / ".github", top / ".github" / "hooks"
    hooks.mkdir(parents=True)
    dead = f"{os.getpid()}:1:1"  # this pid with another start time: no live run
    lnk_home.mkdir(mode=0o700)
    lines = [b"lnk-placeholders 1"]
    for path in (github, hooks):
        info = os.lstat(path)
        lines.append(b"d %d %d %s %s" % (info.st_dev, info.st_ino, dead.encode(),
                                         str(path).encode()))
    (lnk_home / STATE_NAME).write_bytes(b"\n".join(lines) + b"\n")
    held = Placeholders(str(lnk_home)).hold([Wanted(str(github), "folder"),
                                             Wanted(str(hooks), "folder")])
    assert hooks.is_dir() and sorted(held.paths) == [str(github), str(hooks)]
    held.release()
    assert not github.exists()


def test_a_dead_runs_folder_the_plan_took_for_there_is_made_again(lnk_home: Path,
                                                                   top: Path) -> None:
    """The plan saw a killed run's .github (a placeholder, empty) and asks for
    .github/hooks alone: the prune removes .github, and the hold makes it again for this
    run rather than refusing, then removes both after the run."""
    github, hooks = top / ".github", top / ".github" / "hooks"
    github.mkdir()
    info = os.lstat(github)
    lnk_home.mkdir(mode=0o700)
    (lnk_home / STATE_NAME).write_bytes(b"lnk-placeholders 1\nd %d %d %d:1:1 %s\n" % (
        info.st_dev, info.st_ino, os.getpid(), str(github).encode()))
    held = Placeholders(str(lnk_home)).hold([Wanted(str(hooks), "folder", base=str(top))])
    assert hooks.is_dir() and sorted(held.paths) == [str(github), str(hooks)]
    held.release()
    assert not github.exists() and state(lnk_home) == {}


def test_a_folder_another_runs_end_removed_after_the_plan_is_made_again(
        lnk_home: Path, top: Path) -> None:
    """The plan saw another run's .github; that run ended and removed it before this
    start held: the hold makes it again for this run rather than refusing (two starts in
    one folder once failed 1 in 30 on this), and removes both after the run."""
    github, hooks = top / ".github", top / ".github" / "hooks"
    held = Placeholders(str(lnk_home)).hold([Wanted(str(hooks), "folder", base=str(top))])
    assert hooks.is_dir() and sorted(held.paths) == [str(github), str(hooks)]
    held.release()
    assert not github.exists() and state(lnk_home) == {}


def test_the_grants_top_gone_is_not_made_again(lnk_home: Path, top: Path) -> None:
    """Only what lies between a grant's top and the held path is made again: a top the
    person removed stays removed, and the launch is refused."""
    gone = top / "gone"
    with pytest.raises(LaunchError, match="no longer exists"):
        Placeholders(str(lnk_home)).hold([Wanted(str(gone / ".vscode"), "folder",
                                                 base=str(gone))])
    assert not gone.exists()

def test_a_dead_runs_folder_made_again_lingers_with_what_it_holds(lnk_home: Path,
                                                                  top: Path) -> None:
    """The same, for a lingering .github/hooks: .github, made again above it, lingers
    with it (a folder left unheld around a lingering one would never go on its own)."""
    github, hooks = top / ".github", top / ".github" / "hooks"
    github.mkdir()
    info = os.lstat(github)
    lnk_home.mkdir(mode=0o700)
    (lnk_home / STATE_NAME).write_bytes(b"lnk-placeholders 1\nd %d %d %d:1:1 %s\n" % (
        info.st_dev, info.st_ino, os.getpid(), str(github).encode()))
    held = Placeholders(str(lnk_home)).hold([Wanted(str(hooks), "folder", base=str(top),
                                                    linger=True)])
    held.release()
    entries = state(lnk_home)
    assert sorted(entries) == [str(github), str(hooks)]
    assert all(holders[0].startswith("~") for _, _, _, holders in entries.values())
