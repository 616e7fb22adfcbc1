"""Protections nobody sees (issue 27): what a run holds in a folder it writes is in no
`git status` of the person's, during the run or after its supervisor is killed; the
person's `ls` shows only what the README's list of held names says; inside, `ls` shows
the person's names and those, `ls -A` only dot names of that list, and `rm -rf ./*`
removes everything of the person's.

The names without a dot a run still holds are the README's stated exceptions
(dotfiles.py says why): OpenCode's `opencode.json` and `opencode.jsonc` at every top
where the person uses OpenCode (nothing but something at that name keeps OpenCode's
settings from being made there; where OpenCode is not found, neither is held), and,
where git finds no repository from the top, `HEAD` (what keeps the top from becoming a
bare repository). In a repository of a person without OpenCode: none. Each test runs
as root (root mode) and as the unprivileged user, with the person's real git and ls on
the host.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from support.git_host import host_git, make_repository
from support.processes import descendants, wait_gone
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
OPENCODE = {"opencode.json", "opencode.jsonc"}

# What the sandbox runs: ls as a person would, then waits for the host to look, then
# removes everything `*` names, and lists again.
_INSIDE = r"""
import subprocess, sys
def ls(*flags):
    return subprocess.run(["ls", *flags], capture_output=True, text=True).stdout.split()
print("STARTED", flush=True)
print("LS", *ls(), flush=True)
print("LSA", *ls("-A"), flush=True)
sys.stdin.readline()
done = subprocess.run(["/bin/sh", "-c", "rm -rf ./*"], capture_output=True, text=True)
print("RM", done.returncode, done.stderr.replace("\n", "|"), flush=True)
print("LEFT", *ls(), flush=True)
"""


def readme_list() -> set[str]:
    """The README's one list of the dot names a run may hold in a folder it writes."""
    section = README.split("### What a run holds in a folder it writes", 1)[1]
    listed = section.split("\n\n", 3)[2]
    return set(re.findall(r"`([^`]+)`", listed))


def host_ls(box: Sandbox) -> list[str]:
    """The person's own `ls` of the project, on the host."""
    done = subprocess.run([*box.who.prefix, "ls"], cwd=box.project, capture_output=True,
                          text=True, check=True)
    return done.stdout.split()


def status(box: Sandbox) -> str:
    return host_git(box, "status", "--porcelain", "--untracked-files=all", "--ignored"
                    ).stdout


def person_work(box: Sandbox) -> None:
    """A repository as someone works in it: a commit, a change, an untracked file, an
    ignored one."""
    make_repository(box)
    (box.project / ".gitignore").write_text("*.log\n")
    host_git(box, "add", ".gitignore")
    host_git(box, "commit", "-qm", "ignore logs")
    (box.project / "README").write_text("changed\n")
    (box.project / "notes.txt").write_text("mine\n")
    (box.project / "build.log").write_text("ignored\n")
    box.chown()


@pytest.mark.parametrize("opencode", ["opencode used", "no opencode"])
@pytest.mark.parametrize("shape", ["repository", "no repository"])
def test_what_a_run_holds_is_in_no_status_and_no_listing_but_the_stated(
        sandbox: Sandbox, shape: str, opencode: str) -> None:
    if opencode == "opencode used":
        (sandbox.home / ".config" / "opencode").mkdir(parents=True)  # its settings folder
    held_plain = (OPENCODE if opencode == "opencode used" else set()) | (
        {"HEAD"} if shape == "no repository" else set())
    if shape == "repository":
        person_work(sandbox)
        before_status = status(sandbox)
        assert "?? notes.txt" in before_status and "!! build.log" in before_status
    else:
        (sandbox.project / "notes.txt").write_text("mine\n")
        sandbox.chown()
    before_ls = host_ls(sandbox)
    run = subprocess.Popen([*sandbox.who.prefix, LNK, "sandbox", "run", "--", PYTHON_INSIDE,
                            "-c", _INSIDE], cwd=sandbox.project, env=sandbox.env(),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    assert run.stdin is not None and run.stdout is not None
    try:
        assert run.stdout.readline() == "STARTED\n", run.stderr
        inside = run.stdout.readline().split()[1:]
        inside_all = run.stdout.readline().split()[1:]
        # On the host, during the run.
        if shape == "repository":
            assert status(sandbox) == before_status
        assert sorted(host_ls(sandbox)) == sorted({*before_ls, *held_plain})
        run.stdin.write("\n")
        run.stdin.flush()
        rm = run.stdout.readline().split(" ", 2)
        left = run.stdout.readline().split()[1:]
    finally:
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    # Inside: the person's names and the stated ones; every dot name one the README lists.
    assert sorted(inside) == sorted({*before_ls, *held_plain})
    dots = {n for n in inside_all if n.startswith(".")}
    person_dots = {".git", ".gitignore"} if shape == "repository" else set()
    assert dots - person_dots <= readme_list(), dots - person_dots - readme_list()
    # rm -rf ./* removes every name of the person's; only the stated ones are busy.
    busy = {m for m in re.findall(r"cannot remove '\./([^']+)'", rm[2])}
    assert busy == held_plain, rm
    assert sorted(left) == sorted(held_plain)


def test_a_killed_supervisor_leaves_the_status_as_it_was(sandbox: Sandbox) -> None:
    """After a SIGKILL of the supervisor, what its run held stays until the next start:
    empty folders (and no socket here), which git lists in no status."""
    person_work(sandbox)
    before = status(sandbox)
    with subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "/bin/sh", "-c",
         "echo STARTED; exec sleep 60"],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    ) as run:
        tree: set[int] = set()
        try:
            assert run.stdout is not None
            assert run.stdout.readline() == "STARTED\n"
            tree = descendants(run.pid)
            assert status(sandbox) == before  # during the run
        finally:
            run.send_signal(signal.SIGKILL)
            run.wait(timeout=30)
    assert not wait_gone(tree)
    left = [n for n in os.listdir(sandbox.project) if n not in
            (".git", ".gitignore", "README", "notes.txt", "build.log")]
    assert left and all((sandbox.project / n).is_dir() for n in left), left
    assert status(sandbox) == before  # after it, the placeholders still there
    host_git(sandbox, "add", "-A")
    assert host_git(sandbox, "diff", "--cached", "--name-only").stdout.split() == [
        "README", "notes.txt"]  # `git add -A` takes the person's work and nothing held
