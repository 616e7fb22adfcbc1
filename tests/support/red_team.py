"""The red team's attacks on issues 26 and 27 (tests/attacks/test_red_team_*.py): a plant
made inside a real sandbox, the person's real tool run outside afterwards.

An attack that gets out is left failing under `escaped(...)`: an xfail that is strict
(the suite fails once the escape is closed, so the mark must go with the fix) and that
counts only an AssertionError, which the attacks keep for the one thing they judge, the
harm. Everything a result needs to mean something (the plant started inside, the
person's tool ran) is checked with `need`, which fails with pytest's own Failed: a
broken set-up is a real failure, never taken for the escape.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .actions import SCRIPT, Action, run_actions
from .sandbox import PYTHON_INSIDE, Sandbox

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def escaped(reason: str) -> pytest.MarkDecorator:
    """The mark of an attack that gets out today: strict, and only its assertion."""
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"red team: {reason}")


def need(condition: object, message: object) -> None:
    """A precondition of the attack (never the harm it judges): pytest.fail, not assert."""
    if not condition:
        pytest.fail(str(message), pytrace=False)


def plant(box: Sandbox, actions: Sequence[Action], *, spec: str | None = None,
          cwd: Path | None = None) -> dict[str, str]:
    """Run the actions in one sandbox (support/actions.py): their results by key, once the
    script is known to have started inside and finished."""
    try:
        results, _ = run_actions(box, list(actions), spec=spec, cwd=cwd)
    except AssertionError as err:  # the script never started, or failed: a set-up fault
        pytest.fail(f"the plant did not run inside: {err}", pytrace=False)
    return results


def plant_or_refused(box: Sandbox, actions: Sequence[Action], *, refusal: str,
                     spec: str | None = None, cwd: Path | None = None,
                     env: dict[str, str] | None = None) -> dict[str, str]:
    """`plant`, where lnk refusing the launch is how a rule holds: {"refused": its
    message} when it exited 125 without starting anything inside, its message naming
    `refusal` (a refusal for another reason is a broken set-up, not the rule)."""
    done = box.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps([list(a) for a in actions]),
                   spec=spec, cwd=cwd, env=env)
    if done.returncode == 125 and "STARTED" not in done.stdout:
        need(refusal in done.stderr, f"refused for another reason:\n{done.stderr}")
        return {"refused": done.stderr}
    lines = done.stdout.splitlines()
    need(lines and lines[0].startswith("STARTED ") and done.returncode == 0,
         f"the plant did not run inside (exit {done.returncode}):\n{done.stderr}")
    results: dict[str, str] = json.loads(lines[-1].removeprefix("RESULTS "))
    return results


def inside(box: Sandbox, script: str, *, spec: str | None = None, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`sh -c SCRIPT` in a sandbox, after printing STARTED: the run, once it started."""
    done = box.run("/bin/sh", "-c", "echo STARTED; " + script, spec=spec, cwd=cwd, env=env)
    need(done.stdout.startswith("STARTED\n"),
         f"never started inside (exit {done.returncode}):\n{done.stderr}\n{done.stdout}")
    return done


