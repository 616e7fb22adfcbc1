"""files.commit: what a run leaves in the git directory is checked before the person's git
reads it (supervisor/commit_check.py).

The red team broke files.commit five ways, each by planting from inside what the
person's own git, run afterwards outside, follows or carries out: a link where git
writes, reads or deletes its own files (COMMIT_EDITMSG, a reflog, SQUASH_MSG,
worktrees/NAME), an interactive rebase left stopped with an exec line, a gitlink the
start-time index reader misread. Each is a test here, with the rest of the class found
in git's sources: a link in objects/ that `git prune` deletes through, a pipe where git
blocks, a cherry-pick sequence whose options name a merge strategy (a program in the
project), a bisect whose BISECT_START is an option that reads any file, a worktree
registered on a folder of the person's that `git worktree repair` writes a .git file
into, a submodule committed as well as added, a link put where a linked worktree of the
person's keeps its reflog.

Each test proves the sandbox started (STARTED), plants from inside with the real git or
the file system, then runs the person's real git outside, as the same user (root, and
the unprivileged test user), and shows that nothing planted ran, nothing outside
changed, nothing hidden was read. Each control runs the same plant with
files.write_dot_files (no check: the person opened .git whole) and the same trigger, and
the harm happens: the tests pass because of the check, not a broken plant or trigger.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path

import pytest

from support.git_host import attack, host_git, make_repository, markers, payload, ran
from support.processes import descendants, wait_gone
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

COMMITTER = ("[env]\nset = { GIT_AUTHOR_NAME = \"A\", GIT_AUTHOR_EMAIL = \"a@example.com\", "
             "GIT_COMMITTER_NAME = \"A\", GIT_COMMITTER_EMAIL = \"a@example.com\" }\n")
COMMIT = 'files.write = ["."]\nfiles.commit = ["."]\n' + COMMITTER
OPENED = 'files.write = ["."]\nfiles.write_dot_files = ["."]\n' + COMMITTER
SPECS = {"commit": COMMIT, "write_dot_files": OPENED}


def plant(box: Sandbox, script: str, spec: str = COMMIT) -> str:
    """Run `script` in a sandbox (sh, set -e) after proving it started; lnk's stderr."""
    done = box.run("/bin/sh", "-c", f"set -e; echo STARTED; {script}", spec=spec)
    assert done.stdout.startswith("STARTED"), done
    assert done.returncode == 0, done
    return done.stderr


def victim(box: Sandbox) -> Path:
    """A folder of the person's outside the project, which no sandbox here sees."""
    folder = box.base / "victim"
    folder.mkdir(exist_ok=True)
    (folder / "rc").write_text("# the person's own rc file\n")
    (folder / "precious.txt").write_text("precious\n")
    (folder / "credentials").write_text("aws_secret_access_key = SECRET-KEY-1234\n")
    box.chown(folder)
    return folder


