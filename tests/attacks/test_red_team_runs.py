"""Red team, issue 26 item 2: what runs as the person, attacked with what its own tests do
not use. Each attack plants from inside a real sandbox (root mode and the unprivileged
user) and then runs the person's real tool outside (git in an unrelated repository or in
the repository attacked, bash reading its startup files, python started in the folder).

Escapes are left failing under `escaped` (support/red_team.py); the report names the
function at fault. What held stays as a regression test.
"""

from __future__ import annotations

import os
import secrets
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
    plant_or_refused,
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
    "~/.config/git/hooks",
    pytest.param(f"~/.{secrets.token_hex(3)}/{secrets.token_hex(3)}/{secrets.token_hex(3)}"
                 "/hooks", id="deep, random names"),
    # no dot: no walk of home's dot entries reaches it
    pytest.param(f"~/{secrets.token_hex(3)}/hooks", id="no dot, random name"),
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


@pytest.mark.parametrize("depth", [1, 4])
def test_a_sourced_file_linked_deep_into_a_grant(sandbox: Sandbox, depth: int) -> None:
    """The class of the hook above for the shell: ~/.bashrc sources a file reached
    through links `depth` folders into home (a chain of two links, random names); the
    sandbox writing ~/dotfiles, where they lead, cannot change it."""
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "aliases.sh").write_text("alias ll='ls -l'\n")
    folder = sandbox.home.joinpath(*(f".{secrets.token_hex(3)}" for _ in range(depth)))
    folder.mkdir(parents=True)
    (folder / "step").symlink_to(os.path.relpath(dotfiles, folder))
    (folder / "aliases.sh").symlink_to("step/aliases.sh")
    (sandbox.home / ".bashrc").write_text(f". ~/{folder.relative_to(sandbox.home)}/aliases.sh\n")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("append", "aliases.sh",
                               f"echo deep >> {marker(sandbox, 'deep')}\n")], cwd=dotfiles)
    _bash(sandbox)
    assert ran(sandbox) == [], results
    assert results == {"append aliases.sh": "EROFS"}


@pytest.mark.parametrize("depth", [1, 4])
def test_a_link_on_the_way_inside_the_grant_refuses_it(sandbox: Sandbox, depth: int) -> None:
    """The chain's second link lies in the grant (~/.X/.../aliases.sh -> ~/dotfiles/step
    -> ~/dotfiles/aliases.sh): holding where it leads is not enough, the sandbox would
    point `step` at a file of its own; the launch is refused, naming the link."""
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "aliases.sh").write_text("alias ll='ls -l'\n")
    (dotfiles / "step").symlink_to("aliases.sh")
    folder = sandbox.home.joinpath(*(f".{secrets.token_hex(3)}" for _ in range(depth)))
    folder.mkdir(parents=True)
    (folder / "aliases.sh").symlink_to(os.path.relpath(dotfiles / "step", folder))
    (sandbox.home / ".bashrc").write_text(f". ~/{folder.relative_to(sandbox.home)}/aliases.sh\n")
    markers(sandbox)
    sandbox.chown()
    results = plant_or_refused(sandbox, [
        ("write", "mine.sh", f"echo repointed >> {marker(sandbox, 'repointed')}\n"),
        ("unlink", "step"), ("symlink", "mine.sh", "step")],
        cwd=dotfiles, refusal=f"which holds {dotfiles}/step, a link on the way")
    _bash(sandbox)
    assert ran(sandbox) == [], results
    assert "refused" in results, results


@pytest.mark.parametrize("link", ["symbolic", "hard", "hard, a file it sources"])
def test_a_startup_file_linked_into_a_grant(sandbox: Sandbox, link: str) -> None:
    """~/.bashrc (or a file it sources) one file with ~/dotfiles/bashrc: a symbolic link
    is followed and its target held; a hard link, which nothing can follow, refuses
    the launch, naming the file (its other name may lie in the grant)."""
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_text("PS1='$ '\n")
    if link == "hard":
        os.link(dotfiles / "bashrc", sandbox.home / ".bashrc")
    elif link == "symbolic":
        (sandbox.home / ".bashrc").symlink_to("dotfiles/bashrc")
    else:
        (sandbox.home / ".bashrc").write_text(". ~/.shell/prompt.sh\n")
        (sandbox.home / ".shell").mkdir()
        os.link(dotfiles / "bashrc", sandbox.home / ".shell" / "prompt.sh")
    markers(sandbox)
    sandbox.chown()
    results = plant_or_refused(sandbox, [("append", "bashrc",
                                          f"echo bashrc >> {marker(sandbox, 'bashrc')}\n")],
                               cwd=dotfiles, refusal="names (hard links)")
    _bash(sandbox)
    assert ran(sandbox) == [], results
    assert ("refused" in results) is link.startswith("hard"), results


