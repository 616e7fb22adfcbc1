"""Red team 2 (issue 26, item 8 and its class): what the person's other tools run, named
by their settings or their environment in forms supervisor/tool_settings.py and
person_settings.value_paths were not shown, and files tools read from the folder they
start in. Each attack plants from inside a real sandbox (root mode and the
unprivileged user), then runs the person's real tool outside (git, nvim, less, gdb,
perl); a control makes the same change on the host and sees it run.

Escapes are left failing under `escaped` (support/red_team.py).
"""

from __future__ import annotations

import secrets

import pytest

from support.red_team import (
    escaped,
    git_env,
    host,
    marker,
    markers,
    need,
    plant,
    ran,
    repository,
)
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# (the person's settings file or None, its text, the team's file, its first text, what
# is appended, the variables of the person's environment (lnk's at launch too), the tool)
CASES: dict[str, tuple[str | None, str, str, str, str, dict[str, str], str]] = {
    "git fsmonitor control": (
        ".gitconfig", "[core]\n\tfsmonitor = ~/work/team/{name}.sh\n", "{name}.sh",
        "#!/bin/sh\n", "echo git >> {marker}\n", {}, "git"),
    "git fsmonitor $HOME": (
        ".gitconfig", "[core]\n\tfsmonitor = $HOME/work/team/{name}.sh\n", "{name}.sh",
        "#!/bin/sh\n", "echo git >> {marker}\n", {}, "git"),
    "nvim lua getenv": (
        ".config/nvim/init.lua", 'dofile(os.getenv("HOME") .. "/work/team/{name}.lua")\n',
        "{name}.lua", "-- the team\n", "vim.fn.writefile({{'ran'}}, '{marker}')\n", {},
        "nvim"),
    "nvim execute": (
        ".config/nvim/init.vim", "execute 'source ' . $HOME . '/work/team/{name}.vim'\n",
        "{name}.vim", '" the team\n', "call writefile(['ran'], '{marker}')\n", {}, "nvim"),
    "nvim source escaped space": (
        ".config/nvim/init.vim", "source ~/work/my\\ team/{name}.vim\n",
        "{name}.vim", '" the team\n', "call writefile(['ran'], '{marker}')\n", {}, "nvim"),
    "ssh include quoted space": (
        ".ssh/config", 'Include "~/work/my team/{name}.conf"\n', "{name}.conf",
        "# the team\n", "Host *\n  ProxyCommand sh -c 'echo ssh >> {marker}'\n", {}, "ssh"),
    "hgrc hook": (
        ".hgrc", "[hooks]\npre-status = ~/work/team/{name}.sh\n", "{name}.sh",
        "#!/bin/sh\n", "echo hg >> {marker}\n", {}, "hg"),
    "hgrc include": (
        ".hgrc", "%include ~/work/team/{name}.rc\n", "{name}.rc", "# the team\n",
        "[hooks]\npre-status = echo hg >> {marker}\n", {}, "hg"),
    "lesskey LESSOPEN": (
        ".lesskey", "#env\nLESSOPEN=|~/work/team/{name}.sh %s\n", "{name}.sh",
        "#!/bin/sh\n", "echo less >> {marker}\n", {}, "less"),
    # The class, in forms the red team did not write: a hook of the person's naming, an
    # include relative to ~/.hgrc's folder, two blanks and a tab, gdb's rest-of-line
    # name, Neovim's own variable for home.
    "hgrc hook of any name": (
        ".hgrc", "[hooks]\npre-status.zq = ~/work/team/{name}.sh\n", "{name}.sh",
        "#!/bin/sh\n", "echo hg >> {marker}\n", {}, "hg"),
    "hgrc relative include": (
        ".hgrc", "%include work/team/{name}.rc\n", "{name}.rc", "# the team\n",
        "[hooks]\npre-status = echo hg >> {marker}\n", {}, "hg"),
    "ssh include two spaces tab": (
        ".ssh/config", 'Include\t"~/work/my  team/{name}.conf"\n', "{name}.conf",
        "# the team\n", "Host *\n  ProxyCommand sh -c 'echo ssh >> {marker}'\n", {}, "ssh"),
    "gdb source two spaces": (
        ".gdbinit", "source ~/work/my  team/{name}.gdb\n", "{name}.gdb", "# the team\n",
        "shell echo gdb >> {marker}\n", {}, "gdb"),
    "nvim lua vim.env": (
        ".config/nvim/init.lua", 'dofile(vim.env.HOME .. "/work/team/{name}.lua")\n',
        "{name}.lua", "-- the team\n", "vim.fn.writefile({{'ran'}}, '{marker}')\n", {},
        "nvim"),
    "LESSOPEN variable": (
        None, "", "{name}.sh", "#!/bin/sh\n", "echo less >> {marker}\n",
        {"LESSOPEN": "|{home}/work/team/{name}.sh %s"}, "less"),
    "GIT_CONFIG_GLOBAL variable": (
        None, "", "{name}.gitconfig", "[user]\n\tname = Person\n",
        "[core]\n\tfsmonitor = \"sh -c 'echo git >> {marker}'\"\n",
        {"GIT_CONFIG_GLOBAL": "{home}/work/team/{name}.gitconfig"}, "git"),
    "VIMINIT variable": (
        None, "", "{name}.vim", '" the team\n', "call writefile(['ran'], '{marker}')\n",
        {"VIMINIT": "source {home}/work/team/{name}.vim"}, "nvim"),
    "EDITOR variable": (
        None, "", "{name}.sh", "#!/bin/sh\necho message > \"$1\"\n",
        "echo editor >> {marker}\n", {"EDITOR": "{home}/work/team/{name}.sh"}, "git commit"),
}
REASONS: dict[str, str] = {}  # every case holds (issue 26)


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=escaped(REASONS[case])) if case in REASONS else case
    for case in CASES])
