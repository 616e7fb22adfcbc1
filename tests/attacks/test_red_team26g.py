"""Red team 26g (issue 26): an independent attack on the rule that a variable read as a
command naming the write grant, or a folder holding it, refuses the launch
(grants.check_command), and on the reading it stands on (environment_paths.read_value).

By class, each a value the reader misread: what sh sets itself and the reader took as
empty (`${IFS}`, the prompts' blanks), a blank a substitution prints, a substitution a
builtin runs (`exec`, `eval`, `sh -c`), a folder the kernel links to any other
(`/proc/$$/root`), a `cd` through a link to home or `/` (the bound compared by its
text), a program whose folder's name holds `:`, and a program path sh reads as one
word that the reader split at a blank sh does not know (`\\r`, a no-break space). Each
reached a team's script in ~/work that a sandbox writing ~/work changed, neither held
nor refused; each is fixed, and proved here end to end as red team 6's are: the
person's GIT_EDITOR (or ~/.gitconfig's core.editor) reaches the script, a sandbox
writing ~/work changes it (or lnk refuses the launch), the person's next `git commit`
must run nothing planted, and a control makes the change on the host, which git runs.

What still gets out is a strict xfail with its reason: a link inside a folder the
command names, leading into the grant; a Python script held read-only whose folder
(its `sys.path[0]`) is not.

As root (root mode) and as the unprivileged user, through the `sandbox` fixture.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable

import pytest

from support.red_team import (
    configure_editor,
    escaped,
    git_env,
    host,
    marker,
    markers,
    need,
    person_commits,
    plant_or_refused,
    ran,
    repository,
    team_file,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# The team's editor: the message into the last argument (a form may pass more).
EDITOR = '#!/bin/sh\nfor last; do :; done\necho message > "$last"\n'


def _link(name: str, to: Callable[[Sandbox], str]) -> Callable[[Sandbox], None]:
    """A set-up: the person's link ~/NAME to what `to` gives."""
    def make(box: Sandbox) -> None:
        link = box.home / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(to(box), link)
    return make


# GIT_EDITOR as git hands it to `sh -c 'VALUE "$@"' VALUE FILE`: (value, the script it
# runs under ~/work, a set-up of the person's files before the run).
FORMS: dict[str, tuple[str, str, Callable[[Sandbox], None] | None]] = {
    # a link inside a folder the command names, into the grant: no walk looks for it
    "a link inside the folder a cd names": (
        "cd ~/links && w/team/{name}.sh", "team/{name}.sh",
        _link("links/w", lambda b: str(b.home / "work"))),
    # what sh sets itself, whatever the environment: read as empty, one word naming nothing
    "IFS between a cd and its folder": ("cd${{IFS}}$HOME/work&&team/{name}.sh",
                                        "team/{name}.sh", None),
    "PS4's blank": ("cd${{PS4#+}}$HOME/work&&team/{name}.sh", "team/{name}.sh", None),
    "PS2's blank": ("cd${{PS2#?}}$HOME/work&&team/{name}.sh", "team/{name}.sh", None),
    "bash's own path": ("bash -c 'cd $HOME${{BASH%%u*}}work && team/{name}.sh \"$1\"' bash",
                        "team/{name}.sh", None),
    # a blank a substitution prints splits the word it is in
    "a substitution's blank": ('cd$(echo " ")$HOME/work&&team/{name}.sh',
                               "team/{name}.sh", None),
    # a substitution a builtin runs: a program only the running shell knows
    "exec of a substitution": ('exec $(printf %s/work/team/{name}.sh ~) "$@"',
                               "team/{name}.sh", None),
    "eval of a substitution": ("eval \"$(printf 'cd %s/work && team/{name}.sh' ~)\"",
                               "team/{name}.sh", None),
    "sh -c of a substitution": ("sh -c \"$(printf 'cd %s/work && team/{name}.sh \"$1\"' ~)\" "
                                "sh", "team/{name}.sh", None),
    # a folder the kernel links to any other: the shell's own root, by its pid
    "/proc/$$/root": ("sh -c 'find /proc/$$/root{home}/work/team -name {name}.sh "
                      "-exec {{}} \"$1\" \\;' sh", "team/{name}.sh", None),
    # a cd's folder through a link: compared by its text, home's and /'s rule passed by
    "a cd through a link to home": ("cd ~/links/h && work/team/{name}.sh",
                                    "team/{name}.sh", _link("links/h", lambda b: str(b.home))),
    "a cd through a link to /": ("cd ~/links/r && .{home}/work/team/{name}.sh",
                                 "team/{name}.sh", _link("links/r", lambda b: "/")),
    # one word with `:`: sh runs the whole, the reader held its first part
    "a program in a folder named with a colon": ("{home}/work/team:/{name}.sh",
                                                 "team:/{name}.sh", None),
}
LINKED = ("a folder the command names (`cd ~/links`) holds a link into the grant "
          "(~/links/w -> ~/work), which its relative name follows: no walk of the named "
          "folder looks for links, and it may be any size")
REASONS: dict[str, str] = {
    "a link inside the folder a cd names/environment": LINKED,
    "a link inside the folder a cd names/gitconfig": LINKED,
}


@pytest.mark.parametrize(("form", "where"), [
    pytest.param(f, w, marks=escaped(REASONS[f"{f}/{w}"])) if f"{f}/{w}" in REASONS
    else (f, w) for f in FORMS for w in ("environment", "gitconfig")])
