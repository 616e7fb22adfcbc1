"""Red team 2 (issues 26/27): what the person's shell runs at its start, in forms the
fix (supervisor/shell_words.py, person_settings.py) was not shown. Each attack plants
from inside a real sandbox (root mode and the unprivileged user) into a file the
person's ~/.bashrc reaches, then starts the person's real bash outside; a control makes
the same change on the host and sees it run, so the test can catch what it judges.

Escapes are left failing under `escaped` (support/red_team.py), the reason naming the
function at fault.
"""

from __future__ import annotations

import secrets

import pytest

from support.red_team import host, marker, markers, need, plant, plant_or_refused, ran
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def _bash(box: Sandbox) -> None:
    """The person's interactive bash starting in their home (it reads ~/.bashrc)."""
    done = host(box, "bash", "-i", "-c", "echo BASH-RAN", env={"TERM": "xterm"})
    need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")


# The person's ~/.bashrc, each reaching ~/work/team/NAME.sh (or its folder) in a form of
# its own; `{name}` is random, `{home}` the person's home. Each held by the rule by
# structure (person_settings.py): every word anywhere names what it names; the forms in
# REFUSED name a file from the folder the shell is in, or by a start only the running
# shell knows, and lnk refuses a launch that writes anything, naming the line.
FORMS = {
    "control": ". ~/work/team/{name}.sh",
    "eval cat": 'eval "$(cat ~/work/team/{name}.sh)"',
    "process substitution": ". <(cat ~/work/team/{name}.sh)",
    "stdin": "source /dev/stdin < ~/work/team/{name}.sh",
    "eval string": "eval '. ~/work/team/{name}.sh'",
    "trap": "trap '. ~/work/team/{name}.sh' EXIT",
    "alias": "alias t{name}='. ~/work/team/{name}.sh'\nt{name}",
    "executed": "[ -x ~/work/team/{name}.sh ] && ~/work/team/{name}.sh",
    "eval program": 'eval "$(~/work/team/{name}.sh)"',
    "cd then relative": "cd ~/work/team && . ./{name}.sh; cd",
    "tilde plus": ". ~+/work/team/{name}.sh",
    "array": "t{name}=(~/work/team/{name}.sh)\n. \"${{t{name}[0]}}\"",
    "trimmed": 't{name}=~/work/team/\n. "${{t{name}%/}}/{name}.sh"',
    "path from a file": '. "$(cat ~/.t{name})/{name}.sh"',
    "past the folder bound": 'for f in ~/.bashrc.d/*.sh; do . "$f"; done',
}
REFUSED = {"cd then relative", "tilde plus", "path from a file"}
REFUSAL = "lnk cannot judge what"


@pytest.mark.parametrize("form", FORMS)
def test_what_bashrc_reaches_in_another_form_is_read_only(sandbox: Sandbox,
                                                         form: str) -> None:
    """A run writing ~/work cannot change what the person's next bash runs, whatever
    form their ~/.bashrc reaches ~/work/team/NAME.sh in: held, or the launch refused
    naming the line."""
    name = "f" + secrets.token_hex(4)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / f"{name}.sh"
    shared.write_text("#!/bin/sh\nexport TEAM=1\n")
    shared.chmod(0o755)
    (sandbox.home / f".t{name}").write_text(f"{team}\n")
    if form == "past the folder bound":
        folder = sandbox.home / ".bashrc.d"
        folder.mkdir()
        for index in range(64):
            (folder / f"a{index:02d}.sh").write_text(f"A{index}=1\n")
        (folder / "zz.sh").write_text(f". ~/work/team/{name}.sh\n")
    (sandbox.home / ".bashrc").write_text(FORMS[form].format(name=name) + "\n")
    markers(sandbox)
    sandbox.chown()
    line = f"echo {form.replace(' ', '-')} >> {marker(sandbox, name)}\n"
    results = plant_or_refused(sandbox, [("append", f"team/{name}.sh", line),
                                         ("write", "notes.txt", "the rest stays writable\n")],
                               refusal=REFUSAL, cwd=sandbox.home / "work")
    if form in REFUSED:
        assert "~/.bashrc line" in results.get("refused", ""), results
    else:
        need(results.get("write notes.txt") == "OK", results)
    _bash(sandbox)
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:  # the control: the same append made on the host
        planted.write(line)
    _bash(sandbox)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_a_sourced_file_reached_through_a_link_in_the_grant(sandbox: Sandbox) -> None:
    """~/.bashrc sources ~/work/current/env.sh, `current` a link the person keeps to
    this release (`current -> v2`). A run writing ~/work repoints the link to a folder of
    its own; the person's next bash must run nothing planted (or the launch is refused,
    naming the link: fail closed)."""
    work = sandbox.home / "work"
    (work / "v2").mkdir(parents=True)
    (work / "v2" / "env.sh").write_text("export V=2\n")
    (work / "current").symlink_to("v2")
    (sandbox.home / ".bashrc").write_text(". ~/work/current/env.sh\n")
    markers(sandbox)
    sandbox.chown()
    script = (f"mkdir v3 && echo 'echo link >> {marker(sandbox, 'link')}' > v3/env.sh && "
              "ln -sfn v3 current.new && mv -T current.new current; echo PLANT=$?")
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; " + script, cwd=work)
    if done.returncode == 125:  # refused before it started: held, fail closed
        assert "current" in done.stderr, done.stderr
        return
    need(done.stdout.startswith("STARTED\n"), f"never started: {done.stderr}")
    _bash(sandbox)
    assert ran(sandbox) == [], done.stdout + done.stderr


def test_a_relative_name_sourced_by_a_shell_started_in_the_project(sandbox: Sandbox
                                                                   ) -> None:
    """~/.bashrc has `[ -f .tNAME ] && . .tNAME` (meant as home's file); the person's
    editor opens its terminal in the project, where a run planted .tNAME. bash finds the
    name from the folder it starts in, which may be any folder a run writes: nothing
    bounded can be held, so the launch is refused, naming the line."""
    name = secrets.token_hex(4)
    (sandbox.home / ".bashrc").write_text(f"[ -f .t{name} ] && . ./.t{name}\n")
    markers(sandbox)
    sandbox.chown()
    results = plant_or_refused(sandbox, [("write", f".t{name}",
                                          f"echo relative >> {marker(sandbox, name)}\n")],
                               refusal=REFUSAL)
    assert "~/.bashrc line 1" in results.get("refused", ""), results

    def person() -> None:
        done = host(sandbox, "bash", "-i", "-c", "echo BASH-RAN", cwd=sandbox.project,
                    env={"TERM": "xterm"})
        need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    planted = sandbox.project / f".t{name}"  # the control: made on the host
    if planted.is_dir():
        planted.rmdir()
    planted.write_text(f"echo relative >> {marker(sandbox, name)}\n")
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_a_path_folder_the_bashrc_adds(sandbox: Sandbox) -> None:
    """~/.bashrc puts ~/work/bin first on PATH; lnk runs with the system's PATH; a
    planted ~/work/bin/ls runs when the person next types `ls`."""
    (sandbox.home / "work" / "bin").mkdir(parents=True)
    (sandbox.home / ".bashrc").write_text('export PATH="$HOME/work/bin:$PATH"\n')
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("make", "bin/ls",
                               f"#!/bin/sh\necho ls >> {marker(sandbox, 'ls')}\n")],
                    cwd=sandbox.home / "work")
    done = host(sandbox, "bash", "-i", "-c", "ls >/dev/null; echo BASH-RAN",
                env={"TERM": "xterm"})
    need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")
    assert ran(sandbox) == [], results
