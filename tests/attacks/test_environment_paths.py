"""The class of red team 2's environment escapes (issue 26): a variable of the person's
launch environment whose value names a path, whatever the variable's name
(supervisor/environment_paths.py). The names here are made up for each run, so no
list could know them: what holds, holds by what the value is.

- under `read = ["~"]`, what any variable names in home without a dot is hidden (a
  tool's secrets moved out of its dot folder), in each form a value takes: a path, a
  list of them, a command's or an option's word;
- inside a write grant, what any variable names is read-only, and held when missing:
  a real program inside first writes beside it (it ran, and the grant is written),
  then fails to write it; the person's real shell runs the file afterwards, outside,
  and nothing planted runs (the control appends on the host, and it runs);
- what is left open by structure stays open: a value that is the grant or holds it,
  where the person is (PWD, OLDPWD, the working directory), a folder of programs
  on PATH (and one inside a hidden folder).

As root (root mode) and as the unprivileged user, each through the `sandbox` fixture.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from support.red_team import (
    git_env,
    host,
    made_up,
    marker,
    markers,
    need,
    ran,
    read_inside,
    repository,
    secret,
)
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# Appends argv[1] to each path after it, or makes a folder in one ending in `/`; the
# first path is beside what is judged (proving the grant is written):
# {path: "WROTE" or the errno's name}.
WRITER = r"""
import errno, json, os, sys
print("STARTED", flush=True)
found = {}
for path in sys.argv[2:]:
    try:
        if path.endswith("/"):
            os.mkdir(path + "made")
        else:
            with open(path, "a") as handle:
                handle.write(sys.argv[1])
        found[path] = "WROTE"
    except OSError as err:
        found[path] = errno.errorcode.get(err.errno, str(err.errno))
