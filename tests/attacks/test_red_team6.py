"""Red team 6 (issue 26): an independent attack on red team 5's rules for the paths the
person's environment and git settings name (environment_paths.py, person_settings.py),
by class: what a value does to the shell that runs it before it names a path. A `cd`
to a folder that is the write grant and a relative program after it, a name the value
assigns and expands, a PATH it assigns, an escaped `$` another shell expands: each
reached a file inside the grant that lnk neither held nor refused.

tests/unit/test_environment_paths.py judges each form (and the aliases people use, not
refused); here each is proved end to end as red team 5's are: the person's GIT_EDITOR
(or ~/.gitconfig's core.editor) reaches a team's script in ~/work, a sandbox writing
~/work appends to it (or lnk refuses the launch), the person's next `git commit`
elsewhere must run nothing planted, and a control makes the change on the host, which
git runs. What gets out is a strict xfail with its reason.

As root (root mode) and as the unprivileged user, through the `sandbox` fixture.
"""

from __future__ import annotations

import secrets

import pytest

from support.red_team import (
    SYSTEM_PATH,
    configure_editor,
    escaped,
    marker,
    markers,
    need,
    person_commits,
    plant_or_refused,
    ran,
    team_file,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# The team's editor: the message into the last argument (a form may pass more).
EDITOR = '#!/bin/sh\nfor last; do :; done\necho message > "$last"\n'

# GIT_EDITOR as git hands it to `sh -c 'VALUE "$@"' VALUE FILE`: (value, the script it
# runs under ~/work, the person's environment it needs).
FORMS: dict[str, tuple[str, str, dict[str, str]]] = {
    # a cd to the grant itself, then a relative program: ~/work named, nothing held
    "a cd then a relative program": ("cd ~/work && team/{name}.sh", "team/{name}.sh", {}),
    "a cd with no folder (home)": ("cd; work/team/{name}.sh", "team/{name}.sh", {}),
    # the person's own CDPATH (people export one) finds the relative folder
    "a cd through CDPATH": ("cd team && ./{name}.sh", "team/{name}.sh",
                            {"CDPATH": "{home}/work"}),
    # a name the value assigns: lnk expanded it from the environment (empty)
    "a name it assigns": ('T=~/work; "$T"/team/{name}.sh', "team/{name}.sh", {}),
    "a name a quoted script assigns": ("sh -c 'T=~/work; \"$T\"/team/{name}.sh \"$@\"' sh",
                                       "team/{name}.sh", {}),
    "a loop's name": ('for d in ~/work; do $d/team/{name}.sh "$@"; done; :', "team/{name}.sh",
                      {}),
    # a PATH of its own: the program is looked up in the grant
    "a PATH it assigns": ("PATH=~/work:$PATH {name}", "{name}", {}),
    # a program's own change of folder (GNU env's -C)
    "a program's -C": ("env -C ~/work team/{name}.sh", "team/{name}.sh", {}),
    # red team 26e: the folder attached to -C; a relative way out of the person's repository
    "a program's attached -C": ("env -C$HOME/work team/{name}.sh", "team/{name}.sh", {}),
    "a function's cd": ('f() {{ cd "$1"; }}; f ~/work; team/{name}.sh "$@"', "team/{name}.sh",
                        {}),
    "a cd's redirection first": ("cd 2>/dev/null ~/work; team/{name}.sh", "team/{name}.sh",
                                 {}),
    "a cd IFS makes": ("IFS=:; c=cd:$HOME/work; $c; team/{name}.sh", "team/{name}.sh", {}),
    "a cd dash's alias runs": ("alias c='cd ~/work'\nc; team/{name}.sh", "team/{name}.sh", {}),
    # a program that runs what it finds in the grant named whole (find -exec)
    "find's -exec": ("sh -c 'find ~/work -name {name}.sh -exec {{}} \"$1\" \\;' sh",
                     "team/{name}.sh", {}),
    # an escaped `$`: the shell eval runs expands it
    "an escaped $ eval expands": ("eval \\$HOME/work/team/{name}.sh", "team/{name}.sh", {}),
    # issue 26, fail closed: a program the value runs changes to the grant itself or is
    # given it, then runs a file there by a relative name or as it finds it; a command
    # naming a folder that is the grant or holds it refuses (grants.check_command)
    "python's chdir": ("python3 -c \"import os,sys; os.chdir('{home}/work'); "
                       "os.execv('team/{name}.sh', ['x']+sys.argv[1:])\"",
                       "team/{name}.sh", {}),
    "perl's chdir": ("perl -e 'chdir \"{home}/work\" or die; exec \"team/{name}.sh\", "
                     "@ARGV'", "team/{name}.sh", {}),
    "xargs given the grant": ("sh -c 'echo ~/work | xargs -I@ env -C @ team/{name}.sh "
                              "\"$1\"' sh", "team/{name}.sh", {}),
    "run-parts given the grant": ("sh -c 'run-parts --regex=^e --arg=\"$1\" ~/work' sh",
                                  "{name}", {}),
    # what only the program knows: the path it builds from HOME names no folder
    "perl's chdir from $ENV{HOME}": ("perl -e 'chdir \"$ENV{{HOME}}/work\" or die; "
                                     "exec \"team/{name}.sh\", @ARGV'", "team/{name}.sh", {}),
}
# A program that builds the path (perl's $ENV{HOME}, python's os.environ['HOME'] +
# '/work') names no path in the value: nothing bounds it short of refusing every
# command with an interpreter's code in it.
BUILT = ("a program given its folder by what only it computes (perl's `$ENV{HOME}` "
         "joined to `/work`) runs a file of the grant: the value names no folder")
REASONS: dict[str, str] = {
    "perl's chdir from $ENV{HOME}/environment": BUILT,
    "perl's chdir from $ENV{HOME}/gitconfig": BUILT,
}


@pytest.mark.parametrize(("form", "where"), [
    pytest.param(f, w, marks=escaped(REASONS[f"{f}/{w}"])) if f"{f}/{w}" in REASONS
    else (f, w) for f in FORMS for w in ("environment", "gitconfig")])
def test_an_editor_that_changes_its_shell_first(sandbox: Sandbox, form: str,
                                               where: str) -> None:
    """The person's editor changes its shell's folder, names or PATH, then reaches a
    team's script in ~/work; a run writing ~/work appends to it (or is refused); the
    person's next `git commit` must run nothing planted."""
    name = "e" + secrets.token_hex(3)
    value, relative, extra = FORMS[form]
    shared = team_file(sandbox, relative.format(name=name), EDITOR)
    value = value.format(name=name, home=sandbox.home)
    extra = {k: v.format(home=sandbox.home) for k, v in extra.items()}
    env = {**configure_editor(sandbox, value, where), **extra}
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


def test_a_command_naming_home_and_a_list_naming_the_grant_launch(sandbox: Sandbox) -> None:
    """The controls of the rule above: a command naming home or `/` (fzf's `fd -t d .
    ~`: every grant of home's lies there) and a path or a list naming the grant
    (`PROJECTS=~/work`, CDPATH's `.:~:~/work`, direnv's DIRENV_DIR) leave the launch as
    it was: it starts, and writes the grant."""
    work = sandbox.home / "work"
    work.mkdir(parents=True, exist_ok=True)
    sandbox.chown()
    env = {"FZF_ALT_C_COMMAND": "fd -t d . ~", "FZF_CTRL_T_COMMAND": "find / -maxdepth 1",
           "PROJECTS": "~/work", "CDPATH": ".:~:~/work", "DIRENV_DIR": f"-{work}",
           "PATH": SYSTEM_PATH}
    free = str(work / "free.txt")
    said = plant_or_refused(sandbox, [("write", free, "x\n")], refusal="", env=env, cwd=work)
    assert said == {f"write {free}": "OK"}, said
