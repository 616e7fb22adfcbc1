"""Files lnk-sandbox writes on the host cannot be redirected by what a sandbox wrote.

Each attack plants from inside a real sandbox (root mode and the unprivileged user) what
an earlier run could leave where a later run's lnk-sandbox writes, then runs that later
run as the person would, and shows outside that the launch is refused (125, naming
what it met) and that the file the plant pointed at is unchanged. The report's own
content is shown inert when a shell reads it.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PERSONS = "# the person's file named report.jsonl\n"


def _victim(box: Sandbox) -> Path:
    victim = box.base / "victim"
    victim.mkdir()
    (victim / "report.jsonl").write_text(PERSONS)
    box.chown()
    return victim


def _plant(box: Sandbox, script: str) -> None:
    """Run `script` in a sandbox on the default spec (the project writable)."""
    done = box.run("/bin/sh", "-c", f"echo STARTED; {script}", timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("STARTED"), done


def _as_person(box: Sandbox, *command: str) -> subprocess.CompletedProcess[str]:
    """Run a command outside any sandbox, as the person the test runs lnk as."""
    return subprocess.run([*box.who.prefix, *command], cwd=box.project, env=box.env(),
                          capture_output=True, text=True, timeout=30)


@pytest.mark.requires_landlock(abi=1)
def test_the_report_does_not_follow_a_link_an_earlier_run_planted(sandbox: Sandbox) -> None:
    """The red team's two runs: the first plants `out -> victim` in the project; the
    second, whose spec writes only ./build, names `--report out/report.jsonl` and runs a
    program the list refuses, named `x$(...)`. lnk-sandbox refuses the launch before the
    command runs, naming the link; the victim is unchanged, and a shell reading it runs
    nothing. The control names the same file by its real path: the report is written
    there, reads back as JSON with the program's name, and a shell reading it runs
    nothing either."""
    victim = _victim(sandbox)
    (sandbox.project / "build").mkdir()
    sandbox.chown()
    _plant(sandbox, f"ln -s {victim} out")
    assert (sandbox.project / "out").is_symlink()
    marker = sandbox.base / "payload-ran"
    payload = base64.b64encode(f"touch {marker}".encode()).decode()
    program = f"{sandbox.project}/build/x$(echo {payload}|base64 -d|sh)"
    # The project is read ("."): a run must start in a folder it sees, and this one is
    # refused for its report, before it starts.
    spec = '[files]\nread = ["."]\nwrite = ["./build"]\n[commands]\nprograms = ["sh", "cp"]\n'
    command = ("/bin/sh", "-c", f"echo STARTED; cp /usr/bin/true '{program}' && '{program}'; "
               "true")
    done = sandbox.lnk("run", "--report", "out/report.jsonl", "--", *command, spec=spec)
    assert done.returncode == 125, done
    assert "STARTED" not in done.stdout
    assert f"{sandbox.project}/out is a link (to {victim})" in done.stderr
    assert (victim / "report.jsonl").read_text() == PERSONS
    _as_person(sandbox, "bash", str(victim / "report.jsonl"))
    assert not marker.exists()

    done = sandbox.lnk("run", "--report", str(victim / "report.jsonl"), "--", *command,
                       spec=spec)
    assert done.returncode == 0 and done.stdout.startswith("STARTED"), done
    lines = (victim / "report.jsonl").read_text().splitlines()
    assert [json.loads(line)["subject"] for line in lines] == [program]
    assert "$" not in lines[0] and "\\u0024" in lines[0]
    _as_person(sandbox, "bash", str(victim / "report.jsonl"))
    _as_person(sandbox, "sh", str(victim / "report.jsonl"))
    assert not marker.exists()


PLANTS = {
    # name: (what the first run plants, the report path named, what the refusal says)
    "a folder on the way": ("mkdir -p logs && ln -s {victim} logs/today",
                            "logs/today/report.jsonl", "{project}/logs/today is a link"),
    "the name itself": ("ln -s {victim}/report.jsonl report.jsonl", "report.jsonl",
                        "{project}/report.jsonl is a link"),
    "a dangling name": ("ln -s {victim}/made-by-the-link report.jsonl", "report.jsonl",
                        "{project}/report.jsonl is a link"),
    "a pipe": ("mkfifo report.jsonl", "report.jsonl", "{project}/report.jsonl is a pipe"),
    "a hard link": ("ln Makefile report.jsonl", "report.jsonl",
                    "{project}/report.jsonl: it has 2 names (a hard link)"),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_what_an_earlier_run_planted_at_the_report_path_is_refused(
        sandbox: Sandbox, plant: str) -> None:
    """The later run writes only ./build: what the earlier one planted lies in a folder
    this run does not write, where lnk-sandbox followed links before."""
    victim = _victim(sandbox)
    (sandbox.project / "Makefile").write_text("all:\n\ttrue\n")
    (sandbox.project / "build").mkdir()
    sandbox.chown()
    script, report, says = PLANTS[plant]
    _plant(sandbox, script.format(victim=victim))
    done = sandbox.lnk("run", "--report", report, "--", "/bin/echo", "RAN", timeout=30,
                       spec='[files]\nread = ["."]\nwrite = ["./build"]\n')
    assert done.returncode == 125, done
    assert "RAN" not in done.stdout
    assert says.format(project=sandbox.project) in done.stderr, done.stderr
    assert (victim / "report.jsonl").read_text() == PERSONS
    assert sorted(os.listdir(victim)) == ["report.jsonl"]
    assert (sandbox.project / "Makefile").read_text() == "all:\n\ttrue\n"


@pytest.mark.requires_root
def test_a_report_file_of_another_owner_is_refused(sandbox: Sandbox) -> None:
    """A file someone else owns, writable by all, where the report goes: not written.
    The run only reads the folder (a report in a folder it writes is refused before)."""
    theirs = sandbox.project / "report.jsonl"
    theirs.write_text("someone else's\n")
    owner = 65534 if sandbox.who.is_root else 0
    os.chown(theirs, owner, owner)
    theirs.chmod(0o666)
    done = sandbox.lnk("run", "--report", "report.jsonl", "--", "/bin/echo", "RAN",
                       spec='[files]\nread = ["."]\n')
    assert done.returncode == 125, done
    assert f"belongs to uid {owner}" in done.stderr
    assert theirs.read_text() == "someone else's\n"


def test_lnk_home_in_a_written_folder_cannot_be_moved_and_replaced(sandbox: Sandbox) -> None:
    """$LNK_HOME set inside the project the sandbox writes, below a folder of its own: the
    sandbox cannot rename that folder away to put a link or a folder of forged
    permissions in its place (each folder above $LNK_HOME is a mount point for the run);
    and a link an earlier run left on the way to another $LNK_HOME refuses the start."""
    lnk_home = sandbox.project / "state" / "lnk"
    env = {"LNK_HOME": str(lnk_home)}
    first = sandbox.run("/bin/true", env=env)
    assert first.returncode == 0, first.stderr
    sandbox.chown()
    before = sorted(p.name for p in lnk_home.iterdir())
    probe = sandbox.probe("rename", str(sandbox.project / "state"),
                          str(sandbox.project / "moved"), env=env)
    probe.expect(errno.EBUSY)
    assert sorted(p.name for p in lnk_home.iterdir()) == before

    victim = _victim(sandbox)
    _plant(sandbox, f"ln -s {victim} elsewhere")
    done = sandbox.run("/bin/echo", "RAN", env={"LNK_HOME": str(sandbox.project / "elsewhere"
                                                                / "lnk")})
    assert done.returncode == 125, done
    assert f"{sandbox.project}/elsewhere is a link (to {victim})" in done.stderr
    assert sorted(os.listdir(victim)) == ["report.jsonl"]
