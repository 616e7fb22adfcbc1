"""The host side of the git attacks: the person's real git, run as the sandbox's user
after an attack from inside, and payloads that leave a marker where only the host can
write, so a test can tell what ran outside."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .actions import Action, key, name, run_actions
from .sandbox import Sandbox

# What an action must give: its errno (0: it worked), its exact text, or a pattern for
# an outcome whose wording varies from machine to machine.
Expected = int | str | re.Pattern[str]


def attack(box: Sandbox, expected: Mapping[Action, Expected], *,
           spec: str | None = None, cwd: Path | None = None) -> None:
    """Run the actions in one sandbox and assert each result, after STARTED. A pattern
    stands for an outcome whose wording varies from machine to machine and must match
    it whole."""
    results, _ = run_actions(box, list(expected), spec=spec, cwd=cwd)

    def wanted(action: Action, code: int | str | re.Pattern[str]) -> str:
        if isinstance(code, re.Pattern):
            got = results.get(key(action), "")
            return got if code.fullmatch(got) else f"matching {code.pattern}"
        return name(code)

    want = {key(action): wanted(action, code) for action, code in expected.items()}
    assert results == want, {k: (results.get(k), v) for k, v in want.items()
                             if results.get(k) != v}


def git_env(box: Sandbox) -> dict[str, str]:
    # PAGER=cat: no pager unless core.pager names one (git ranks core.pager above
    # $PAGER), so `less` never waits on a terminal where the attack was refused.
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(box.home), "LANG": "C",
            "PAGER": "cat",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(box.base),
            "GIT_AUTHOR_NAME": "Person", "GIT_AUTHOR_EMAIL": "person@example.com",
            "GIT_COMMITTER_NAME": "Person", "GIT_COMMITTER_EMAIL": "person@example.com"}


def host_git(box: Sandbox, *args: str, cwd: Path | None = None, check: bool = True,
             tty: bool = False) -> subprocess.CompletedProcess[str]:
    """The real git on the host, as the sandbox's user; `tty`: its output on a terminal
    (git starts a pager only there)."""
    command = [*box.who.prefix, "git", *args]
    if not tty:
        done = subprocess.run(command, cwd=cwd or box.project, env=git_env(box),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=60)
    else:
        master, slave = os.openpty()
        try:
            done = subprocess.run(command, cwd=cwd or box.project, env=git_env(box),
                                  stdin=subprocess.DEVNULL, stdout=slave,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(slave)
        output = b""
        try:
            while chunk := os.read(master, 4096):
                output += chunk
        except OSError:
            pass  # EIO: the terminal's other side is closed
        os.close(master)
        done.stdout = output.decode(errors="replace")
    if check:
        assert done.returncode == 0, f"host git {args}: {done.stderr}"
    return done


def make_repository(box: Sandbox, folder: Path | None = None) -> None:
    """A repository with one commit, and the person's own post-commit hook, which
    writes the marker `person-post-commit`: proof that the host's git runs hooks."""
    folder = folder or box.project
    markers(box)
    box.chown()
    host_git(box, "init", "-q", "-b", "main", cwd=folder)
    (folder / "README").write_text("hello\n")
    box.chown(folder / "README")
    host_git(box, "add", "README", cwd=folder)
    host_git(box, "commit", "-qm", "first", cwd=folder)
    hook = folder / ".git" / "hooks" / "post-commit"
    hook.write_text(payload(box, "person-post-commit"))
    hook.chmod(0o755)
    markers(box)
    box.chown()


def markers(box: Sandbox) -> Path:
    """Where payloads leave their marker: outside the project, not granted (invisible
    inside), so only a payload run on the host can write there."""
    folder = box.base / "markers"
    folder.mkdir(exist_ok=True)
    box.chown(folder)
    return folder


def payload(box: Sandbox, marker: str, *, filter_: bool = False) -> str:
    """A script that appends its name and arguments to the marker `marker`; as a
    filter it passes its input through."""
    tail = "exec cat\n" if filter_ else "exit 0\n"
    return f'#!/bin/sh\necho "$0 $*" >> {box.base}/markers/{marker}\n{tail}'


def ran(box: Sandbox) -> list[str]:
    """The markers written so far: which payloads the host ran."""
    return sorted(os.listdir(box.base / "markers"))


def commit_on_host(box: Sandbox, message: str = "by the person") -> None:
    with (box.project / "README").open("a") as handle:
        handle.write(f"{message}\n")
    host_git(box, "commit", "-qam", message)
