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
    # the class: forms no test above names, each with a random name
    "variable": 'export T{name}="$HOME/work/team"\n[ -s "$T{name}/{name}.sh" ] && '
                '. "$T{name}/{name}.sh"',
    "loop": 'for f in ~/work/team/*.sh; do [ -r "$f" ] && source "$f"; done',
    "default": '. "${{XDG_{name}:-$HOME/work}}"/team/{name}.sh',
    "function": "{name}() {{ time -p builtin . ~/work/team/{name}.sh >/dev/null; }}\n"
                "{name}",
    "beside": '. ~/work/team/init.sh',  # init.sh sources what lies beside it
    "unknown": '. ~/work/team/"$(echo {name})".sh',
}


@pytest.mark.parametrize("form", SOURCING)
def test_what_bashrc_sources_in_any_form_is_read_only(sandbox: Sandbox, form: str) -> None:
    """Whatever form the person's ~/.bashrc sources a file of ~/work in, a run writing
    ~/work cannot change what their next bash runs; where the name is not all literal
    (a command substitution), the folder it may lead into is read-only whole."""
    name = "f" + secrets.token_hex(4)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    (team / f"{name}.sh").write_text("export TEAM=1\n")
    (team / "init.sh").write_text(f'. "$(dirname "${{BASH_SOURCE[0]}}")/{name}.sh"\n')
    (sandbox.home / ".bashrc").write_text(SOURCING[form].format(name=name) + "\n")
    markers(sandbox)
    sandbox.chown()
    results = plant(sandbox, [("append", f"team/{name}.sh",
                               f"echo {form} >> {marker(sandbox, name)}\n"),
                              ("write", "notes.txt", "the rest stays writable\n")],
                    cwd=sandbox.home / "work")
    need(results["write notes.txt"] == "OK", results)
    _bash(sandbox)
    assert ran(sandbox) == [], results
    # the control: the same append made on the host runs in the person's bash
    with open(team / f"{name}.sh", "a") as planted:
        planted.write(f"echo {form} >> {marker(sandbox, name)}\n")
    _bash(sandbox)
    assert ran(sandbox) == [name]


# -- a repository below the top that the launch walk is kept from finding --------------------

def _decoys(how: str) -> str:
    """What a first run leaves in ~/src so that the next run's walk misses ~/src/zz/app."""
    if how == "venv mark":  # a folder above the repository looks like a venv: not walked
        return "echo 'home = /usr/bin' > zz/pyvenv.cfg"
    if how == "walk bound":  # 300 folders that sort first: the walk stops at 256
        return "for i in $(seq 100 400); do mkdir a$i; done"
    if how == "unlistable":  # a folder the person owns, made searchable but not listable
        return "chmod 311 zz"
    if how == "all at once":  # the three, with random names
        name = secrets.token_hex(3)
        return (f"echo 'home = /usr/bin' > zz/pyvenv.cfg; mkdir zz/lib; "
                f"for i in $(seq 100 420); do mkdir a{name}$i; done; chmod 311 zz")
    return "true"


@pytest.mark.parametrize("how", ["nothing", "venv mark", "walk bound", "unlistable",
                                 "all at once"])
def test_a_repository_below_the_top_stays_held_whatever_a_run_left(
        sandbox: Sandbox, how: str) -> None:
    """`cd ~/src && lnk sandbox run ...` twice: the first run prepares, the second plants
    a hook in the person's ~/src/zz/app/.git; the person's next checkout there runs it."""
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

PYTHON_PLANTS = {  # what is planted at the top, and whether the person had one there
    "repl": ("readline.py", False),
    "repl rlcompleter": ("rlcompleter.py", False),
    "repl there before": ("readline.py", True),
    "repl package there before": ("rlcompleter/__init__.py", True),
    "pdb": (".pdbrc", False),
    "pdb there before": (".pdbrc", True),
}


_NOT_HELD = ("a stated gap (docs/runs-as-you.md): a missing readline.py or rlcompleter.py "
             "is not held, a name without a dot in the person's listing (issue 27), as "
             "the dozens of other modules Python's interactive start imports from the "
             "folder are not; PYTHONSAFEPATH closes the class")


@pytest.mark.parametrize("tool", [
    pytest.param(tool, marks=escaped(_NOT_HELD)) if tool in ("repl", "repl rlcompleter")
    else tool for tool in PYTHON_PLANTS])
