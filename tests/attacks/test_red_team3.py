"""Red team 3 (issue 26): the three rules that judge what the person's own settings name,
attacked with instances their own tests do not use.

1. supervisor/environment_paths.py: every variable of the launch environment whose value
   names a path (hidden under a read grant of home, read-only inside a write grant);
2. supervisor/shell_words.py + person_settings.py: every word of the person's shell and
   readline startup files that names a path is held in a written folder, unbounded
   forms refuse the launch;
3. supervisor/tool_settings.py + person_settings.value_paths: paths in tools' settings
   files (git, ssh, nvim, gdb, pdb, perl) split as the tools split them.

Each attack first proves its program ran inside (support/red_team.py: `plant`, `need`),
then runs the person's real tool outside (git, bash at a terminal, nvim, gdb, ssh,
python, perl) and looks for the planted marker; a control makes the same change on the
host and sees the tool run it, so the test can catch what it judges. An attack that gets
out is a strict xfail under `escaped(...)`, its reason naming the module and why.

As root (root mode) and as the unprivileged user, through the `sandbox` fixture.
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

import pytest

from support.actions import SCRIPT
from support.capabilities import missing
from support.processes import at_terminal
from support.red_team import (
    SYSTEM_PATH,
    escaped,
    git_env,
    host,
    made_up,
    marker,
    markers,
    need,
    ok,
    plant,
    plant_or_refused,
    ran,
    read_inside,
    repository,
    secret,
)
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]









# == rule 1: what the launch environment names ================================================

def test_env_value_forms_under_a_home_read_are_hidden(sandbox: Sandbox) -> None:
    """Forms the rule's tests do not use, each naming a secret in home without a dot: a
    file URL, a `key=value,key2=PATH` list, `..` segments, a folder with a trailing
    slash, a JSON value with escaped slashes, a path through a link in home (read at
    the link's target), a path after `user@`, a path in a script quoted inside a
    command. Hidden under read = ["~"]; the control (no variables) reads them all."""
    home = sandbox.home
    tag = secrets.token_hex(3)
    files = {
        "url": home / f"zqurl{tag}" / "creds.json",
        "key list": home / f"zqkv{tag}" / "token",
        "dot dot": home / f"zqdd{tag}" / "creds.json",
        "trailing slash": home / f"zqts{tag}" / "deep" / "key.pem",
        "json": home / f"zqjs{tag}" / "key",
        "link target": home / f"zqreal{tag}" / "creds.json",
        "at": home / f"zqat{tag}" / "id",
        "nested script": home / f"zqsh{tag}" / "pass",
    }
    texts = {kind: secret(path) for kind, path in files.items()}
    (home / f"zqlink{tag}").symlink_to(f"zqreal{tag}")
    (home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    escaped_home = str(home).replace("/", "\\/")
    env = {
        made_up(): f"file://{home}/zqurl{tag}/creds.json",
        made_up(): f"mode=ro,keyfile={home}/zqkv{tag}/token",
        made_up(): f"{home}/zqdd{tag}/sub/../creds.json",
        made_up(): f"{home}/zqts{tag}/",
        made_up(): '{"key":"' + escaped_home + f'\\/zqjs{tag}\\/key"}}',
        made_up(): f"{home}/zqlink{tag}/creds.json",
        made_up(): f"git@{home}/zqat{tag}/id",
        made_up(): f"sh -c \"tool --pass-file '{home}/zqsh{tag}/pass' run\"",
    }
    control = read_inside(sandbox, home / "notes.txt", *files.values())
    need(all(text in control.values() for text in texts.values()),
         f"the control read not every secret: {control}")
    found = read_inside(sandbox, home / "notes.txt", *files.values(), env=env)
    need(found[str(home / "notes.txt")] == "the person's notes\n", found)
    leaked = [kind for kind, text in texts.items() if text in found.values()]
    assert leaked == [], found


def test_a_path_folder_that_is_home_shows_no_named_secret(sandbox: Sandbox) -> None:
    """The person's PATH ends in their home (`export PATH=$PATH:~`, an old habit); a
    made-up variable names a token at ~/zqcloud/token. Under read = ["~"] the token
    must stay hidden (the control: without PATH holding home, it is). Fixed by red
    team 3: home_hidden.found showed whatever lay in a PATH folder at any depth."""
    home = sandbox.home
    tag = secrets.token_hex(3)
    text = secret(home / f"zqcloud{tag}" / "token")
    (home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    variable = {made_up(): f"{home}/zqcloud{tag}/token"}
    held = read_inside(sandbox, home / "notes.txt", home / f"zqcloud{tag}" / "token",
                       env=variable)
    need(text not in held.values(), f"the control read the token: {held}")
    found = read_inside(sandbox, home / "notes.txt", home / f"zqcloud{tag}" / "token",
                        env={**variable, "PATH": f"{SYSTEM_PATH}:{home}"})
    need(found[str(home / "notes.txt")] == "the person's notes\n", found)
    assert text not in found.values(), found


# (the person's settings file or None, its text, the team's file below ~/work/team, its
# first text, what is appended inside, the person's environment, the person's command,
# where it runs: "elsewhere" (an unrelated repository of theirs), "home" or "work")
MANY = "ZQ_MANY"  # the case's environment gets this many made-up path variables more
Case = tuple[str | None, str, str, str, str, dict[str, str], tuple[str, ...], str]
CASES: dict[str, Case] = {
    # -- rule 1: the environment (the two aliases fixed by red team 3: `!` starts a path)
    "env git alias in GIT_CONFIG_VALUE": (
        None, "", "{name}.sh", "#!/bin/sh\n", "echo alias >> {marker}\n",
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.zq",
         "GIT_CONFIG_VALUE_0": "!~/work/team/{name}.sh"}, ("git", "zq"), "elsewhere"),
    "env git alias in GIT_CONFIG_PARAMETERS": (
        None, "", "{name}.sh", "#!/bin/sh\n", "echo alias >> {marker}\n",
        {"GIT_CONFIG_PARAMETERS": "'alias.zq=!{home}/work/team/{name}.sh'"},
        ("git", "zq"), "elsewhere"),
    "env editor through a default": (  # ${VAR:-x}: fixed by red team 3 (_expand)
        None, "", "{name}.sh", "#!/bin/sh\necho message > \"$1\"\n",
        "echo editor >> {marker}\n",
        {"GIT_EDITOR": "${{ZQ_TOOLS:-$HOME/work/team}}/{name}.sh"},
        ("git", "commit", "-q", "--allow-empty"), "elsewhere"),
    "env editor through a link in home": (  # held
        None, "", "{name}.sh", "#!/bin/sh\necho message > \"$1\"\n",
        "echo editor >> {marker}\n", {"GIT_EDITOR": "~/teamlink/{name}.sh"},
        ("git", "commit", "-q", "--allow-empty"), "elsewhere"),
    "env editor after a 100 KB word": (  # held
        None, "", "{name}.sh", "#!/bin/sh\necho message > \"$1\"\n",
        "echo editor >> {marker}\n",
        {"GIT_EDITOR": "env ZQ=" + "x" * 100_000 + " ~/work/team/{name}.sh"},
        ("git", "commit", "-q", "--allow-empty"), "elsewhere"),
    "env editor among 3000 variables": (  # held
        None, "", "{name}.sh", "#!/bin/sh\necho message > \"$1\"\n",
        "echo editor >> {marker}\n", {"GIT_EDITOR": "~/work/team/{name}.sh", MANY: "3000"},
        ("git", "commit", "-q", "--allow-empty"), "elsewhere"),
    # -- rule 3: git's settings (all four fixed by red team 3: value_paths reads a command
    # as environment_paths does) ---------------------------------------------------------
    "git alias sh -c script": (
        ".gitconfig", "[alias]\n\tzq = \"!sh -c 'git status -s && ~/work/team/{name}.sh'\"\n",
        "{name}.sh", "#!/bin/sh\n", "echo alias >> {marker}\n", {}, ("git", "zq"),
        "elsewhere"),
    "git alias command substitution": (
        ".gitconfig", "[alias]\n\tzq = \"!git log -1 $(~/work/team/{name}.sh)\"\n",
        "{name}.sh", "#!/bin/sh\n", "echo alias >> {marker}\n", {}, ("git", "zq"),
        "elsewhere"),
    "git sshCommand -F$HOME": (
        ".gitconfig", "[core]\n\tsshCommand = ssh -F$HOME/work/team/{name}.conf "
        "-oBatchMode=yes -oConnectTimeout=3\n",
        "{name}.conf", "# the team\n", "Match exec \"echo ssh >> {marker}\"\n", {},
        ("git", "ls-remote", "team-host.invalid:x"), "elsewhere"),
    "git textconv sh -c": (
        ".gitconfig", "[diff \"zq\"]\n\ttextconv = \"sh -c '~/work/team/{name}.sh \\\"$0\\\"'\"\n",
        "{name}.sh", "#!/bin/sh\ncat \"$1\"\n", "echo textconv >> {marker}\n", {},
        ("git", "log", "-p", "-1", "--", "a.zq"), "elsewhere"),
    "git include relative to an included file": (  # held
        ".gitconfig", "[include]\n\tpath = ~/work/team/main.gitconfig\n", "{name}.inc",
        "# the team\n", "[core]\n\tfsmonitor = \"sh -c 'echo git >> {marker}'\"\n", {},
        ("git", "status"), "elsewhere"),
    "git ext remote in a url subsection": (  # fixed by red team 3 (value_paths)
        ".gitconfig", "[protocol \"ext\"]\n\tallow = always\n"
        "[url \"ext::{home}/work/team/{name}.sh %S\"]\n\tinsteadOf = team:\n",
        "{name}.sh", "#!/bin/sh\n", "echo ext >> {marker}\n", {},
        ("git", "ls-remote", "team:x"), "elsewhere"),
    "git includeIf relative to home's file": (  # held
        ".gitconfig", "[includeIf \"gitdir:/\"]\n\tpath = work/team/{name}.inc\n",
        "{name}.inc", "# the team\n",
        "[core]\n\tfsmonitor = \"sh -c 'echo git >> {marker}'\"\n", {},
        ("git", "status"), "elsewhere"),
    "git XDG config fsmonitor": (  # held
        ".config/git/config", "[core]\n\tfsmonitor = ~/work/team/{name}.sh\n",
        "{name}.sh", "#!/bin/sh\n", "echo git >> {marker}\n", {}, ("git", "status"),
        "elsewhere"),
    # -- rule 3: other tools ---------------------------------------------------------------
    "nvim lua home on its own line": (
        ".config/nvim/init.lua", 'local home = os.getenv("HOME")\n'
        'dofile(home .. "/work/team/{name}.lua")\n', "{name}.lua", "-- the team\n",
        "vim.fn.writefile({{'ran'}}, '{marker}')\n", {}, ("nvim", "--headless", "+qa"),
        "home"),
    "nvim lua table.concat": (
        ".config/nvim/init.lua", 'dofile(table.concat({{os.getenv("HOME"), "work", '
        '"team", "{name}.lua"}}, "/"))\n', "{name}.lua", "-- the team\n",
        "vim.fn.writefile({{'ran'}}, '{marker}')\n", {}, ("nvim", "--headless", "+qa"),
        "home"),
    "gdb python os.path.join": (  # fixed by red team 3 (tool_settings._RELATIVE_PART)
        ".gdbinit", "python\nimport os\nexec(open(os.path.join(os.environ['HOME'], "
        "'work/team/{name}.py')).read())\nend\n", "{name}.py", "# the team\n",
        "open('{marker}', 'a').write('gdb')\n", {}, ("gdb", "-batch"), "home"),
    "ssh ProxyCommand ssh -F$HOME": (  # fixed by red team 3 (tool_settings._START)
        ".ssh/config", "Host team-host\n  ProxyCommand ssh -F$HOME/work/team/{name}.conf "
        "-W %h:%p jump.invalid\n", "{name}.conf", "# the team\n",
        "Match exec \"echo ssh >> {marker}\"\n", {},
        ("ssh", "-F", "{home}/.ssh/config", "-oBatchMode=yes", "-oConnectTimeout=3",
         "team-host", "true"), "home"),
    "ssh Match exec quoted script": (  # held
        ".ssh/config", "Match exec \"sh -c 'true; ~/work/team/{name}.sh'\"\n  User x\n",
        "{name}.sh", "#!/bin/sh\n", "echo ssh >> {marker}\n", {},
        ("ssh", "-F", "{home}/.ssh/config", "-G", "team-host"), "home"),
    "hg alias shell": (  # held
        ".hgrc", "[alias]\nzq = !~/work/team/{name}.sh\n", "{name}.sh", "#!/bin/sh\n",
        "echo hg >> {marker}\n", {}, ("hg", "zq"), "elsewhere-hg"),
    "pdb home pdbrc": (  # this and the next fixed by red team 3 (EDITOR_STARTUP)
        ".pdbrc", "exec(open('{home}/work/team/{name}.py').read())\n", "{name}.py",
        "# the team\n", "open('{marker}', 'a').write('pdb')\n", {},
        ("python3", "-m", "pdb", "-c", "continue", "{home}/script.py"), "home"),
    "perl debugger home perldb": (
        ".perldb", "do '{home}/work/team/{name}.pl';\n", "{name}.pl", "1;\n",
        "system(q{{echo perl >> {marker}}});\n", {"PERLDB_OPTS": "NonStop=1"},
        ("perl", "-d", "-e", "1"), "home"),
}
# Files of the person's made before, below home, for a case: (path, text).
EXTRA: dict[str, tuple[tuple[str, str], ...]] = {  # "-> TARGET": a link
    "env editor through a link in home": (("teamlink", "-> work/team"),),
    "git include relative to an included file": (
        ("work/team/main.gitconfig", "[include]\n\tpath = {name}.inc\n"),),
}
REASONS: dict[str, str] = {
    "nvim lua table.concat": (
        "tool_settings: a path joined from parts (table.concat({HOME, 'work', ...}, '/')) "
        "has no path word"),
}


def _team(box: Sandbox, case: str, name: str) -> Path:
    settings, naming, shared_name, first, _, _, _, where = CASES[case]
    team = box.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / shared_name.format(name=name)
    shared.write_text(first)
    shared.chmod(0o755)
    if settings is not None:
        path = box.home / settings
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(naming.format(name=name, home=box.home))
        if settings.startswith(".ssh"):
            path.parent.chmod(0o700)
            path.chmod(0o600)
    for extra, text in EXTRA.get(case, ()):
        if text.startswith("-> "):
            (box.home / extra).symlink_to(text[3:])
        else:
            (box.home / extra).write_text(text.format(name=name, home=box.home))
    (box.home / "script.py").write_text("x = 1\n")
    if where == "elsewhere":
        repo = repository(box, box.base / "elsewhere")
        (repo / ".gitattributes").write_text("*.zq diff=zq\n")
        (repo / "a.zq").write_text("one\n")
        host(box, "git", "add", ".", cwd=repo, env=git_env(box))
        host(box, "git", "commit", "-q", "-m", "zq", cwd=repo, env=git_env(box))
    if where == "elsewhere-hg":
        made = host(box, "hg", "init", str(box.base / "elsewhere-hg"))
        need(made.returncode == 0, made.stderr)
    return shared


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=escaped(REASONS[case])) if case in REASONS else case
    for case in CASES])
def test_what_the_persons_settings_name_in_a_grant_runs_nothing(sandbox: Sandbox,
                                                               case: str) -> None:
    """The person's settings or environment reach ~/work/team/NAME in a form of its
    own; a run writing ~/work appends to it; the person's tool, started outside, runs
    nothing planted (the control appends on the host, and the tool runs it)."""
    name = "t" + secrets.token_hex(3)
    _, _, _, _, text, variables, command, where = CASES[case]
    shared = _team(sandbox, case, name)
    env = {k: v.format(home=sandbox.home, name=name) for k, v in variables.items()
           if k != MANY}
    for index in range(int(variables.get(MANY, "0"))):
        env[f"ZQ{index}_{secrets.token_hex(2).upper()}"] = f"{sandbox.home}/zq{index}/f"
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
    argv = [word.format(home=sandbox.home) for word in command]
    cwd = {"home": sandbox.home, "work": sandbox.home / "work"}.get(
        where, sandbox.base / where)

    def person() -> None:
        person_env = {**git_env(sandbox), **env} if argv[0] == "git" else env
        host(sandbox, *argv, cwd=cwd, env=person_env)

    person()
    assert ran(sandbox) == [], done.stdout + done.stderr
    with open(shared, "a") as planted:  # the control: the same, appended on the host
        planted.write(appended)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# (the variable, the folder it names below home, where nvim runs a plugin from in it)
RUNTIMES = {
    "VIMRUNTIME": ("src/runtime", "plugin"),
    "XDG_DATA_HOME": ("data", "nvim/site/plugin"),
}
RUNTIME_REASONS: dict[str, str] = {}  # XDG_DATA_HOME fixed by red team 3 too


@pytest.mark.parametrize("variable", [
    pytest.param(v, marks=escaped(RUNTIME_REASONS[v])) if v in RUNTIME_REASONS else v
    for v in RUNTIMES])
def test_a_runtime_folder_the_environment_names_that_is_the_grant(sandbox: Sandbox,
                                                                  variable: str) -> None:
    """A Neovim developer runs a sandbox in their runtime checkout, which their
    environment's VIMRUNTIME names (or in the folder XDG_DATA_HOME names); the run adds
    a plugin; the person's next nvim, anywhere, must not run it (the control writes it
    on the host). VIMRUNTIME fixed by red team 3: one of home_places.CODE_PLACES (the
    launch is refused)."""
    folder, plugins = RUNTIMES[variable]
    runtime = sandbox.home / folder
    (runtime / plugins).mkdir(parents=True)
    (runtime / plugins / "base.vim").write_text('" the runtime\n')
    markers(sandbox)
    sandbox.chown()
    name = "v" + secrets.token_hex(3)
    env = {variable: str(runtime)}
    body = f"call writefile(['ran'], '{marker(sandbox, name)}')\n"
    done = sandbox.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps(
        [["write", f"{plugins}/{name}.vim", body]]), cwd=runtime, env=env,
        spec='[files]\nwrite = ["."]\n')
    if done.returncode == 125 and "STARTED" not in done.stdout:  # refused: held
        assert variable in done.stderr, done.stderr
    else:
        need(done.stdout.startswith("STARTED "), f"never started inside: {done.stderr}")
    results = done.stdout + done.stderr

    def person() -> None:
        host(sandbox, "nvim", "--headless", "+qa", env=env)

    person()
    assert ran(sandbox) == [], results
    (runtime / plugins / f"{name}.vim").write_text(body)
    sandbox.chown()
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# == rule 2: the shells' startup files ========================================================

# ~/.bashrc (or the file named first) reaching ~/work/team/NAME.sh in a form the rule's
# tests do not use, and the person's command (bash's arguments).
SHELL_FORMS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "builtin source": (".bashrc", "builtin source ~/work/team/{name}.sh", ()),
    "command dot": (".bashrc", "command . ~/work/team/{name}.sh", ()),
    "eval of a file read": (".bashrc", 'eval "$(< ~/work/team/{name}.sh)"', ()),
    "read loop then eval": (".bashrc", 'while read -r l; do eval "$l"; done '
                            "< ~/work/team/{name}.sh", ()),
    "CRLF line ends around": (".bashrc", "true\r\n. ~/work/team/{name}.sh\n#\r", ()),
    "line continuation": (".bashrc", ". ~/work/te\\\nam/{name}.sh", ()),
    "backslash in a word": (".bashrc", ". ~/work/te\\am/{name}.sh", ()),
    "HOME with a default": (".bashrc", ". ${{HOME-/}}/work/team/{name}.sh", ()),
    "ANSI-C in a word": (".bashrc", "source ~/work/$'\\x74'eam/{name}.sh", ()),
    "hash -p": (".bashrc", "hash -p ~/work/team/{name}.sh zq{name}",
                ("-i", "-c", "zq{name}; echo BASH-RAN")),
    "export BASH_ENV": (".bashrc", "export BASH_ENV=~/work/team/{name}.sh",
                        ("-i", "-c", "bash -c true; echo BASH-RAN")),
    "bash_login": (".bash_login", ". ~/work/team/{name}.sh", ("-l", "-c", "echo BASH-RAN")),
    "bash_logout": (".bash_logout", ". ~/work/team/{name}.sh",
                    ("-l", "-c", "echo BASH-RAN; exit")),
    "extglob": (".bashrc", "shopt -s extglob\n. ~/work/@(team)/{name}.sh", ()),
    "NUL in the path": (".bashrc", ". ~/work/te\0am/{name}.sh", ()),  # bash drops NUL
    "after a 600 KB line": (".bashrc", 'A="' + "x" * 600_000 + '"\n. ~/work/team/{name}.sh',
                            ()),
    "function named like a command": (".bashrc", 'git() {{ ~/work/team/{name}.sh; }}',
                                      ("-i", "-c", "git; echo BASH-RAN")),
}
SHELL_REFUSED = {"ANSI-C in a word", "NUL in the path", "extglob"}
SHELL_REASONS: dict[str, str] = {}  # extglob fixed by red team 3 (shell_words)


@pytest.mark.parametrize("form", [
    pytest.param(form, marks=escaped(SHELL_REASONS[form])) if form in SHELL_REASONS
    else form for form in SHELL_FORMS])
def test_what_a_startup_file_reaches_in_another_form_is_read_only(sandbox: Sandbox,
                                                                  form: str) -> None:
    name = "f" + secrets.token_hex(4)
    where, text, args = SHELL_FORMS[form]
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / f"{name}.sh"
    shared.write_text("#!/bin/sh\nTEAM=1\n")
    shared.chmod(0o755)
    (sandbox.home / where).write_bytes((text.format(name=name) + "\n").encode())
    markers(sandbox)
    sandbox.chown()
    line = f"echo {form.replace(' ', '-')} >> {marker(sandbox, name)}\n"
    results = plant_or_refused(sandbox, [("append", f"team/{name}.sh", line),
                                         ("write", "notes.txt", "the rest stays writable\n")],
                               refusal=f"~/{where} line", cwd=sandbox.home / "work")
    if form in SHELL_REFUSED:
        assert f"~/{where} line" in results.get("refused", ""), results
    else:
        need(results.get("write notes.txt") == "OK", results)
    argv = [a.format(name=name) for a in (args or ("-i", "-c", "echo BASH-RAN"))]

    def person() -> None:
        done = host(sandbox, "bash", *argv, env={"TERM": "xterm"})
        need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:  # the control: the same append made on the host
        planted.write(line)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_a_readline_macro_that_types_a_path(sandbox: Sandbox) -> None:
    """~/.inputrc binds Enter to a macro that types a team script's path after the line
    and accepts it (`"\\C-m": "\\C-e; ~/work/team/NAME.sh\\C-j"`); a run writing ~/work
    appends to the script; the person's next Enter in bash at a terminal must run
    nothing planted (the control appends on the host, and it runs). Fixed by red team
    3: person_settings._readline read the path glued to `\\C-j`."""
    name = "r" + secrets.token_hex(3)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / f"{name}.sh"
    shared.write_text("#!/bin/sh\n")
    shared.chmod(0o755)
    (sandbox.home / ".inputrc").write_text(
        f'"\\C-m": "\\C-e; ~/work/team/{name}.sh\\C-j"\n')
    markers(sandbox)
    sandbox.chown()
    line = f"echo readline >> {marker(sandbox, name)}\n"
    results = plant(sandbox, [("append", f"team/{name}.sh", line)],
                    cwd=sandbox.home / "work")

    def person() -> None:
        env = {"PATH": SYSTEM_PATH, "HOME": str(sandbox.home), "LANG": "C.UTF-8",
               "TERM": "xterm", "PS1": "$ "}
        _status, output = at_terminal(
            [*sandbox.who.prefix, "bash", "--norc", "--noprofile", "-i"],
            cwd=sandbox.home, env=env,
            typed=((b"$ ", b"echo FIRST\r"), (b"FIRST", b"exit\r")))
        need(b"FIRST" in output, output)

    person()
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


# == rule 3: tools' files found by a rule of the tool, not a word ==============================

@escaped("tool_settings: `set auto-load safe-path /` names no file, and what gdb then "
         "auto-loads beside a program it debugs (PROGRAM-gdb.gdb, -gdb.py) is held nowhere")
def test_gdb_auto_load_beside_the_program(sandbox: Sandbox) -> None:
    """The person's ~/.gdbinit has `set auto-load safe-path /` (gdb's own warning
    suggests it); they debug a program they build in ~/work/build. A run writing ~/work
    adds build/app-gdb.gdb; the person's next `gdb -batch ~/work/build/app` must run
    nothing planted (the control writes it on the host, and gdb runs it)."""
    build = sandbox.home / "work" / "build"
    build.mkdir(parents=True)
    shutil.copy("/bin/true", build / "app")
    (sandbox.home / ".gdbinit").write_text("set auto-load safe-path /\n")
    markers(sandbox)
    sandbox.chown()
    body = f"shell echo gdb >> {marker(sandbox, 'gdb')}\n"
    results = plant(sandbox, [("write", "build/app-gdb.gdb", body),
                              ("write", "notes.txt", "the rest stays writable\n")],
                    cwd=sandbox.home / "work")
    need(results.get("write notes.txt") == "OK", results)

    def person() -> None:
        done = host(sandbox, "gdb", "-batch", str(build / "app"))
        ok(done, "gdb")

    person()
    assert ran(sandbox) == [], results
    (build / "app-gdb.gdb").write_text(body)
    sandbox.chown()
    person()
    need(ran(sandbox) == ["gdb"], f"the control did not run: {ran(sandbox)}")


@escaped("tool_settings: vim's resolve(expand('<sfile>:p')) (the folder a linked init "
         "file really lies in) names no path; the file it sources beside the link's "
         "target is writable (only the target itself is held)")
def test_nvim_sources_beside_its_linked_init(sandbox: Sandbox) -> None:
    """GNU Stow's layout: ~/.config/nvim/init.vim -> ~/dotfiles/nvim/init.vim, which
    sources local.vim from the folder it really lies in (a common dotfiles idiom). A run
    writing ~/dotfiles appends to local.vim; the person's next nvim must run nothing
    planted (the control appends on the host, and nvim runs it)."""
    dotfiles = sandbox.home / "dotfiles" / "nvim"
    dotfiles.mkdir(parents=True)
    (dotfiles / "init.vim").write_text(
        "exe 'source' fnamemodify(resolve(expand('<sfile>:p')), ':h') . '/local.vim'\n")
    (dotfiles / "local.vim").write_text('" machine settings\n')
    config = sandbox.home / ".config" / "nvim"
    config.mkdir(parents=True)
    (config / "init.vim").symlink_to(dotfiles / "init.vim")
    markers(sandbox)
    sandbox.chown()
    line = f"call writefile(['ran'], '{marker(sandbox, 'nvim')}')\n"
    results = plant(sandbox, [("append", "nvim/local.vim", line)],
                    cwd=sandbox.home / "dotfiles")

    def person() -> None:
        ok(host(sandbox, "nvim", "--headless", "+qa"), "nvim")

    person()
    assert ran(sandbox) == [], results
    with open(dotfiles / "local.vim", "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == ["nvim"], f"the control did not run: {ran(sandbox)}")



def test_a_relative_hooks_path_in_the_persons_settings(sandbox: Sandbox) -> None:
    """The person's ~/.gitconfig says `core.hooksPath = .githooks` (each repository
    keeps its own hooks, tracked); a run in their repository adds
    .githooks/post-checkout; the person's next `git checkout` there must run nothing
    planted (the control writes the hook on the host, and git runs it)."""
    (sandbox.home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    project = repository(sandbox, sandbox.project)
    (project / ".githooks").mkdir()
    (project / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    host(sandbox, "git", "add", ".githooks", cwd=project, env=git_env(sandbox))
    host(sandbox, "git", "commit", "-q", "-m", "hooks", cwd=project, env=git_env(sandbox))
    markers(sandbox)
    sandbox.chown()
    hook = f"#!/bin/sh\necho hook >> {marker(sandbox, 'hook')}\n"
    results = plant(sandbox, [("make", ".githooks/post-checkout", hook),
                              ("write", "notes.txt", "the rest stays writable\n")],
                    cwd=project)
    need(results.get("write notes.txt") == "OK", results)

    def person(branch: str) -> None:
        done = host(sandbox, "git", "checkout", "-q", "-b", branch, cwd=project,
                    env=git_env(sandbox))
        ok(done, "git checkout")

    person("one")
    assert ran(sandbox) == [], results
    planted = project / ".githooks" / "post-checkout"
    if planted.is_dir():
        planted.rmdir()
    planted.write_text(hook)
    planted.chmod(0o755)
    sandbox.chown()
    person("two")
    need(ran(sandbox) == ["hook"], f"the control did not run: {ran(sandbox)}")


def test_a_fish_conf_d_snippet_sources_from_a_grant(sandbox: Sandbox) -> None:
    """~/.config/fish/conf.d/team.fish sources ~/work/team/NAME.fish; a run writing
    ~/work appends to it; the person's next fish must run nothing planted. Fixed by red
    team 3 (person_settings.FISH_FOLDERS); ci/setup.sh --test installs fish."""
    if shutil.which("fish") is None:
        missing("fish is not installed here (ci/setup.sh --test: apt-get install fish)")
    name = "s" + secrets.token_hex(3)
    team = sandbox.home / "work" / "team"
    team.mkdir(parents=True)
    shared = team / f"{name}.fish"
    shared.write_text("set -g TEAM 1\n")
    conf = sandbox.home / ".config" / "fish" / "conf.d"
    conf.mkdir(parents=True)
    (conf / "team.fish").write_text(f"source ~/work/team/{name}.fish\n")
    markers(sandbox)
    sandbox.chown()
    line = f"echo fish >> {marker(sandbox, name)}\n"
    results = plant(sandbox, [("append", f"team/{name}.fish", line)],
                    cwd=sandbox.home / "work")

    def person() -> None:
        done = host(sandbox, "fish", "-c", "echo FISH-RAN")
        need("FISH-RAN" in done.stdout, f"the person's fish did not run: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    with open(shared, "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_a_linked_bashrc_sources_beside_its_real_file(sandbox: Sandbox) -> None:
    """The bash form of nvim's escape above: ~/.bashrc -> ~/dotfiles/bashrc, which
    sources local.sh from the folder it really lies in (`readlink -f` of BASH_SOURCE).
    A run writing ~/dotfiles appends to local.sh; the person's next bash must run
    nothing planted (the control appends on the host, and bash runs it)."""
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_text(
        '. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/local.sh"\n')
    (dotfiles / "local.sh").write_text("LOCAL=1\n")
    (sandbox.home / ".bashrc").symlink_to("dotfiles/bashrc")
    markers(sandbox)
    sandbox.chown()
    line = f"echo local >> {marker(sandbox, 'local')}\n"
    results = plant_or_refused(sandbox, [("append", "local.sh", line)],
                               refusal="~/.bashrc", cwd=dotfiles)

    def person() -> None:
        done = host(sandbox, "bash", "-i", "-c", "echo BASH-RAN", env={"TERM": "xterm"})
        need("BASH-RAN" in done.stdout, f"the person's bash did not run: {done.stderr}")

    person()
    assert ran(sandbox) == [], results
    with open(dotfiles / "local.sh", "a") as planted:
        planted.write(line)
    person()
    need(ran(sandbox) == ["local"], f"the control did not run: {ran(sandbox)}")


def test_a_secret_a_variable_names_in_a_reopened_dot_folder(sandbox: Sandbox) -> None:
    """Home's dot entries are hidden under read = ["~"], and a short list of them is
    reopened as code without secrets (~/.local/lib, ~/.rustup). A made-up variable names
    a token the person keeps in one of them: what the environment names is a setting,
    hidden like the others (the control, without the variable, reads it: reopened)."""
    home = sandbox.home
    tag = secrets.token_hex(3)
    paths = [home / ".local" / "lib" / f"zq{tag}" / "token", home / ".rustup" / f"zq{tag}"]
    texts = [secret(path) for path in paths]
    (home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    control = read_inside(sandbox, home / "notes.txt", *paths)
    need(all(text in control.values() for text in texts), f"not reopened: {control}")
    env = {made_up(): str(paths[0].parent), made_up(): f"--token-file={paths[1]}"}
    found = read_inside(sandbox, home / "notes.txt", *paths, env=env)
    need(found[str(home / "notes.txt")] == "the person's notes\n", found)
    assert [text for text in texts if text in found.values()] == [], found