def test_an_editor_the_reader_misread(sandbox: Sandbox, form: str, where: str) -> None:
    """The person's editor reaches a team's script in ~/work by a form the reader
    misread; a run writing ~/work appends to it (or is refused); the person's next
    `git commit` must run nothing planted."""
    name = "e" + secrets.token_hex(3)
    value, relative, setup = FORMS[form]
    shared = team_file(sandbox, relative.format(name=name), EDITOR)
    if setup is not None:
        setup(sandbox)
    value = value.format(name=name, home=sandbox.home)
    env = configure_editor(sandbox, value, where)
    markers(sandbox)
    sandbox.chown()
    line = f"echo editor >> {marker(sandbox, name)}\n"
    said = plant_or_refused(sandbox, [("append", str(shared), line)], refusal=(
        "GIT_EDITOR" if where == "environment" else "core.editor"), env=env,
        cwd=sandbox.home / "work")
    person_commits(sandbox, env)
    assert ran(sandbox) == [], said
    with open(shared, "a") as planted:
        planted.write(line)
    person_commits(sandbox, env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def _commit(box: Sandbox, env: dict[str, str]) -> None:
    """The person's `git commit` elsewhere, whether or not their editor is there."""
    other = box.base / "elsewhere"
    if not other.exists():
        repository(box, other)
    host(box, "git", "commit", "-q", "--allow-empty", cwd=other, env={**git_env(box), **env})


@pytest.mark.parametrize("after", ["\r", "\u00a0x"], ids=["a carriage return",
                                                           "a no-break space"])
def test_a_program_sh_reads_as_one_word(sandbox: Sandbox, after: str) -> None:
    """GIT_EDITOR ending in a character sh does not split at (a value from a CRLF file):
    git runs the one file `~/work/team/NAME.sh\\r`, missing at launch. The reader kept
    such a path only where it was there (a blank to it), so the sandbox made it, and
    the person's next commit ran it; it is held now, as a missing path of one word is."""
    name = "e" + secrets.token_hex(3)
    team_file(sandbox, "team/README", "the team's folder\n")
    program = sandbox.home / "work" / "team" / f"{name}.sh{after}"
    env = {"GIT_EDITOR": str(program)}
    markers(sandbox)
    sandbox.chown()
    text = EDITOR + f"echo editor >> {marker(sandbox, name)}\n"
    said = plant_or_refused(sandbox, [("make", str(program), text)], refusal="GIT_EDITOR",
                            env=env, cwd=sandbox.home / "work")
    _commit(sandbox, env)
    assert ran(sandbox) == [], said
    if program.is_dir():
        program.rmdir()  # a placeholder the run left: what a person would see
    program.write_text(text)
    program.chmod(0o755)
    sandbox.chown()
    _commit(sandbox, env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


PYTHON_EDITOR = ("#!/usr/bin/python3\nimport subprocess\nimport sys\n"
                 "open(sys.argv[-1], 'w').write('message\\n')\n")


@escaped("a script the value names is held read-only, its folder is not: Python puts "
         "the script's folder first on sys.path, so a `subprocess.py` the sandbox writes "
         "beside ~/work/team/ed.py runs in the person's next commit; holding every named "
         "file's folder would hold the grant itself (`vim -u ~/work/x.vim`), and telling "
         "an interpreter from an editor takes a list of programs")
def test_a_python_editor_imports_from_its_own_folder(sandbox: Sandbox) -> None:
    """GIT_EDITOR names a Python script of the team's in ~/work (held read-only); the
    sandbox writes a module of the name it imports beside it; the person's next commit
    must run nothing planted."""
    name = "e" + secrets.token_hex(3)
    team_file(sandbox, f"team/{name}.py", PYTHON_EDITOR)
    module = sandbox.home / "work" / "team" / "subprocess.py"
    env = {"GIT_EDITOR": str(sandbox.home / "work" / "team" / f"{name}.py")}
    markers(sandbox)
    sandbox.chown()
    text = f"open({marker(sandbox, name)!r}, 'a').write('imported\\n')\n"
    said = plant_or_refused(sandbox, [("write", str(module), text)], refusal="GIT_EDITOR",
                            env=env, cwd=sandbox.home / "work")
    person_commits(sandbox, env)
    assert ran(sandbox) == [], said
    module.write_text(text)
    sandbox.chown()
    person_commits(sandbox, env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_values_people_use_still_launch(sandbox: Sandbox) -> None:
    """The controls of the fixes: a substitution among a command's arguments, one in a
    quoted word, IFS printed, a log file on a descriptor, a file of /proc read, a cd to
    a folder outside home through no link: the launch starts and writes the grant."""
    work = sandbox.home / "work"
    work.mkdir(parents=True, exist_ok=True)
    (sandbox.base / "elsewhere").mkdir()
    sandbox.chown()
    env = {
        "ZQ_PUSH": "git push origin $(git branch --show-current)",
        "ZQ_LOG": 'git log "refs/heads/$(git branch --show-current)/x"',
        "ZQ_TITLE": 'printf "\\033]0;%s\\007" "$(basename "$PWD")"',
        "ZQ_SPLIT": 'printf "%s" "$IFS" | od -c',
        "ZQ_LOG_FILE": "/proc/self/fd/1",
        "ZQ_LOAD": "read load rest < /proc/loadavg; echo $load",
        "ZQ_ELSEWHERE": f"cd {sandbox.base}/elsewhere && ls",
    }
    free = str(work / "free.txt")
    said = plant_or_refused(sandbox, [("write", free, "x\n")], refusal="", env=env, cwd=work)
    assert said == {f"write {free}": "OK"}, said