def test_what_the_persons_tools_run_from_a_grant_is_read_only(sandbox: Sandbox,
                                                              case: str) -> None:
    """The person's settings or environment name ~/work/team/NAME; a run writing
    ~/work appends to it; the person's tool, started outside, runs nothing planted."""
    name = "t" + secrets.token_hex(3)
    settings, naming, shared_name, first, text, variables, tool = CASES[case]
    team = sandbox.home / "work" / ("my  team" if "two spaces" in case else
                                    "my team" if "space" in case else "team")
    team.mkdir(parents=True)
    shared = team / shared_name.format(name=name)
    shared.write_text(first)
    shared.chmod(0o755)
    if settings is not None:
        where = sandbox.home / settings
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(naming.format(name=name))
        if tool == "ssh":
            where.parent.chmod(0o700)
            where.chmod(0o600)
    env = {k: v.format(home=sandbox.home, name=name) for k, v in variables.items()}
    (sandbox.home / "notes.txt").write_text("the person's notes\n")
    if tool.startswith("git"):
        repository(sandbox, sandbox.base / "elsewhere")
    if tool == "hg":
        made = host(sandbox, "hg", "init", str(sandbox.base / "elsewhere-hg"))
        need(made.returncode == 0, made.stderr)
    markers(sandbox)
    sandbox.chown()
    appended = text.format(marker=marker(sandbox, name))
    done = sandbox.run("/usr/bin/python3", "-c", (
        "import os, sys; print('STARTED', flush=True)\n"
        "try:\n fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        " os.write(fd, sys.argv[2].encode()); print('APPENDED')\n"
        "except OSError as err: print('REFUSED', err)\n"), str(shared), appended,
        cwd=sandbox.home / "work", env=env)
    need(done.stdout.startswith("STARTED\n"), f"never started inside: {done.stderr}")

    def person() -> None:
        if tool == "git":
            status = host(sandbox, "git", "status", cwd=sandbox.base / "elsewhere",
                          env={**git_env(sandbox), **env})
            need(status.returncode == 0, status.stderr)
        elif tool == "git commit":
            host(sandbox, "git", "commit", "-q", "--allow-empty", cwd=sandbox.base /
                 "elsewhere", env={**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "P",
                                   "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "P",
                                   "GIT_COMMITTER_EMAIL": "p@x"})
        elif tool == "nvim":
            started = host(sandbox, "nvim", "--headless", "+qa", env=env)
            need(started.returncode == 0, started.stderr)
        elif tool == "hg":
            status = host(sandbox, "hg", "status", cwd=sandbox.base / "elsewhere-hg")
            need(status.returncode == 0, status.stderr)
        elif tool == "gdb":
            started = host(sandbox, "gdb", "-batch", env=env)
            need(started.returncode == 0, started.stderr)
        elif tool == "ssh":  # ssh reads the passwd entry's home: the file is named
            host(sandbox, "ssh", "-F", str(sandbox.home / ".ssh" / "config"), "-o",
                 "BatchMode=yes", "-o", "ConnectTimeout=5", "team-host", "true")
        else:
            shown = host(sandbox, "less", "notes.txt", env=env)
            need(shown.returncode == 0, shown.stderr)

    person()
    assert ran(sandbox) == [], done.stdout + done.stderr
    with open(shared, "a") as planted:  # the control: the same, appended on the host
        planted.write(appended)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# -- a file a tool reads from the folder it starts in ----------------------------------------

