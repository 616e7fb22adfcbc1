"""Red team, issue 26 item 2: what runs as the person, attacked with what its own tests do
not use. Each attack plants from inside a real sandbox (root mode and the unprivileged
user) and then runs the person's real tool outside (git in an unrelated repository or in
the repository attacked, bash reading its startup files, python started in the folder).

Escapes are left failing under `escaped` (support/red_team.py); the report names the
function at fault. What held stays as a regression test.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from support.red_team import (
    escaped,
    git_elsewhere,
    host,
    inside,
    marker,
    markers,
    need,
    payload,
    person_git,
    plant,
    ran,
    repository,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]


def _bash(box: Sandbox) -> None:
    """The person's interactive bash starting (it reads ~/.bashrc and what that sources)."""
    done = host(box, "bash", "-i", "-c", "echo BASH-RAN", env={"TERM": "xterm"})
    need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")


# -- a link in home, deeper than the walk looks, or a hard link -----------------------------

@pytest.mark.parametrize("place", [
    "~/.githooks",
    pytest.param("~/.config/git/hooks", marks=escaped(
        "home_places.home_links walks HOME_LINK_DEPTH=3 levels: a hook linked from "
        "~/.config/git/hooks/ (the hooks folder the person's core.hooksPath names) into "
        "a write grant is writable")),
])
def test_a_hook_linked_from_homes_configuration_into_a_grant(sandbox: Sandbox,
                                                            place: str) -> None:
    """GNU Stow without folding links each file: `~/.config/git/hooks/post-checkout ->
    ~/dotfiles/githooks/post-checkout`, core.hooksPath naming that folder. The sandbox
    writing ~/dotfiles rewrites the hook; the person's next checkout anywhere runs it."""
    dotfiles = sandbox.home / "dotfiles"
    (dotfiles / "githooks").mkdir(parents=True)
    (dotfiles / "githooks" / "post-checkout").write_text("#!/bin/sh\nexit 0\n")
    (dotfiles / "githooks" / "post-checkout").chmod(0o755)
    folder = sandbox.home / place[2:]
    folder.mkdir(parents=True)
    (folder / "post-checkout").symlink_to(
        os.path.relpath(dotfiles / "githooks" / "post-checkout", folder))
    (sandbox.home / ".gitconfig").write_text(f"[core]\n\thooksPath = {place}\n")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("write", "githooks/post-checkout",
                               payload(sandbox, "linked-hook"))], cwd=dotfiles)
    git_elsewhere(sandbox)
    assert ran(sandbox) == [], results


@pytest.mark.parametrize("link", [
    "symbolic",
    pytest.param("hard", marks=escaped(
        "a hard link in home into a write grant (~/.bashrc and ~/dotfiles/bashrc one "
        "file) is not looked for: home_places.home_links sees symbolic links only")),
])
def test_a_startup_file_linked_into_a_grant(sandbox: Sandbox, link: str) -> None:
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_text("PS1='$ '\n")
    if link == "hard":
        os.link(dotfiles / "bashrc", sandbox.home / ".bashrc")
    else:
        (sandbox.home / ".bashrc").symlink_to("dotfiles/bashrc")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("append", "bashrc",
                               f"echo bashrc >> {marker(sandbox, 'bashrc')}\n")],
                    cwd=dotfiles)
    _bash(sandbox)
    assert ran(sandbox) == [], results


# -- a grant that is itself what the person's settings name ----------------------------------

