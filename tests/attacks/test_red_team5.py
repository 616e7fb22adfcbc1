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

import secrets

import pytest

from support.red_team import (
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






@pytest.mark.parametrize("where", ["environment", "gitconfig"])
@pytest.mark.parametrize("form", [
    pytest.param(f, marks=escaped(REASONS[f])) if f in REASONS else f for f in FORMS])
def test_an_editor_sh_makes_differently(sandbox: Sandbox, form: str, where: str) -> None:
    """The person's editor reaches a team's script in ~/work in a form lnk read
    differently from sh; a run writing ~/work appends to it (or is refused); the
    person's next `git commit` must run nothing planted."""
    name = "e" + secrets.token_hex(3)
    shared = team_file(sandbox, f"team/{name}.sh", EDITOR)
    value = FORMS[form].format(name=name, home=sandbox.home)
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


@pytest.mark.parametrize("where", ["environment", "gitconfig"])
def test_a_folder_before_dot_dot_replaced_inside(sandbox: Sandbox, where: str) -> None:
    """`~/work/x/../team/NAME.sh`: lnk read it as ~/work/team/NAME.sh (normalized, as a
    string), but the kernel follows ~/work/x before the `..`. Inside, the run puts a
    link at ~/work/x to a folder of its own, one level below its own `team/NAME.sh`;
    the person's next `git commit` must run nothing planted."""
    name = "d" + secrets.token_hex(3)
    team_file(sandbox, f"team/{name}.sh", EDITOR)
    (sandbox.home / "work" / "x").mkdir()
    env = configure_editor(sandbox, f"~/work/x/../team/{name}.sh", where)
    markers(sandbox)
    sandbox.chown()
    body = EDITOR + f"echo editor >> {marker(sandbox, name)}\n"
    said = plant_or_refused(sandbox, [
        ("rename", "x", "x.old"), ("makedirs", "mine/sub"), ("mkdir", "mine/team"),
        ("make", f"mine/team/{name}.sh", body), ("symlink", "mine/sub", "x"),
    ], refusal="GIT_EDITOR" if where == "environment" else "core.editor", env=env,
        cwd=sandbox.home / "work")
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