def contents(folder: Path) -> dict[str, bytes]:
    """Every file in the folder and what it holds: compared before and after."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# -- links: git opens its own files by name and follows them ---------------------------------

LINKS = ["commit-editmsg", "stash-reflog", "hidden-reflog", "fixed-reflog",
         "squash-credential", "worktree-prune", "objects-prune", "fifo", "head"]


def _plant_link(box: Sandbox, which: str, spec: str) -> str:
    where = victim(box)
    if which == "commit-editmsg":  # 1b: the person's commit writes the payload into rc
        return plant(box, f"ln -sf {where}/rc .git/COMMIT_EDITMSG; printf 'Tidy up\\n\\n"
                          f"touch {box.base}/markers/rc-ran\\n' > .git/SQUASH_MSG", spec)
    if which == "stash-reflog":  # 1b: the person's stash appends through the link
        return plant(box, "echo x >> README; git commit -qam 'Update $(touch "
                          f"{box.base}/markers/rc-ran)'; mkdir -p .git/logs/refs; "
                          f"ln -s {where}/rc .git/logs/refs/stash", spec)
    if which == "hidden-reflog":  # its folder left searchable, not listable: git needs
        return plant(box, "mkdir -p .git/logs/refs; "  # only to search it; a walk lists
                          f"ln -s {where}/rc .git/logs/refs/stash; chmod 100 .git/logs/refs",
                     spec)
    if which == "fixed-reflog":  # its folder left listable, not writable: no unlink
        return plant(box, "mkdir -p .git/logs/refs; "
                          f"ln -s {where}/rc .git/logs/refs/stash; chmod 500 .git/logs/refs",
                     spec)
    if which == "squash-credential":  # 1c: a hidden file becomes a commit message
        return plant(box, f"! cat {where}/credentials 2>/dev/null; "  # hidden inside
                          f"ln -s {where}/credentials .git/SQUASH_MSG", spec)
    if which == "worktree-prune":  # 1a: git gc's worktree prune empties the folder
        return plant(box, f"mkdir -p .git/worktrees; ln -s {where} .git/worktrees/feature",
                     spec)
    if which == "objects-prune":  # git prune deletes what looks like an object, through
        name = "ab" * 19
        (where / name).write_text("looks like a loose object\n")
        os.utime(where / name, (1_000_000_000, 1_000_000_000))
        box.chown(where)
        return plant(box, f"ln -s {where} .git/objects/17", spec)
    if which == "fifo":  # the person's commit would wait for ever on it
        return plant(box, "rm -f .git/COMMIT_EDITMSG; mkfifo .git/COMMIT_EDITMSG", spec)
    assert which == "head"  # git reads HEAD through it, and takes the folder for none
    return plant(box, f"rm .git/HEAD; ln -s {where}/rc .git/HEAD", spec)


def _trigger_link(box: Sandbox, which: str) -> None:
    """What the person runs next, as they would: each follows the planted link."""
    if which in ("commit-editmsg", "squash-credential", "fifo"):
        (box.project / "README").write_text("changed by the person\n")
        box.chown(box.project / "README")
        host_git(box, "add", "README")
        try:
            host_git(box, "-c", "core.editor=true", "commit", "-q", check=False)
        except subprocess.TimeoutExpired:
            pass  # the pipe: it blocked, which the check prevents
    elif which in ("stash-reflog", "hidden-reflog", "fixed-reflog"):
        (box.project / "README").write_text("work in progress\n")
        host_git(box, "stash", "-q")
        subprocess.run(["bash", str(box.base / "victim" / "rc")], cwd=box.base,
                       capture_output=True, check=False)  # the person's next login
    elif which == "worktree-prune":
        host_git(box, "worktree", "prune")
        host_git(box, "gc", "-q")
    elif which == "objects-prune":
        host_git(box, "prune", "--expire=now", check=False)
    else:
        host_git(box, "status", check=False)


@pytest.mark.parametrize("which", LINKS)
def test_a_link_left_in_the_git_directory_is_gone_before_your_git_follows_it(
        sandbox: Sandbox, which: str) -> None:
    make_repository(sandbox)
    said = _plant_link(sandbox, which, COMMIT)
    assert "which the sandbox left in the git directory" in said, said
    before = contents(sandbox.base / "victim")
    _trigger_link(sandbox, which)
    assert contents(sandbox.base / "victim") == before
    assert set(ran(sandbox)) <= {"person-post-commit"}  # the person's own hook at most
    message = host_git(sandbox, "log", "-1", "--format=%B").stdout
    assert "SECRET" not in message  # nothing hidden became a commit message
    assert host_git(sandbox, "status", "--short").returncode == 0  # still a repository
    if which == "head":
        assert host_git(sandbox, "symbolic-ref", "HEAD").stdout == "refs/heads/main\n"
        assert "put back" in said


@pytest.mark.parametrize("which", [w for w in LINKS if w not in ("fifo", "head")])
def test_with_write_dot_files_the_links_are_followed(sandbox: Sandbox, which: str) -> None:
    """The control: with .git opened whole nothing is checked, and the person's git
    writes, reads or deletes through the same links."""
    make_repository(sandbox)
    _plant_link(sandbox, which, OPENED)
    before = contents(sandbox.base / "victim")
    _trigger_link(sandbox, which)
    after = contents(sandbox.base / "victim")
    assert (after == before) == (which == "squash-credential")
    if which == "squash-credential":
        assert "SECRET-KEY-1234" in host_git(sandbox, "log", "-1", "--format=%B").stdout
    if which == "stash-reflog":
        assert "rc-ran" in ran(sandbox)


def test_your_own_links_stay_and_one_the_sandbox_replaced_comes_back(
        sandbox: Sandbox) -> None:
    """git makes no link in a git directory, but a person may (a description shared
    with the project): the check removes only what the run made or changed."""
    make_repository(sandbox)
    git = sandbox.project / ".git"
    (git / "description").unlink()
    os.symlink("../README", git / "description")
    os.symlink("../README", git / "shared-notes")
    sandbox.chown()
    said = plant(sandbox, f"ln -sfn {sandbox.base}/victim/rc .git/shared-notes; "
                          f"ln -s {sandbox.base}/victim .git/new-link")
    assert os.readlink(git / "description") == "../README"
    assert os.readlink(git / "shared-notes") == "../README"
    assert not os.path.lexists(git / "new-link")
    assert "put back your link" in said and "new-link" in said


def test_a_linked_worktree_of_yours_gets_no_link_either(sandbox: Sandbox) -> None:
    """A link planted where a linked worktree of the person's keeps its reflog: their
    commit there appends through it."""
    make_repository(sandbox)
    other = sandbox.base / "other"
    host_git(sandbox, "worktree", "add", "-q", str(other))
    where = victim(sandbox)
    said = plant(sandbox, "rm -f .git/worktrees/other/logs/HEAD; "
                          f"ln -s {where}/rc .git/worktrees/other/logs/HEAD")
    assert "worktrees/other/logs/HEAD" in said
    (other / "README").write_text("in the other worktree\n")
    before = contents(where)
    host_git(sandbox, "commit", "-qam", "there", cwd=other)
    assert contents(where) == before


# -- state a later command carries out ------------------------------------------------------


def _strategy(box: Sandbox) -> str:
    """A cherry-pick sequence whose options name a merge strategy, and the program that
    name finds from the checkout: `git merge-x/evil` runs ./git-merge-x/evil."""
    evil = payload(box, "strategy").replace("'", "'\\''")
    return ("git checkout -q -b side; echo c > c; git add c; git commit -qm c; "
            "echo d > d; git add d; git commit -qm d; git checkout -q main; "
            f"mkdir -p git-merge-x; printf '%s' '{evil}' > git-merge-x/evil; "
            "chmod +x git-merge-x/evil; mkdir .git/sequencer; "
            "printf '[options]\\n\\tstrategy = x/evil\\n' > .git/sequencer/opts; "
            "printf 'pick %s c\\npick %s d\\n' $(git rev-parse side~1) $(git rev-parse side)"
            " > .git/sequencer/todo; git rev-parse HEAD > .git/sequencer/head; "
            "git rev-parse HEAD > .git/sequencer/abort-safety")


OPERATIONS = {
    # 1d: stopped at break, the todo's next line an exec
    "rebase": ("echo b >> README; git commit -qam second; "
               "GIT_SEQUENCE_EDITOR=\"printf 'break\\\\nexec touch {markers}/rebase-exec\\\\n'"
               " >\" git rebase -i HEAD~1 >/dev/null 2>&1 || true; test -d .git/rebase-merge"),
    "cherry-pick": "{strategy}",
    "bisect": ("printf -- '--pathspec-from-file={secret}\\n' > .git/BISECT_START; "
               "touch .git/BISECT_LOG"),
}
TRIGGERS = {"rebase": ("rebase", "--continue"), "cherry-pick": ("cherry-pick", "--continue"),
            "bisect": ("bisect", "reset")}


def _plant_operation(box: Sandbox, which: str, spec: str) -> str:
    markers(box)
    where = victim(box)
    script = OPERATIONS[which].format(markers=box.base / "markers",
                                      strategy=_strategy(box) if which == "cherry-pick"
                                      else "", secret=where / "credentials")
    return plant(box, script, spec)


@pytest.mark.parametrize("which", list(OPERATIONS))
def test_an_operation_left_in_progress_is_set_aside(sandbox: Sandbox, which: str) -> None:
    make_repository(sandbox)
    said = _plant_operation(sandbox, which, COMMIT)
    assert f"set aside the {which} in progress" in said, said
    status = host_git(sandbox, "status").stdout
    assert "in progress" not in status and "bisecting" not in status
    done = host_git(sandbox, *TRIGGERS[which], check=False)
    assert ran(sandbox) == []
    assert "SECRET" not in done.stdout + done.stderr
    assert (sandbox.project / ".git" / "lnk-held" / which).is_dir()


@pytest.mark.parametrize("which", list(OPERATIONS))
def test_with_write_dot_files_the_operation_runs_on_the_host(sandbox: Sandbox,
                                                             which: str) -> None:
    """The control: the same state, left live, is carried out by the person's git."""
    make_repository(sandbox)
    _plant_operation(sandbox, which, OPENED)
    done = host_git(sandbox, *TRIGGERS[which], check=False)
    if which == "bisect":
        assert "SECRET-KEY-1234" in done.stderr, done
    else:
        assert ran(sandbox) == [{"rebase": "rebase-exec", "cherry-pick": "strategy"}[which]]