def test_python_started_in_a_written_folder_runs_nothing_planted(sandbox: Sandbox,
                                                                 tool: str) -> None:
    """`python3` typed in the folder imports readline and rlcompleter (site's
    interactive hook) with the folder first on sys.path; `python3 -m pdb` runs
    ./.pdbrc. What a run plants under those names runs nothing; the control plants
    the same outside a sandbox and sees it run."""
    script = sandbox.base / "tool.py"  # the person's own script, outside the project
    script.write_text("print('the person\\'s tool')\n")
    name, before = PYTHON_PLANTS[tool]
    if before:
        (sandbox.project / name).parent.mkdir(exist_ok=True)
        (sandbox.project / name).write_text("\n" if name == ".pdbrc" else "import os\n")
    markers(sandbox)
    sandbox.chown()
    code = f"open({marker(sandbox, tool.replace(' ', '-'))!r}, 'a').write('ran\\n')\n"
    body = code if name.endswith(".py") else f"import os; {code}"
    results = plant(sandbox, [("write", name, body)])

    def person() -> None:
        if tool.startswith("repl"):
            done = host(sandbox, "python3", "-i", cwd=sandbox.project,
                        stdin=subprocess.DEVNULL)
        else:
            done = host(sandbox, "python3", "-m", "pdb", "-c", "continue", "-c", "quit",
                        str(script), cwd=sandbox.project)
        need(done.returncode == 0, f"the person's python failed: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    (sandbox.project / name).unlink(missing_ok=True)  # the control: made outside
    (sandbox.project / name).write_text(body)
    person()
    assert ran(sandbox) == [tool.replace(" ", "-")]


# -- what the person's other tools' own settings name ----------------------------------------

# (settings file, its text naming the team's file, the team's file, what is appended)
OTHER_TOOLS = {
    "git": (".gitconfig", "[include]\n\tpath = {shared}\n", "team.gitconfig",
            "[core]\n\tfsmonitor = {monitor}\n"),
    "nvim source": (".config/nvim/init.vim", "source {shared}\n", "{name}.vim",
                    "call writefile(['ran'], '{marker}')\n"),
    "nvim so home": (".config/nvim/init.vim", "so $HOME/work/team/{name}.vim\n",
                     "{name}.vim", "call writefile(['ran'], '{marker}')\n"),
    "nvim dofile": (".config/nvim/init.lua",
                    'dofile(vim.fn.expand("~/work/team/{name}.lua"))\n', "{name}.lua",
                    "vim.fn.writefile({{'ran'}}, '{marker}')\n"),
    "ssh": (".ssh/config", "Include {shared}\n", "ssh.conf",
            "Host *\n  ProxyCommand sh -c 'echo ssh >> {marker}'\n"),
    "ssh glob": (".ssh/config", "Include ~/work/team/*.conf\n", "{name}.conf",
                 "Host *\n  ProxyCommand sh -c 'echo ssh >> {marker}'\n"),
    "ssh match exec": (".ssh/config", 'Match exec "~/work/team/{name}.sh"\n  Port 22\n',
                       "{name}.sh", "echo ssh >> {marker}\n"),
}


@pytest.mark.parametrize("tool", OTHER_TOOLS)
def test_what_the_persons_tools_settings_include_is_read_only(sandbox: Sandbox,
                                                              tool: str) -> None:
    """The person's own settings naming a team's shared file in ~/work: git's
    include.path, nvim's `source`/`so`/lua `dofile`, ssh's `Include` (a file, a glob)
    and `Match exec`. The sandbox writes ~/work; the person starts the tool, which runs
    nothing planted; the control appends the same on the host and sees it run."""
    name = "t" + secrets.token_hex(3)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    settings, naming, shared_name, text = OTHER_TOOLS[tool]
    shared = team / shared_name.format(name=name)
    shared.write_text('" the settings of the team\n' if ".vim" in shared.name else
                      "-- the team\n" if ".lua" in shared.name else
                      "#!/bin/sh\n" if shared.suffix == ".sh" else
                      "# the settings of the team\n")
    shared.chmod(0o755)
    monitor = sandbox.base / "monitor.sh"  # a program of the attacker's, outside the grant
    monitor.write_text(payload(sandbox, "git"))
    monitor.chmod(0o755)
    where = sandbox.home / settings
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(naming.format(shared=shared, name=name))
    if tool.startswith("ssh"):
        where.parent.chmod(0o700)
        where.chmod(0o600)
    markers(sandbox)
    sandbox.chown()
    label = "git" if tool == "git" else tool.split(maxsplit=1)[0]
    appended = text.format(monitor=monitor, marker=marker(sandbox, label))
    results = plant(sandbox, [("append", f"team/{shared.name}", appended)],
                    cwd=sandbox.home / "work")

    def person(again: bool = False) -> None:
        if tool == "git":
            if again:  # its status runs the fsmonitor
                person_git(sandbox, sandbox.base / "elsewhere", "status")
            else:
                git_elsewhere(sandbox)
        elif tool.startswith("nvim"):
            done = host(sandbox, "nvim", "--headless", "+qa")
            need(done.returncode == 0, done.stderr)
        else:  # ssh reads the passwd entry's home: the config is named as the person's is
            host(sandbox, "ssh", "-F", str(sandbox.home / ".ssh" / "config"), "-o",
                 "BatchMode=yes", "-o", "ConnectTimeout=5", "team-host", "true")

    person()
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:  # the control: the same, written outside
        planted.write(appended)
    person(again=True)
    assert ran(sandbox) == [label]
