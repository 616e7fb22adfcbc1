"""Red team 4 (issue 26): an independent attack on "what runs as you", by class, against
red team 3's fixes and the classes none of them names.

Each attack plants from inside a real sandbox (after proving it started there), then runs
the person's real tool outside (git, bash, ipython, npm, sqlite3, nvim) and looks for
the planted marker; a control makes the same change on the host and sees the tool run
it, so the test can catch what it judges. What holds stays as a regression test; what
gets out is a strict xfail under `escaped(...)`, its reason naming the module and why.

As root (root mode) and as the unprivileged user, through the `sandbox` fixture.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from support.capabilities import missing
from support.red_team import (
    escaped,
    git_env,
    host,
    marker,
    markers,
    need,
    ok,
    plant_or_refused,
    ran,
    repository,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]




def team_script(box: Sandbox, name: str, first: str = "#!/bin/sh\n",
                suffix: str = ".sh") -> Path:
    """~/work/team/NAME.sh, the person's, which their settings or environment name."""
    team = box.home / "work" / "team"
    team.mkdir(parents=True, exist_ok=True)
    shared = team / f"{name}{suffix}"
    shared.write_text(first)
    shared.chmod(0o755)
    return shared


def appended_inside(box: Sandbox, shared: Path, text: str,
                    env: dict[str, str] | None = None) -> str:
    """Append `text` to `shared` from a sandbox run in ~/work (the default spec: write
    the working directory): what the run said, once it started inside. A refused
    launch (exit 125) holds too: nothing ran inside."""
    done = box.run("/usr/bin/python3", "-c", (
        "import os, sys; print('STARTED', flush=True)\n"
        "try:\n fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        " os.write(fd, sys.argv[2].encode()); print('APPENDED')\n"
        "except OSError as err: print('REFUSED', err)\n"), str(shared), text,
        cwd=box.home / "work", env=env)
    if done.returncode == 125 and "STARTED" not in done.stdout:
        return "refused: " + done.stderr
    need(done.stdout.startswith("STARTED\n"), f"never started inside: {done.stderr}")
    return done.stdout + done.stderr


# == 1. the launch environment: forms a shell rewrites ========================================

# GIT_EDITOR spelled as the person's shell would hand it to `sh -c` (git runs an editor
# with shell characters in it through sh): each reaches ~/work/team/NAME.sh.
EDITOR_FORMS: dict[str, str] = {
    "trimmed HOME": "${{HOME%/}}/work/team/{name}.sh",
    "longest trim": "${{HOME%%/}}/work/team/{name}.sh",
    "empty quotes in a listed path": '~/work/te""am/{name}.sh',
    "backslash in a listed path": "~/work/te\\am/{name}.sh",
    "unset variable glued": "$HOME${{ZQ_UNSET_{tag}}}/work/team/{name}.sh",
    "command substitution": "$(echo ~)/work/team/{name}.sh",
    "backquotes": "`echo ~`/work/team/{name}.sh",
    "trim by a default's pattern": "${{HOME%${{ZQ_UNSET_{tag}:-/}}}}/work/team/{name}.sh",
    # held before (regressions): red team 3's forms in other spellings
    "default of a default": "${{ZQ_A_{tag}:-${{ZQ_B_{tag}:-$HOME}}}}/work/team/{name}.sh",
    "quoted HOME": '"$HOME"/work/team/{name}.sh',
}
# All eight fixed by red team 4: environment_paths._expand expands as sh does (trims,
# nesting, unset is empty), a quoted listed path is read as words, and a path whose start
# only the running shell knows (`$(...)`, a backquote) refuses a launch that writes.
EDITOR_REASONS: dict[str, str] = {}
GITCONFIG_REASONS: dict[str, str] = {}


@pytest.mark.parametrize("where", ["environment", "gitconfig"])
@pytest.mark.parametrize("form", [
    pytest.param(f, marks=escaped(EDITOR_REASONS[f])) if f in EDITOR_REASONS else f
    for f in EDITOR_FORMS])