def test_a_rebase_stopped_on_a_conflict_goes_on_in_the_next_run(sandbox: Sandbox) -> None:
    """An agent's rebase that stops on a conflict is set aside when its run ends, and
    the next run with files.commit gets it back to finish: the work across runs goes on,
    and between them your git sees no rebase in progress."""
    make_repository(sandbox)
    host_git(sandbox, "checkout", "-q", "-b", "feature")
    (sandbox.project / "README").write_text("feature\n")
    host_git(sandbox, "commit", "-qam", "feature work")
    host_git(sandbox, "checkout", "-q", "main")
    (sandbox.project / "README").write_text("main\n")
    host_git(sandbox, "commit", "-qam", "main work")
    host_git(sandbox, "checkout", "-q", "feature")
    sandbox.chown()
    said = plant(sandbox, "git rebase -q main >/dev/null 2>&1 || true; "
                          "test -d .git/rebase-merge")
    assert "set aside the rebase in progress" in said
    assert "rebase" not in host_git(sandbox, "status").stdout.lower()
    said = plant(sandbox, "echo resolved > README; git add README; "
                          "GIT_EDITOR=true git rebase --continue >/dev/null 2>&1")
    assert "put back the rebase in progress" in said
    assert "set aside the rebase" not in said
    log = host_git(sandbox, "log", "--format=%s").stdout.split("\n")
    assert log[:3] == ["feature work", "main work", "first"]
    assert not (sandbox.project / ".git" / "lnk-held" / "rebase").exists()


