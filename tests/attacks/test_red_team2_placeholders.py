"""Red team 2 (issue 27): what a run holds, seen by the person, in places the fix's own
tests do not look: a repository below the top (held like the top's since issue 26 item
6), a virtual environment below it, during the run and after the supervisor is killed.

The person's real `git status --porcelain` and `ls` on the host, taken before the run,
while it lasts (the plant inside proved started) and after it ended or was SIGKILLed,
must be the same. Failures are left under `escaped` (support/red_team.py).
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from support.processes import close_pipes
from support.red_team import escaped, host, need, person_git, repository
from support.sandbox import LNK, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def _seen(box: Sandbox, app: str) -> tuple[str, str, str]:
    src = box.home / "src"
    status = person_git(box, src / app, "status", "--porcelain", "--untracked-files=all")
    listed = host(box, "ls", cwd=src / app)
    top = host(box, "ls", cwd=src)
    return status.stdout, listed.stdout, top.stdout


@escaped("dotfiles._Analysis (the bare-repository guard) holds `HEAD`, an empty folder "
         "without a dot, at a written folder's top where git finds no repository "
         "(`cd ~/src && lnk sandbox run`): the person's `ls` there shows it while the run "
         "lasts (README states it, issue 27 forbids it), and after a SIGKILL it stays")
@pytest.mark.parametrize("end", ["ends", "SIGKILL"])
def test_a_repository_below_the_top_looks_the_same_to_the_person(sandbox: Sandbox,
                                                                 end: str) -> None:
    src = sandbox.home / "src"
    repository(sandbox, src / "app")
    repository(sandbox, src / "lib" / "deep")
    venv = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip",
                           str(src / "app" / "env")], capture_output=True, text=True)
    need(venv.returncode == 0, venv.stderr)
    (src / "app" / "README").write_text("the person's\n")
    sandbox.chown()
    person_git(sandbox, src / "app", "add", "README")
    before = _seen(sandbox, "app"), _seen(sandbox, "lib/deep")
    run = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--", "/bin/sh", "-c",
         "echo STARTED; ls -A app; read go"], cwd=src, env=sandbox.env(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    assert run.stdin is not None and run.stdout is not None
    try:
        need(run.stdout.readline() == "STARTED\n", "the run never started inside")
        during = _seen(sandbox, "app"), _seen(sandbox, "lib/deep")
        if end == "SIGKILL":
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
        else:
            run.stdin.write("go\n")
            run.stdin.flush()
            run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
        close_pipes(run)
    after = _seen(sandbox, "app"), _seen(sandbox, "lib/deep")
    assert after == before, ("after", before, after)
    assert during == before, ("during", before, during)


@escaped("dotfiles._Analysis's bare-repository guard holds `HEAD` (an empty folder, no "
         "dot) at the top of every written folder where git finds no repository: inside, "
         "`ls` of an empty project shows HEAD and `rm -rf ./*` fails with EBUSY, what "
         "issue 27's 'Done when' rules out")
def test_inside_an_empty_folder_that_is_no_repository(sandbox: Sandbox) -> None:
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; echo LS=$(ls | tr '\\n' ' '); "
                       "touch answer.txt; rm -rf ./*; echo RM=$?")
    need(done.stdout.startswith("STARTED\n"), f"never started: {done.stderr}")
    assert "LS=\n" in done.stdout and "RM=0" in done.stdout, done.stdout + done.stderr