@pytest.mark.parametrize("grant", [
    "holding it",
    pytest.param("itself", marks=escaped(
        "dotfiles._Analysis.person_git skips a path equal to the grant's top "
        "(`path == self.top`): core.hooksPath = ~/githooks, written from ~/githooks, is "
        "neither held nor refused")),
])
def test_the_persons_hooks_folder_as_the_written_folder(sandbox: Sandbox, grant: str) -> None:
    githooks = sandbox.home / "githooks"
    hooks = githooks if grant == "itself" else githooks / "hooks"
    hooks.mkdir(parents=True)
    (sandbox.home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n")
    markers(sandbox)
    sandbox.chown()
    name = str((hooks / "post-checkout").relative_to(githooks))
    results = plant(sandbox, [("make", name, payload(sandbox, "hooks-folder"))], cwd=githooks)
    git_elsewhere(sandbox)
    assert ran(sandbox) == [], results


@pytest.mark.parametrize("grant", [
    "~/shell",
    pytest.param("~/shell/aliases.sh", marks=escaped(
        "a write grant of the very file ~/.bashrc sources (or ~/.gitconfig includes) is "
        "neither refused (grants.py refuses only the table's places) nor held "
        "(dotfiles._Analysis.person_settings skips `path == self.top`)")),
])
def test_a_file_the_persons_bashrc_sources_granted(sandbox: Sandbox, grant: str) -> None:
    shell = sandbox.home / "shell"
    shell.mkdir()
    (shell / "aliases.sh").write_text("alias ll='ls -l'\n")
    (sandbox.home / ".bashrc").write_text(". ~/shell/aliases.sh\n")
    work = sandbox.home / "work"
    work.mkdir()
    markers(sandbox)
    sandbox.chown()
    spec = f'[files]\nread = ["."]\nwrite = ["{grant}"]\n'
    results = plant(sandbox, [("append", str(shell / "aliases.sh"),
                               f"echo sourced >> {marker(sandbox, 'sourced')}\n")],
                    spec=spec, cwd=work)
    _bash(sandbox)
    assert ran(sandbox) == [], results


# -- what the shell sources, in forms the pattern does not know ------------------------------

SOURCING = {
    "plain": ". ~/work/team/{name}.sh",
    "builtin": "builtin source ~/work/team/{name}.sh",
    "command": "command . ~/work/team/{name}.sh",
    "case": 'case "$TERM" in *) . ~/work/team/{name}.sh ;; esac',
    "backslash": "[ -s ~/work/team/{name}.sh ] && \\. ~/work/team/{name}.sh",  # nvm's
    "quoted part": '. ~/"work"/team/{name}.sh',
}
_NOT_FOLLOWED = ("person_settings._SOURCE (and _literal) know `.`/`source` after ; & | ( {{ ! "
                 "or a keyword, and a word quoted whole: `{form}` sources a file in a write "
                 "grant that stays writable")


@pytest.mark.parametrize("form", [
    "plain",
    *(pytest.param(form, marks=escaped(_NOT_FOLLOWED.format(form=SOURCING[form])))
      for form in ("builtin", "command", "case", "backslash", "quoted part")),
])
def test_what_bashrc_sources_in_any_form_is_read_only(sandbox: Sandbox, form: str) -> None:
    name = form.replace(" ", "-")
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    (team / f"{name}.sh").write_text("export TEAM=1\n")
    (sandbox.home / ".bashrc").write_text(SOURCING[form].format(name=name) + "\n")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("append", f"team/{name}.sh",
                               f"echo {name} >> {marker(sandbox, name)}\n")],
                    cwd=sandbox.home / "work")
    _bash(sandbox)
    assert ran(sandbox) == [], results


# -- a repository below the top that the launch walk is kept from finding --------------------

def _decoys(how: str) -> str:
    """What a first run leaves in ~/src so that the next run's walk misses ~/src/zz/app."""
    if how == "venv mark":  # a folder above the repository looks like a venv: not walked
        return "echo 'home = /usr/bin' > zz/pyvenv.cfg"
    if how == "walk bound":  # 300 folders that sort first: the walk stops at 256
        return "for i in $(seq 100 400); do mkdir a$i; done"
    if how == "unlistable":  # a folder the person owns, made searchable but not listable
        return "chmod 311 zz"
    return "true"