# (what the person's own settings say, if anything; the file planted at the top; its
# text; the person's tool)
CWD_FILES: dict[str, tuple[tuple[str, str] | None, str, str, tuple[str, ...]]] = {
    "perl debugger": (None, ".perldb", "system(q{{echo perl >> {marker}}});\n",
                      ("perl", "-d", "-e", "1")),
    "gdb safe path": ((".gdbinit", "add-auto-load-safe-path {grant}\n"), ".gdbinit",
                      "shell echo gdb >> {marker}\n", ("gdb", "-batch")),
    "nvim exrc": ((".config/nvim/init.vim", "set exrc\n"), ".nvimrc",
                  "call writefile(['ran'], '{marker}')\n", ("nvim", "--headless", "+qa")),
    # The same class, names the red team did not try: nvim's other exrc name, and vim's
    # (`TERM=dumb vim -X`: a real start, not -es, which skips exrc).
    "nvim dot-exrc": ((".config/nvim/init.vim", "set exrc\n"), ".exrc",
                      "call writefile(['ran'], '{marker}')\n",
                      ("nvim", "--headless", "+qa")),
    "vim exrc": ((".vimrc", "set exrc\n"), ".vimrc",
                 "call writefile(['ran'], '{marker}')\n", ("vim", "-X", "-c", "qa")),
}
CWD_REASONS: dict[str, str] = {}


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=escaped(CWD_REASONS[case])) if case in CWD_REASONS else case
    for case in CWD_FILES])
def test_a_file_the_persons_tool_reads_from_the_folder_runs_nothing(sandbox: Sandbox,
                                                                    case: str) -> None:
    settings, name, text, tool = CWD_FILES[case]
    grant = sandbox.project
    if settings is not None:
        where = sandbox.home / settings[0]
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(settings[1].format(grant=grant))
    markers(sandbox)
    sandbox.chown()
    label = case.split(maxsplit=1)[0]
    body = text.format(marker=marker(sandbox, label))
    results = plant(sandbox, [("write", name, body)])
    env = {"PERLDB_OPTS": "NonStop=1"}

    def person() -> None:
        done = host(sandbox, *tool, cwd=grant, env=env)
        need(done.returncode == 0, f"the person's {tool[0]} failed: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    path = grant / name  # the control: the same file, written on the host
    if path.is_dir():
        path.rmdir()
    path.write_text(body)
    sandbox.chown(path)
    person()
    need(ran(sandbox) == [label], f"the control did not run: {ran(sandbox)}")


def test_an_ssh_include_past_the_folder_bound(sandbox: Sandbox) -> None:
    name = "t" + secrets.token_hex(3)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / f"{name}.conf"
    shared.write_text("# the team\n")
    ssh = sandbox.home / ".ssh"
    (ssh / "config.d").mkdir(parents=True)
    for index in range(64):
        (ssh / "config.d" / f"a{index:02d}.conf").write_text(f"Host h{index}\n  Port 22\n")
    (ssh / "config.d" / "zz.conf").write_text(f"Include ~/work/team/{name}.conf\n")
    (ssh / "config").write_text("Include ~/.ssh/config.d/*\n")
    ssh.chmod(0o700)
    markers(sandbox)
    sandbox.chown()
    line = f"Host *\n  ProxyCommand sh -c 'echo ssh >> {marker(sandbox, name)}'\n"
    done = sandbox.run("/usr/bin/python3", "-c", (
        "import os, sys; print('STARTED', flush=True)\n"
        "try:\n fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        " os.write(fd, sys.argv[2].encode()); print('APPENDED')\n"
        "except OSError as err: print('REFUSED', err)\n"), str(shared), line,
        cwd=sandbox.home / "work")
    need(done.stdout.startswith("STARTED\n"), f"never started inside: {done.stderr}")
    host(sandbox, "ssh", "-F", str(ssh / "config"), "-o", "BatchMode=yes", "-o",
         "ConnectTimeout=5", "team-host", "true")
    assert ran(sandbox) == [], done.stdout


def test_a_folder_past_the_reading_bound_refuses_the_launch(sandbox: Sandbox) -> None:
    """Past MAX_FOLDER_FILES files in a folder ~/.ssh/config's pattern names, lnk
    refuses to start (125), naming the folder and the bound, and runs nothing: the
    rest is never left unread."""
    from supervisor.tool_settings import MAX_FOLDER_FILES

    ssh = sandbox.home / ".ssh"
    (ssh / "config.d").mkdir(parents=True)
    for index in range(MAX_FOLDER_FILES + 1):
        (ssh / "config.d" / f"a{index:04d}.conf").write_text("Host h\n")
    (ssh / "config").write_text("Include ~/.ssh/config.d/*\n")
    (sandbox.home / "work").mkdir()
    sandbox.chown()
    done = sandbox.run("/usr/bin/python3", "-c", "print('STARTED')",
                       cwd=sandbox.home / "work")
    assert done.returncode == 125 and "STARTED" not in done.stdout, done
    assert f"{ssh}/config.d" in done.stderr and "MAX_FOLDER_FILES" in done.stderr
    assert "hint:" in done.stderr and "Traceback" not in done.stderr, done.stderr