def test_an_editor_named_in_a_shell_form(sandbox: Sandbox, form: str, where: str) -> None:
    """The person's GIT_EDITOR (or ~/.gitconfig's core.editor) reaches a team's script in
    ~/work in a form `sh -c` rewrites (a trim, quotes, an unset variable, a
    substitution); a run writing ~/work appends to it; the person's next `git commit`
    elsewhere must run nothing planted (the control appends on the host, and git runs
    it)."""
    name = "e" + secrets.token_hex(3)
    tag = secrets.token_hex(2).upper()
    shared = team_script(sandbox, name, "#!/bin/sh\necho message > \"$1\"\n")
    value = EDITOR_FORMS[form].format(name=name, tag=tag)
    env = {"GIT_EDITOR": value} if where == "environment" else {}
    if where == "gitconfig":
        if form in GITCONFIG_REASONS:
            pytest.xfail(f"red team: {GITCONFIG_REASONS[form]}")  # checked below: strict
        quoted = value.replace("\\", "\\\\").replace('"', '\\"')
        (sandbox.home / ".gitconfig").write_text(f'[core]\n\teditor = "{quoted}"\n')
    markers(sandbox)
    sandbox.chown()
    line = f"echo editor >> {marker(sandbox, name)}\n"
    said = appended_inside(sandbox, shared, line, env=env)
    if said.startswith("refused"):  # what cannot be bounded: refused, naming it
        need("GIT_EDITOR" in said or "core.editor" in said, said)
    other = repository(sandbox, sandbox.base / "elsewhere")

    def person() -> None:
        done = host(sandbox, "git", "commit", "-q", "--allow-empty", cwd=other,
                    env={**git_env(sandbox), **env})
        ok(done, "git commit")

    person()
    assert ran(sandbox) == [], said
    with open(shared, "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# == 2. what the person's tools read from their own folders, not a file the table names =====

# (the tool's file below home, what it says, the team's file, its first text, what is
# appended inside, the person's command). Each file names ~/work/team/NAME.* in its own
# language; the person's tool then runs or reads the team's file.
TOOLS: dict[str, tuple[str, str, str, str, str, tuple[str, ...]]] = {
    "nvim plugin folder": (  # ~/.config/nvim/plugin/*.vim: nvim runs each at start
        ".config/nvim/plugin/team.vim", "source ~/work/team/{name}.vim\n", "{name}.vim",
        '" the team\n', "call writefile(['ran'], '{marker}')\n",
        ("nvim", "--headless", "+qa")),
    "nvim lua module": (  # init.lua's require('team') names no path; lua/team.lua does
        ".config/nvim/lua/team.lua", 'dofile(vim.env.HOME .. "/work/team/{name}.lua")\n',
        "{name}.lua", "-- the team\n", "vim.fn.writefile({{'ran'}}, '{marker}')\n",
        ("nvim", "--headless", "+qa")),
    "ssh Match exec through a trim": (  # ssh runs it with the person's shell
        ".ssh/config", 'Match exec "${{HOME##}}/work/team/{name}.sh"\n  User x\n',
        "{name}.sh", "#!/bin/sh\n", "echo ssh >> {marker}\n",
        ("ssh", "-F", "{home}/.ssh/config", "-G", "team-host")),
    "npmrc script-shell": (  # held: ~/.npmrc is a file of the table
        ".npmrc", "script-shell={home}/work/team/{name}.sh\n", "{name}.sh", "#!/bin/sh\n",
        "echo npm >> {marker}\n", ("npm", "run", "--silent", "x")),
}
TOOL_REASONS: dict[str, str] = {}


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=escaped(TOOL_REASONS[c])) if c in TOOL_REASONS else c
    for c in TOOLS])
def test_what_a_tools_own_settings_name_in_a_grant(sandbox: Sandbox, case: str) -> None:
    """The person's tool settings name a team's file in ~/work; a run writing ~/work
    appends to it; the person's tool, started outside, runs nothing planted (the
    control appends on the host, and the tool runs it)."""
    settings, naming, shared_name, first, text, command = TOOLS[case]
    if shutil.which(command[0]) is None:
        missing(f"{command[0]} is not installed here")
    name = "t" + secrets.token_hex(3)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / shared_name.format(name=name)
    shared.write_text(first)
    shared.chmod(0o755)
    path = sandbox.home / settings
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(naming.format(home=sandbox.home, name=name))
    if settings.startswith(".ssh"):
        path.parent.chmod(0o700)
        path.chmod(0o600)
    if case == "nvim lua module":
        (path.parent.parent / "init.lua").write_text('require("team")\n')
    elsewhere = sandbox.base / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "package.json").write_text('{"name": "x", "scripts": {"x": "true"}}\n')
    markers(sandbox)
    sandbox.chown()
    appended = text.format(marker=marker(sandbox, name))
    said = appended_inside(sandbox, shared, appended)

    def person() -> None:
        argv = [word.format(home=sandbox.home) for word in command]
        host(sandbox, *argv, cwd=elsewhere, env={"npm_config_update_notifier": "false"})

    person()
    assert ran(sandbox) == [], said
    with open(shared, "a") as planted:
        planted.write(appended)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# == 3. a held file's folder replaced during the run ==========================================

@pytest.mark.parametrize("how", ["a new folder", "a link"])
def test_a_held_files_folder_replaced_inside(sandbox: Sandbox, how: str) -> None:
    """GNU Stow's layout one folder deeper: ~/.bashrc -> dotfiles/bash/bashrc, a run
    writing ~/dotfiles (dotfiles/bash/bashrc is held read-only). Inside, the run moves
    the folder `bash` aside and puts a folder of its own (or a link to one) in its
    place, holding a bashrc of its own; the person's next bash must run nothing planted
    (the control makes the same change on the host, and bash runs it)."""
    dotfiles = sandbox.home / "dotfiles"
    (dotfiles / "bash").mkdir(parents=True)
    (dotfiles / "bash" / "bashrc").write_text("PERSON=1\n")
    (sandbox.home / ".bashrc").symlink_to("dotfiles/bash/bashrc")
    markers(sandbox)
    sandbox.chown()
    body = f"echo replaced >> {marker(sandbox, 'replaced')}\n"
    if how == "a new folder":
        actions = [("rename", "bash", "bash.old"), ("mkdir", "bash"),
                   ("write", "bash/bashrc", body)]
    else:
        actions = [("rename", "bash", "bash.old"), ("mkdir", "mine"),
                   ("write", "mine/bashrc", body), ("symlink", "mine", "bash")]
    results = plant_or_refused(sandbox, [*actions, ("write", "notes.txt", "kept\n")],
                               refusal="bashrc", cwd=dotfiles)
    need("refused" in results or results.get("write notes.txt") == "OK", results)

    def person() -> None:
        done = host(sandbox, "bash", "-i", "-c", "echo BASH-RAN", env={"TERM": "xterm"})
        need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    (sandbox.home / ".bashrc").unlink()  # the control: a bashrc that is the payload
    (sandbox.home / ".bashrc").write_text(body)
    sandbox.chown()
    person()
    need(ran(sandbox) == ["replaced"], f"the control did not run: {ran(sandbox)}")