@pytest.mark.parametrize("how", [
    "nothing",
    pytest.param("venv mark", marks=escaped(
        "below_top.walk takes any folder holding pyvenv.cfg for a virtual environment and "
        "does not walk into it: a pyvenv.cfg left above the person's repository by one run "
        "hides it from the next, and describe says nothing")),
    pytest.param("walk bound", marks=escaped(
        "below_top.walk stops at MAX_FOLDERS=256: 300 folders left by one run hide the "
        "person's repository from the next; only describe names the unwalked folders, "
        "and a run of a spec allowed before never shows them")),
    "unlistable",
])
def test_a_repository_below_the_top_stays_held_whatever_a_run_left(
        sandbox: Sandbox, how: str, request: pytest.FixtureRequest) -> None:
    """`cd ~/src && lnk sandbox run ...` twice: the first run prepares, the second plants
    a hook in the person's ~/src/zz/app/.git; the person's next checkout there runs it."""
    if how == "unlistable" and not sandbox.who.is_root:
        request.applymarker(escaped(
            "below_top._listing: a folder the walk cannot list (chmod 311 by an earlier "
            "run, which the sandbox's user owns) is skipped silently, neither walked nor "
            "named unwalked, while git still reaches the repository inside it"))
    src = sandbox.home / "src"
    app = repository(sandbox, src / "zz" / "app")
    markers(sandbox)
    sandbox.chown()
    inside(sandbox, _decoys(how), cwd=src)
    hook = payload(sandbox, "below-top-hook").replace("\n", "\\n")
    second = inside(sandbox, f"printf '{hook}' > zz/app/.git/hooks/post-checkout && "
                    "chmod +x zz/app/.git/hooks/post-checkout; echo PLANT=$?; "
                    "chmod 755 zz 2>/dev/null; true", cwd=src)
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], second.stdout + second.stderr


def test_folders_above_a_repository_below_the_top_cannot_be_renamed(sandbox: Sandbox) -> None:
    """Held: the checkout's folders above it, and its .git, are mount points; a plant
    in its hooks is refused; the person's checkout there runs nothing."""
    src = sandbox.home / "src"
    app = repository(sandbox, src / "x" / "app")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [
        ("rename", "x", "y"), ("rename", "x/app", "x/app2"),
        ("rename", "x/app/.git", "x/app/git"),
        ("make", "x/app/.git/hooks/post-checkout", payload(sandbox, "renamed")),
        ("write", "x/notes.txt", "the folder stays writable\n"),
    ], cwd=src)
    assert results == {"rename x y": "EBUSY", "rename x/app x/app2": "EBUSY",
                       "rename x/app/.git x/app/git": "EBUSY",
                       "make x/app/.git/hooks/post-checkout": "EROFS",
                       "write x/notes.txt": "OK"}
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == []


def test_a_venvs_activation_cannot_be_moved_aside(sandbox: Sandbox) -> None:
    """Held: a project's .venv (there at launch) keeps its activation scripts read-only,
    and neither it nor its bin/ can be renamed to put a new activate in its place."""
    venv = sandbox.project / ".venv"
    made = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True)
    need(made.returncode == 0, made.stderr)
    markers(sandbox)
    sandbox.chown()
    line = f"echo activated >> {marker(sandbox, 'activate')}\n"
    results = plant(sandbox, [
        ("append", ".venv/bin/activate", line), ("rename", ".venv", "venv2"),
        ("rename", ".venv/bin", ".venv/bin2"), ("unlink", ".venv/bin/activate"),
        ("write", ".venv/lib/installed.txt", "installing stays possible\n"),
    ])
    assert results == {"append .venv/bin/activate": "EROFS", "rename .venv venv2": "EBUSY",
                       "rename .venv/bin .venv/bin2": "EBUSY",
                       "unlink .venv/bin/activate": "EBUSY",
                       "write .venv/lib/installed.txt": "OK"}
    done = host(sandbox, "bash", "-c", ". .venv/bin/activate && echo ACTIVE",
                cwd=sandbox.project)
    need("ACTIVE" in done.stdout, done.stderr)
    assert ran(sandbox) == []


# -- what python reads from the folder it starts in ------------------------------------------