def test_a_merge_left_with_conflicts_stays_yours_to_finish(sandbox: Sandbox) -> None:
    """A merge's one step is content (MERGE_HEAD, its message): it stays live, and the
    person's commit makes the merge."""
    make_repository(sandbox)
    host_git(sandbox, "checkout", "-q", "-b", "feature")
    (sandbox.project / "README").write_text("feature\n")
    host_git(sandbox, "commit", "-qam", "feature work")
    host_git(sandbox, "checkout", "-q", "main")
    (sandbox.project / "README").write_text("main\n")
    host_git(sandbox, "commit", "-qam", "main work")
    sandbox.chown()
    said = plant(sandbox, "git merge -q feature >/dev/null 2>&1 || true; "
                          "test -f .git/MERGE_HEAD")
    assert "set aside" not in said
    (sandbox.project / "README").write_text("both\n")
    host_git(sandbox, "add", "README")
    host_git(sandbox, "-c", "core.editor=true", "commit", "-q")
    parents = host_git(sandbox, "log", "-1", "--format=%P").stdout.split()
    assert len(parents) == 2


# -- worktrees ------------------------------------------------------------------------------


def _register(box: Sandbox, folder: Path) -> str:
    return ("mkdir -p .git/worktrees/evil; "
            f"echo {folder}/.git > .git/worktrees/evil/gitdir; "
            "echo ../.. > .git/worktrees/evil/commondir; "
            "git rev-parse HEAD > .git/worktrees/evil/HEAD")


def test_a_worktree_registered_on_a_folder_of_yours_is_set_aside(sandbox: Sandbox) -> None:
    make_repository(sandbox)
    where = victim(sandbox)
    said = plant(sandbox, _register(sandbox, where))
    assert "set aside the worktree evil" in said and "outside the folders" in said
    assert str(where) not in host_git(sandbox, "worktree", "list").stdout
    before = contents(where)
    host_git(sandbox, "worktree", "repair", check=False)
    assert contents(where) == before


def test_with_write_dot_files_the_registered_worktree_is_repaired_into_your_folder(
        sandbox: Sandbox) -> None:
    make_repository(sandbox)
    where = victim(sandbox)
    plant(sandbox, _register(sandbox, where), OPENED)
    host_git(sandbox, "worktree", "repair", check=False)
    assert (where / ".git").read_text().startswith("gitdir: ")


def test_a_worktree_of_yours_cannot_be_pointed_elsewhere(sandbox: Sandbox) -> None:
    make_repository(sandbox)
    other = sandbox.base / "other"
    host_git(sandbox, "worktree", "add", "-q", str(other))
    where = victim(sandbox)
    attack(sandbox, {
        ("write", ".git/worktrees/other/gitdir", f"{where}/.git\n"): errno.EROFS,
        ("write", ".git/objects/info/alternates", f"{where}\n"): errno.EROFS,
    }, spec=COMMIT)
    assert (sandbox.project / ".git" / "worktrees" / "other" / "gitdir").read_text() == \
        f"{other}/.git\n"
    assert not (sandbox.project / ".git" / "objects" / "info" / "alternates").exists()


# -- submodules -----------------------------------------------------------------------------

PADDED = r"""
import hashlib
d = bytearray(open(".git/index", "rb").read())
n = int.from_bytes(d[72:74], "big") & 0xFFF
for i in range(12 + 62 + n, 12 + ((62 + n + 8) & ~7)):
    d[i] = ord("X")
d[-20:] = hashlib.sha1(bytes(d[:-20])).digest()
open(".git/index", "wb").write(bytes(d))
"""


