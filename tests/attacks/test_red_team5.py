"""Red team 5 (issue 26): an independent attack on red team 4's fix, the expansion of the
environment's and git's values as `sh` expands them (environment_paths._expand,
person_settings.value_paths), by class: values whose path `sh` makes differently from
what lnk reads, so that a file inside a write grant is neither held nor refused.

tests/unit/test_environment_paths.py compares lnk's reading with the real `sh` and
`bash` (differential); here each mismatch that matters is proved end to end: the
person's GIT_EDITOR (or ~/.gitconfig's core.editor) reaches ~/work/team/NAME.sh in the
form, a sandbox writing ~/work appends to it, and the person's next `git commit`
elsewhere must run nothing planted (a control makes the change on the host, and git
runs it). What holds stays as a regression test; what gets out is a strict xfail.

As root (root mode) and as the unprivileged user, through the `sandbox` fixture.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from support.actions import SCRIPT, Action
from support.red_team import (
    escaped,
    git_env,
    host,
    marker,
    markers,
    need,
    ran,
    repository,
)
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# The team's editor: the message into the last argument (a form may pass more).
EDITOR = '#!/bin/sh\nfor last; do :; done\necho message > "$last"\n'

# GIT_EDITOR as git hands it to `sh -c 'VALUE "$@"' VALUE FILE` (or runs it, when it
# holds no shell character): each reaches ~/work/team/NAME.sh.
FORMS: dict[str, str] = {
    # `//x` is `/x` to the kernel; lnk took it for a URL's authority (`//host/path`)
    "two slashes": "/{home}/work/team/{name}.sh",
    # sh's pathname expansion: lnk held the pattern as a missing file of that name
    "a pattern": "~/work/team/{name}.s?",
    "a pattern's folder": "~/work/t*m/{name}.sh",
    "a bracket pattern": "~/work/te[a]m/{name}.sh",
    # a backslash-newline is no character to sh (a line joined); lnk kept it
    "a backslash-newline": "~/work/te\\\nam/{name}.sh",
    # a substitution's output holds a `/`: the folder before it is the grant itself
    "a substitution's tail": "~/work/$(echo team/{name}.sh)",
    # a command whose whole word is a substitution, its script with no `/` at all
    "a substitution without a slash": '$(printf "%s\\057work\\057team\\057{name}.sh" ~)',
    # $0 is the value itself (git's `sh -c 'VALUE "$@"' VALUE`): its tail, trimmed
    "the value's own $0": '"${{0##*Q}}" Q{home}/work/team/{name}.sh',
}
REASONS: dict[str, str] = {}


def team_script(box: Sandbox, name: str) -> Path:
    team = box.home / "work" / "team"
    team.mkdir(parents=True, exist_ok=True)
    shared = team / f"{name}.sh"
    shared.write_text(EDITOR)
    shared.chmod(0o755)
    return shared


def plant_or_refused(box: Sandbox, actions: list[Action], *, refusal: str,
                     env: dict[str, str]) -> dict[str, str]:
    """red_team.plant_or_refused in ~/work, lnk started with `env`: the results, or
    {"refused": its message} when lnk refused the launch naming `refusal`."""
    done = box.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps([list(a) for a in actions]),
                   cwd=box.home / "work", env=env)
    if done.returncode == 125 and "STARTED" not in done.stdout:
        need(refusal in done.stderr, f"refused for another reason:\n{done.stderr}")
        return {"refused": done.stderr}
    lines = done.stdout.splitlines()
    need(lines and lines[0].startswith("STARTED ") and done.returncode == 0,
         f"the plant did not run inside (exit {done.returncode}):\n{done.stderr}")
    results: dict[str, str] = json.loads(lines[-1].removeprefix("RESULTS "))
    return results


def person_commits(box: Sandbox, env: dict[str, str]) -> None:
    """The person's `git commit` in a repository elsewhere, which must succeed."""
    other = box.base / "elsewhere"
    if not other.exists():
        repository(box, other)
    done = host(box, "git", "commit", "-q", "--allow-empty", cwd=other,
                env={**git_env(box), **env})
    need(done.returncode == 0, f"the person's git commit failed: {done.stderr}")


def configure(box: Sandbox, value: str, where: str) -> dict[str, str]:
    """GIT_EDITOR in the environment (returned), or core.editor in ~/.gitconfig."""
    if where == "environment":
        return {"GIT_EDITOR": value}
    quoted = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    (box.home / ".gitconfig").write_text(f'[core]\n\teditor = "{quoted}"\n')
    return {}


@pytest.mark.parametrize("where", ["environment", "gitconfig"])
@pytest.mark.parametrize("form", [
    pytest.param(f, marks=escaped(REASONS[f])) if f in REASONS else f for f in FORMS])
def test_an_editor_sh_makes_differently(sandbox: Sandbox, form: str, where: str) -> None:
    """The person's editor reaches a team's script in ~/work in a form lnk read
    differently from sh; a run writing ~/work appends to it (or is refused); the
    person's next `git commit` must run nothing planted."""
    name = "e" + secrets.token_hex(3)
    shared = team_script(sandbox, name)
    value = FORMS[form].format(name=name, home=sandbox.home)
    env = configure(sandbox, value, where)
    markers(sandbox)
    sandbox.chown()
    line = f"echo editor >> {marker(sandbox, name)}\n"
    said = plant_or_refused(sandbox, [("append", str(shared), line)], refusal=(
        "GIT_EDITOR" if where == "environment" else "core.editor"), env=env)
    person_commits(sandbox, env)
    assert ran(sandbox) == [], said
    with open(shared, "a") as planted:
        planted.write(line)
    person_commits(sandbox, env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")


@pytest.mark.parametrize("where", ["environment", "gitconfig"])
def test_a_folder_before_dot_dot_replaced_inside(sandbox: Sandbox, where: str) -> None:
    """`~/work/x/../team/NAME.sh`: lnk read it as ~/work/team/NAME.sh (normalized, as a
    string), but the kernel follows ~/work/x before the `..`. Inside, the run puts a
    link at ~/work/x to a folder of its own, one level below its own `team/NAME.sh`;
    the person's next `git commit` must run nothing planted."""
    name = "d" + secrets.token_hex(3)
    team_script(sandbox, name)
    (sandbox.home / "work" / "x").mkdir()
    env = configure(sandbox, f"~/work/x/../team/{name}.sh", where)
    markers(sandbox)
    sandbox.chown()
    body = EDITOR + f"echo editor >> {marker(sandbox, name)}\n"
    said = plant_or_refused(sandbox, [
        ("rename", "x", "x.old"), ("makedirs", "mine/sub"), ("mkdir", "mine/team"),
        ("make", f"mine/team/{name}.sh", body), ("symlink", "mine/sub", "x"),
    ], refusal="GIT_EDITOR" if where == "environment" else "core.editor", env=env)
    person_commits(sandbox, env)
    assert ran(sandbox) == [], said
    x = sandbox.home / "work" / "x"  # the control: the same link, made outside
    x.unlink() if x.is_symlink() else x.rmdir()
    (sandbox.home / "work" / "mine" / "sub").mkdir(parents=True, exist_ok=True)
    (sandbox.home / "work" / "mine" / "team").mkdir(exist_ok=True)
    planted = sandbox.home / "work" / "mine" / "team" / f"{name}.sh"
    planted.write_text(body)
    planted.chmod(0o755)
    (sandbox.home / "work" / "x").symlink_to("mine/sub")
    sandbox.chown()
    person_commits(sandbox, env)
    need(ran(sandbox) == [name], f"the control did not run: {ran(sandbox)}")