@pytest.mark.parametrize("tool", [
    pytest.param("repl", marks=escaped(
        "python's interactive start imports readline (site.register_readline) with the "
        "working directory first on sys.path: a readline.py the sandbox writes at the top "
        "runs when the person types `python3` there; nothing holds it")),
    pytest.param("pdb", marks=escaped(
        "pdb reads ./.pdbrc from the working directory and runs its lines: a dot file at "
        "the top no table (runs_as_you.AGENT_SETTINGS, 'Files loaded from the top') "
        "holds")),
])
def test_python_started_in_a_written_folder_runs_nothing_planted(sandbox: Sandbox,
                                                                 tool: str) -> None:
    script = sandbox.base / "tool.py"  # the person's own script, outside the project
    script.write_text("print('the person\\'s tool')\n")
    markers(sandbox)
    sandbox.chown()
    code = f"open({marker(sandbox, tool)!r}, 'a').write('ran\\n')\n"
    name = "readline.py" if tool == "repl" else ".pdbrc"
    body = code if tool == "repl" else f"import os; {code}"
    results = plant(sandbox, [("write", name, body)])
    need(results == {f"write {name}": "OK"}, results)
    if tool == "repl":
        done = host(sandbox, "python3", "-i", cwd=sandbox.project, stdin=subprocess.DEVNULL)
    else:
        done = host(sandbox, "python3", "-m", "pdb", "-c", "continue", "-c", "quit",
                    str(script), cwd=sandbox.project)
    need(done.returncode == 0, f"the person's python failed: {done.stderr}")
    assert ran(sandbox) == []


# -- what the person's other tools' own settings name ----------------------------------------

_OTHER_TOOLS = ("person_settings follows the shells' and git's settings only: {what} names "
                "a file in a write grant, which stays writable, and the person's {tool} runs "
                "what the sandbox wrote there")


@pytest.mark.parametrize("tool", [
    "git",
    pytest.param("nvim", marks=escaped(_OTHER_TOOLS.format(
        what="~/.config/nvim/init.vim's `source` of a team's file", tool="nvim"))),
    pytest.param("ssh", marks=escaped(_OTHER_TOOLS.format(
        what="~/.ssh/config's `Include` (its ProxyCommand)", tool="ssh"))),
])
def test_what_the_persons_tools_settings_include_is_read_only(sandbox: Sandbox,
                                                              tool: str) -> None:
    """The person's own settings naming a team's shared file in ~/work: git's
    include.path (held: the control that the rule exists), nvim's `source`, ssh's
    `Include`. The sandbox writes ~/work; the person starts the tool."""
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / {"git": "team.gitconfig", "nvim": "team.vim", "ssh": "ssh.conf"}[tool]
    shared.write_text('" the settings of the team\n' if tool == "nvim" else
                      "# the settings of the team\n")
    monitor = sandbox.base / "monitor.sh"  # a program of the attacker's, outside the grant
    monitor.write_text(payload(sandbox, "git"))
    monitor.chmod(0o755)
    if tool == "git":
        (sandbox.home / ".gitconfig").write_text(f"[include]\n\tpath = {shared}\n")
        text = f"[core]\n\tfsmonitor = {monitor}\n"
    elif tool == "nvim":
        (sandbox.home / ".config" / "nvim").mkdir(parents=True)
        (sandbox.home / ".config" / "nvim" / "init.vim").write_text(f"source {shared}\n")
        text = f"call writefile(['ran'], '{marker(sandbox, 'nvim')}')\n"
    else:
        (sandbox.home / ".ssh").mkdir(mode=0o700)
        (sandbox.home / ".ssh" / "config").write_text(f"Include {shared}\n")
        (sandbox.home / ".ssh" / "config").chmod(0o600)
        text = f"Host *\n  ProxyCommand sh -c 'echo ssh >> {marker(sandbox, 'ssh')}'\n"
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("append", f"team/{shared.name}", text)],
                    cwd=sandbox.home / "work")
    if tool == "git":
        git_elsewhere(sandbox)
    elif tool == "nvim":
        done = host(sandbox, "nvim", "--headless", "+qa")
        need(done.returncode == 0, done.stderr)
    else:  # ssh reads the passwd entry's home: the config is named as the person's is
        host(sandbox, "ssh", "-F", str(sandbox.home / ".ssh" / "config"), "-o",
             "BatchMode=yes", "-o", "ConnectTimeout=5", "team-host", "true")
    assert ran(sandbox) == [], results