print("WROTE " + json.dumps(found), flush=True)
"""








def write_inside(box: Sandbox, beside: Path, *paths: str, env: dict[str, str],
                 cwd: Path, line: str = "# the sandbox\n") -> dict[str, str]:
    done = box.run(PYTHON_INSIDE, "-c", WRITER, line, str(beside), *paths, cwd=cwd,
                   env=env)
    lines = done.stdout.splitlines()
    need(lines[:1] == ["STARTED"] and lines[-1:] and lines[-1].startswith("WROTE "),
         f"the writer never ran inside (exit {done.returncode}):\n{done.stderr}")
    found: dict[str, str] = json.loads(lines[-1][6:])
    need(found[str(beside)] == "WROTE", f"the grant was not written: {found}")
    return found


# -- under a read grant of home -----------------------------------------------------------

def test_what_any_variable_names_in_home_is_hidden(sandbox: Sandbox) -> None:
    """Secrets at paths only made-up variables name, in each form a value takes, are
    hidden under read = ["~"]; the person's notes beside them are read; without the
    variables (the control) the same files are read."""
    home = sandbox.home
    tag = secrets.token_hex(3)
    texts = {
        "file": secret(home / f"zq{tag}" / "creds.json"),
        "folder": secret(home / f"zqstore{tag}" / "team" / "deep" / "key.pem"),
        "list": secret(home / f"zqlist{tag}" / "b.conf"),
        "command": secret(home / f"zqcmd{tag}" / "config.toml"),
        "option": secret(home / f"zqopt{tag}" / "token"),
        "expanded": secret(home / f"zqexp{tag}" / "auth.json"),
    }
    (home / "notes.txt").write_text("the person's notes\n")
    sandbox.chown()
    env = {
        made_up(): f"{home}/zq{tag}/creds.json",  # a file
        made_up(): f"~/zqstore{tag}",  # a folder, `~/` as a shell leaves it quoted
        made_up(): f"/nowhere/a.conf:{home}/zqlist{tag}/b.conf",  # a list of files
        made_up(): f"zqtool --verbose --config ~/zqcmd{tag}/config.toml",  # a command
        made_up(): f"--token-file={home}/zqopt{tag}/token -q",  # an option
        made_up(): f"$HOME/zqexp{tag}/auth.json",  # a variable a shell expands
    }
    paths = [home / f"zq{tag}" / "creds.json",
             home / f"zqstore{tag}" / "team" / "deep" / "key.pem",
             home / f"zqlist{tag}" / "b.conf", home / f"zqcmd{tag}" / "config.toml",
             home / f"zqopt{tag}" / "token", home / f"zqexp{tag}" / "auth.json"]
    control = read_inside(sandbox, home / "notes.txt", *paths)
    need(all(text in control.values() for text in texts.values()),
         f"the control read not every secret: {control}")
    found = read_inside(sandbox, home / "notes.txt", *paths, env=env)
    need(found[str(home / "notes.txt")] == "the person's notes\n", found)
    leaked = [kind for kind, text in texts.items() if text in found.values()]
    assert leaked == [], found


def test_what_is_left_shown_by_structure(sandbox: Sandbox) -> None:
    """Under read = ["~"], a made-up variable naming the working directory, a program
    in a PATH folder, or a tool's home holding a PATH folder leaves what runs shown:
    the run's own folder and the programs are read; the tool home's other files are
    hidden."""
    home = sandbox.home
    work = home / "work"
    (work / "data.txt").parent.mkdir(parents=True)
    (work / "data.txt").write_text("the project's data\n")
    (home / "zqbin").mkdir()
    (home / "zqbin" / "zqed").write_text("#!/bin/sh\necho the editor\n")
    tool = home / "zqtool"
    (tool / "bin").mkdir(parents=True)
    (tool / "bin" / "zq").write_text("#!/bin/sh\necho the tool\n")
    text = secret(tool / "credentials.toml")
    sandbox.chown()
    env = {made_up(): str(work), made_up(): f"{home}/zqbin/zqed --wait",
           made_up(): str(tool),
           "PATH": f"{home}/zqbin:{tool}/bin:/usr/local/bin:/usr/bin:/bin"}
    found = read_inside(sandbox, work / "data.txt", home / "zqbin" / "zqed",
                        tool / "bin" / "zq", tool / "credentials.toml", env=env, cwd=work,
                        spec='[files]\nread = ["~"]\n')  # the working directory: read only
    assert found[str(work / "data.txt")] == "the project's data\n", found
    assert found[str(home / "zqbin" / "zqed")].startswith("#!/bin/sh"), found
    assert found[str(tool / "bin" / "zq")].startswith("#!/bin/sh"), found
    assert text not in found.values(), found


# -- inside a write grant ---------------------------------------------------------------------

def test_what_any_variable_names_in_a_write_grant_is_read_only(sandbox: Sandbox) -> None:
    """The default spec, run in ~/work: a file, a folder, a command's file and a
    missing file, each named by a made-up variable only, are not written; the person's
    sh then runs the file outside, and nothing planted runs (the control appends on the
    host, and it runs)."""
    home = sandbox.home
    work = home / "work"
    (work / "zqdir").mkdir(parents=True)
    (work / "zqdir" / "init.zq").write_text("# settings\n")
    (work / "cfg").mkdir()
    (work / "cfg" / "zq.rc").write_text("# settings\n")
    hook = work / "hook.sh"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    markers(sandbox)
    sandbox.chown()
    name = "m" + secrets.token_hex(3)
    hook_var, dir_var, rc_var, later_var = made_up(), made_up(), made_up(), made_up()
    env = {hook_var: str(hook), dir_var: "~/work/zqdir", rc_var: "source ~/work/cfg/zq.rc",
           later_var: f"{work}/later.sh"}
    line = f"echo planted >> {marker(sandbox, name)}\n"
    found = write_inside(sandbox, work / "free.txt", str(hook), f"{work}/zqdir/init.zq",
                         f"{work}/zqdir/", f"{work}/cfg/zq.rc", f"{work}/later.sh",
                         env=env, cwd=work, line=line)
    wrote = [path for path, result in found.items() if result == "WROTE"
             and path != str(work / "free.txt")]
    assert wrote == [], found
    person = host(sandbox, "/bin/sh", str(hook), env=env)
    need(person.returncode == 0, person.stderr)
    assert ran(sandbox) == [], found
    with open(hook, "a") as planted:  # the control: the same line, appended on the host
        planted.write(line)
    host(sandbox, "/bin/sh", str(hook), env=env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


def test_a_value_that_is_the_grant_or_holds_it_leaves_it_written(sandbox: Sandbox) -> None:
    """Made-up variables naming the written folder itself, a folder holding it, home,
    and PWD/OLDPWD naming folders inside it: the run writes everywhere in it, as
    without them (the grant is the person's choice; where they are is no setting)."""
    home = sandbox.home
    work = home / "src" / "work"
    (work / "sub").mkdir(parents=True)
    sandbox.chown()
    env = {made_up(): str(work), made_up(): str(home / "src"), made_up(): "~/",
           "OLDPWD": str(work / "sub"), "PWD": str(work)}
    found = write_inside(sandbox, work / "free.txt", f"{work}/sub/x.txt", f"{work}/sub/",
                         env=env, cwd=work)
    assert set(found.values()) == {"WROTE"}, found


def test_a_script_in_a_quoted_command_value_is_read_only(sandbox: Sandbox) -> None:
    """An instance no red-team case used: GIT_EXTERNAL_DIFF names a shell script whose
    own words name a program in the grant (`sh -c '~/work/tools/NAME.sh ...'`); the
    sandbox cannot append to it, and the person's `git diff` outside runs nothing
    planted (the control appends on the host, and git runs it)."""
    home = sandbox.home
    tools = home / "work" / "tools"
    tools.mkdir(parents=True)
    name = "d" + secrets.token_hex(3)
    script = tools / f"{name}.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    repo = repository(sandbox, sandbox.base / "elsewhere")
    (repo / "notes.txt").write_text("one\n")
    person = {**git_env(sandbox),
              "GIT_EXTERNAL_DIFF": f"sh -c 'cat /dev/null; {script} \"$@\"' diff"}
    need(host(sandbox, "git", "add", "notes.txt", cwd=repo, env=person).returncode == 0,
         "git add")
    (repo / "notes.txt").write_text("two\n")
    markers(sandbox)
    sandbox.chown()
    line = f"echo diff >> {marker(sandbox, name)}\n"
    found = write_inside(sandbox, home / "work" / "free.txt", str(script),
                         env={"GIT_EXTERNAL_DIFF": person["GIT_EXTERNAL_DIFF"]},
                         cwd=home / "work", line=line)
    assert found[str(script)] != "WROTE", found
    diff = host(sandbox, "git", "diff", cwd=repo, env=person)
    need(diff.returncode == 0, diff.stderr)
    assert ran(sandbox) == [], found
    with open(script, "a") as planted:  # the control: appended on the host
        planted.write(line)
    host(sandbox, "git", "diff", cwd=repo, env=person)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")