# -- a grant that is itself what the person's settings name ----------------------------------

@pytest.mark.parametrize("grant", ["holding it", "itself", "inside it"])
def test_the_persons_hooks_folder_as_the_written_folder(sandbox: Sandbox, grant: str) -> None:
    """core.hooksPath names a folder of the person's: written from a folder holding it,
    the hooks stay read-only; written from that folder or one inside it, the launch is
    refused, naming the setting (the grant would be the hooks, whole)."""
    githooks = sandbox.home / "githooks"
    hooks = githooks if grant != "holding it" else githooks / "hooks"
    hooks.mkdir(parents=True)
    cwd = hooks / "sub" if grant == "inside it" else githooks
    cwd.mkdir(exist_ok=True)
    (sandbox.home / ".gitconfig").write_text(f"[core]\n\thooksPath = {hooks}\n")
    markers(sandbox)
    sandbox.chown()
    name = os.path.relpath(hooks / "post-checkout", cwd)
    results = plant_or_refused(sandbox, [("make", name, payload(sandbox, "hooks-folder"))],
                               cwd=cwd, refusal="core.hookspath")
    git_elsewhere(sandbox)
    assert ran(sandbox) == [], results
    assert ("refused" in results) is (grant != "holding it"), results


@pytest.mark.parametrize("setting", ["the repository's", "the person's relative",
                                     "none: .git/hooks"])
def test_a_repositorys_hooks_folder_as_the_written_folder(sandbox: Sandbox,
                                                          setting: str) -> None:
    """The same class around the grant: `cd ~/app/tools/hooks && lnk sandbox run`
    where the repository ~/app runs its hooks from there (its own core.hooksPath, the
    person's relative one, or git's own .git/hooks): refused, naming the setting; the
    person's checkout in ~/app runs nothing."""
    app = repository(sandbox, sandbox.home / "app")
    hooks = app / (".git/hooks" if setting.startswith("none") else "tools/hooks")
    hooks.mkdir(parents=True, exist_ok=True)
    if setting == "the repository's":
        person_git(sandbox, app, "config", "core.hooksPath", "tools/hooks")
    elif setting == "the person's relative":
        (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = tools/hooks\n")
    markers(sandbox)
    sandbox.chown()
    results = plant_or_refused(sandbox, [("make", "post-checkout",
                                          payload(sandbox, "repository-hooks"))],
                               cwd=hooks, refusal=f"a hooks folder of the repository {app}")
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], results
    assert "refused" in results, results


@pytest.mark.parametrize("how", ["hard link", "symbolic link", "symbolic, via the project"])
def test_a_hook_that_is_a_file_of_the_project(sandbox: Sandbox, how: str) -> None:
    """A project's tracked hook installed as a link into .git/hooks (`ln`, or `ln -s
    ../../tools/post-checkout`): .git is held whole, but the sandbox writing the
    project writes what git runs through the other name. A hard link refuses the
    launch (no walk finds its other names), a symbolic one keeps where it leads
    read-only, and a link on the way in the project refuses the launch."""
    app = repository(sandbox, sandbox.home / "app")
    tools = app / "tools"
    tools.mkdir()
    (tools / "post-checkout").write_text("#!/bin/sh\nexit 0\n")
    (tools / "post-checkout").chmod(0o755)
    hook = app / ".git" / "hooks" / "post-checkout"
    if how == "hard link":
        os.link(tools / "post-checkout", hook)
    elif how == "symbolic link":
        hook.symlink_to("../../tools/post-checkout")
    else:
        (app / "current").symlink_to("tools")
        hook.symlink_to("../../current/post-checkout")
    markers(sandbox)
    sandbox.chown()
    results = plant_or_refused(sandbox, [("write", "tools/post-checkout",
                                          payload(sandbox, "project-hook"))], cwd=app,
                               refusal="hard link" if how == "hard link" else
                               f"{app}/current is a link")
    person_git(sandbox, app, "checkout", "-q", "-b", "side")
    assert ran(sandbox) == [], results
    assert results == ({"write tools/post-checkout": "EROFS"} if how == "symbolic link"
                       else {"refused": results.get("refused", "")}), results


@pytest.mark.parametrize("grant", ["~/shell", "~/shell/aliases.sh"])
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
    results = plant_or_refused(sandbox, [("append", str(shell / "aliases.sh"),
                                          f"echo sourced >> {marker(sandbox, 'sourced')}\n")],
                               spec=spec, cwd=work, refusal="sourced by ~/.bashrc")
    _bash(sandbox)
    assert ran(sandbox) == [], results
    assert ("refused" in results) is grant.endswith(".sh"), results


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
