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

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .actions import Action, run_actions
from .sandbox import Sandbox

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