def host(box: Sandbox, *command: str, cwd: Path | None = None,
         env: dict[str, str] | None = None, stdin: Any = subprocess.DEVNULL,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A real program on the host, as the sandbox's user, in its home (or `cwd`)."""
    environment = {"PATH": SYSTEM_PATH, "HOME": str(box.home), "LANG": "C.UTF-8",
                   "TERM": "dumb", **(env or {})}
    return subprocess.run([*box.who.prefix, *command], cwd=cwd or box.home,
                          env=environment, stdin=stdin, capture_output=True, text=True,
                          timeout=timeout)


def markers(box: Sandbox) -> Path:
    """Where payloads leave their marker: outside every grant, so only the host writes."""
    folder = box.base / "markers"
    folder.mkdir(exist_ok=True)
    box.chown(folder)
    return folder


def marker(box: Sandbox, name: str) -> str:
    return str(markers(box) / name)


def ran(box: Sandbox) -> list[str]:
    """The markers written so far: which payloads ran on the host."""
    return sorted(p.name for p in markers(box).iterdir())


def payload(box: Sandbox, name: str) -> str:
    """A shell script that leaves the marker `name`."""
    return f"#!/bin/sh\necho \"$0 $*\" >> {marker(box, name)}\nexit 0\n"


def git_env(box: Sandbox) -> dict[str, str]:
    """The person's git: their ~/.gitconfig read, the system's not, no pager."""
    return {"HOME": str(box.home), "LANG": "C", "PAGER": "cat", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(box.base), "GIT_AUTHOR_NAME": "Person",
            "GIT_AUTHOR_EMAIL": "person@example.com", "GIT_COMMITTER_NAME": "Person",
            "GIT_COMMITTER_EMAIL": "person@example.com"}


def person_git(box: Sandbox, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The person's real git in `folder`, which must succeed."""
    done = host(box, "git", *args, cwd=folder, env=git_env(box))
    need(done.returncode == 0, f"the person's git {args} in {folder}: {done.stderr}")
    return done


def repository(box: Sandbox, folder: Path) -> Path:
    """A repository of the person's with one commit, made on the host."""
    folder.mkdir(parents=True, exist_ok=True)
    box.chown()
    person_git(box, folder, "init", "-q", "-b", "main")
    person_git(box, folder, "commit", "-q", "--allow-empty", "-m", "first")
    return folder


def git_elsewhere(box: Sandbox) -> None:
    """The person's git in an unrelated repository of theirs: status and a checkout,
    which run its settings' fsmonitor and the post-checkout hook wherever they are."""
    other = repository(box, box.base / "elsewhere")
    person_git(box, other, "status")
    person_git(box, other, "checkout", "-q", "-b", "side")


# == what a sandbox reads, and the person's tools =============================================

HOME_READ = '[files]\nread = ["~"]\nwrite = ["."]\n'

# Reads each path given: {path: its text or the errno's name}.
READER = r"""
import errno, json, sys
print("STARTED", flush=True)
found = {}
for path in sys.argv[1:]:
    try:
        with open(path, errors="replace") as handle:
            found[path] = handle.read()
    except OSError as err:
        found[path] = errno.errorcode.get(err.errno, str(err.errno))
print("READ " + json.dumps(found), flush=True)
"""


def made_up() -> str:
    """A variable name no list has: ZQ and random letters."""
    return "ZQ" + secrets.token_hex(4).upper()


def secret(path: Path) -> str:
    """A new secret at `path`: its text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"token-{secrets.token_hex(8)}\n"
    path.write_text(text)
    return text


def read_inside(box: Sandbox, *paths: Path, env: dict[str, str] | None = None,
                spec: str | None = HOME_READ, cwd: Path | None = None) -> dict[str, str]:
    """What a sandbox read at each of `paths`, once it is known to have started inside."""
    done = box.run(PYTHON_INSIDE, "-c", READER, *map(str, paths), spec=spec, env=env,
                   cwd=cwd)
    lines = done.stdout.splitlines()
    need(lines[:1] == ["STARTED"] and lines[-1:] and lines[-1].startswith("READ "),
         f"the reader never ran inside (exit {done.returncode}):\n{done.stderr}")
    found: dict[str, str] = json.loads(lines[-1][5:])
    return found


def ok(done: object, what: str) -> None:
    """The person's tool ran (exit 0)."""
    need(getattr(done, "returncode", 1) == 0,
         f"the person's {what} failed: {getattr(done, 'stderr', done)}")


# == the person's editor and git, for the attacks on what their values name ==================

def team_file(box: Sandbox, relative: str, text: str) -> Path:
    """~/work/RELATIVE, the person's runnable file, which their settings or environment
    name (a team's script in the folder a run writes)."""
    shared = box.home / "work" / relative
    shared.parent.mkdir(parents=True, exist_ok=True)
    shared.write_text(text)
    shared.chmod(0o755)
    return shared


def configure_editor(box: Sandbox, value: str, where: str) -> dict[str, str]:
    """GIT_EDITOR in the environment (returned), or core.editor in ~/.gitconfig."""
    if where == "environment":
        return {"GIT_EDITOR": value}
    quoted = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    (box.home / ".gitconfig").write_text(f'[core]\n\teditor = "{quoted}"\n')
    return {}


def person_commits(box: Sandbox, env: dict[str, str]) -> None:
    """The person's `git commit` in a repository elsewhere, which must succeed."""
    other = box.base / "elsewhere"
    if not other.exists():
        repository(box, other)
    done = host(box, "git", "commit", "-q", "--allow-empty", cwd=other,
                env={**git_env(box), **env})
    need(done.returncode == 0, f"the person's git commit failed: {done.stderr}")