def _submodule(box: Sandbox, how: str) -> str:
    """A repository in sub/ whose settings run a payload, and a gitlink naming it."""
    evil = f"{box.base}/markers/submodule-fsmonitor"
    script = ("mkdir sub; cd sub; git init -q -b main .; git commit -q --allow-empty -m s; "
              f"git config core.fsmonitor 'touch {evil}; false #'; cd ..; "
              "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub")
    if how == "padded":  # 1e: the first entry's padding, which git skips, made X
        script = "echo b > b; git add b; " + script + \
            f"; /usr/bin/python3 -c '{PADDED.replace(chr(39), chr(34))}'"
    if how == "committed":
        script += "; git commit -qm 'add sub'"
    if how == "unreadable":  # listed by no reader now, live once you make it readable
        script += "; chmod 000 .git/index"
    return script


@pytest.mark.parametrize("how", ["plain", "padded", "committed", "unreadable"])
def test_a_submodule_the_sandbox_adds_is_undone(sandbox: Sandbox, how: str) -> None:
    make_repository(sandbox)
    said = plant(sandbox, _submodule(sandbox, how))
    assert "added the submodule sub" in said and "took it out of the index" in said, said
    assert "sub" not in host_git(sandbox, "ls-files").stdout.split()
    assert (sandbox.project / "sub" / ".git.lnk-held").is_dir()
    host_git(sandbox, "status")
    if how == "committed":  # the person takes the sandbox's commit as it is
        host_git(sandbox, "reset", "-q", "--hard")
        host_git(sandbox, "status")
    assert ran(sandbox) == []


@pytest.mark.parametrize("how", ["plain", "padded"])
def test_with_write_dot_files_the_submodule_runs_its_settings(sandbox: Sandbox,
                                                              how: str) -> None:
    make_repository(sandbox)
    plant(sandbox, _submodule(sandbox, how), OPENED)
    host_git(sandbox, "status")
    assert ran(sandbox) == ["submodule-fsmonitor"]


# -- git's own work, and a run killed before its end ----------------------------------------


def test_git_work_in_commit_mode_leaves_nothing_to_undo(sandbox: Sandbox) -> None:
    """add, commit, stash, branch, rebase and worktree add inside: nothing is removed
    or set aside, and the worktree made inside is a worktree outside."""
    make_repository(sandbox)
    said = plant(sandbox, "echo one > work.txt; git add work.txt; git commit -qm inside; "
                          "echo two > work.txt; git stash -q; git stash pop -q; "
                          "git branch side; git commit -qam second; git rebase -q side; "
                          "git worktree add -q wt; git -C wt status --short")
    assert "lnk-sandbox" not in said, said
    assert f"{sandbox.project}/wt " in host_git(sandbox, "worktree", "list").stdout
    assert host_git(sandbox, "status", "--short", cwd=sandbox.project / "wt").returncode == 0
    assert host_git(sandbox, "log", "--format=%s").stdout.split("\n")[:2] == [
        "second", "inside"]


def test_a_run_killed_before_its_end_is_checked_at_the_next_start(sandbox: Sandbox) -> None:
    """The supervisor killed with SIGKILL (a harness's timeout) checks nothing itself:
    its record in $LNK_HOME has the next start of lnk-sandbox, any spec, check it."""
    make_repository(sandbox)
    where = victim(sandbox)
    spec = sandbox.write_spec(COMMIT)
    lnk = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--",
         "/bin/sh", "-c", f"ln -sf {where}/rc .git/COMMIT_EDITMSG; echo PLANTED; sleep 60"],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE, text=True)
    assert lnk.stdout is not None
    try:
        assert lnk.stdout.readline().strip() == "PLANTED"
        tree = descendants(lnk.pid)
        os.kill(lnk.pid, signal.SIGKILL)
        lnk.wait(timeout=30)
    finally:
        lnk.stdout.close()
    assert os.path.islink(sandbox.project / ".git" / "COMMIT_EDITMSG")
    assert not wait_gone(tree), "bwrap ends with its parent"
    elsewhere = sandbox.base / "elsewhere"
    elsewhere.mkdir()
    sandbox.chown(elsewhere)
    done = sandbox.run("/bin/true", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "a run killed before its end" in done.stderr
    assert not os.path.lexists(sandbox.project / ".git" / "COMMIT_EDITMSG")
    before = contents(where)
    (sandbox.project / "README").write_text("after\n")
    host_git(sandbox, "commit", "-qam", "after")
    assert contents(where) == before
