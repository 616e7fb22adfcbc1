"""The Python API for harnesses: run, wrap, describe, check, returning plain data.

The command line is a thin layer over these. Each raises SandboxError (with `.render()`
for a person and `.exit_status` 125) for anything lnk-sandbox itself refuses.

Asking: a spec whose snapshot was not allowed before is shown and asked about on a
terminal, or needs `yes=True`; without either it is refused. The embedded default spec
(the working directory writable, system folders readable, no network) is lnk-sandbox's
own documented baseline and is not asked about.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import NotAllowedError, SandboxError
from .grants import Snapshot
from .netpolicy import DEFAULT_DECIDE_TIMEOUT, Decide
from .spec import DEFAULT_SPEC_NAME

if TYPE_CHECKING:
    from .describe import Description


class Wrapped(NamedTuple):
    """A saved wrapped command: its snapshot's ID and the line to run it later."""

    snapshot_id: str
    command_line: str


def _ask(text: str) -> bool:
    """Show `text` and ask on the terminal; False when there is no terminal to ask on."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    from .home_places import look_again

    look_again()  # the answer may take minutes: the plan looks at home's places anew
    try:
        from .terminal import shown_lines

        shown = shown_lines(f"  {line}" for line in text.splitlines())
        os.write(tty, ("lnk-sandbox: this spec was not allowed before. It would allow:\n"
                       f"{shown}Allow it (remembered for this exact set of grants)? [y/N] "
                       ).encode("utf-8", "replace"))
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 64:
            chunk = os.read(tty, 64)
            if not chunk:
                break
            answer += chunk
    finally:
        os.close(tty)
    return answer.strip().lower() in (b"y", b"yes")


def ensure_allowed(snapshot: Snapshot, *, yes: bool) -> None:
    """Remembered, or asked now, or `yes`: else NotAllowedError saying how to allow it."""
    if snapshot.source == DEFAULT_SPEC_NAME:
        return
    from .permissions import remember, remembered

    if remembered(snapshot):
        return  # the description (dataclasses, inspect: 8 ms) only for asking or --yes
    from .describe import render

    text = render(description_of(snapshot))
    interactive = sys.stdin.isatty() and os.path.exists("/dev/tty")
    if yes or (interactive and _ask(text)):
        remember(snapshot, text)
        return
    if interactive:
        raise NotAllowedError("not allowed: the sandbox was not started")
    raise NotAllowedError(
        f"the spec {snapshot.source} was not allowed before, and there is no terminal "
        "to ask on",
        hint="run it once at a terminal to be asked, read `lnk sandbox describe --spec "
        "FILE`, or pass --yes to allow it",
    )


def run(command: list[str], *, spec: str | None = None, yes: bool = False,
        report: str | None = None, decide_fd: int | None = None,
        decide_timeout: float = DEFAULT_DECIDE_TIMEOUT, timeout: float | None = None) -> int:
    """Run `command` in a sandbox; its exit status (the design's: 124, 125, 126, 127...).

    `decide_fd`: one end of a socket the caller holds the other end of; a destination no
    `[network]` list names is asked about on it (proxy mode; see proxy/decider.py), and
    refused without a verdict within `decide_timeout` seconds. `timeout`: seconds after
    which the command and everything it started are killed (124).
    """
    from .deadline import check_timeout
    from .home_places import found_once
    from .run import run_snapshot
    from .stages import snapshot_for

    timeout = check_timeout(timeout)
    with found_once():  # resolving and planning look at home's places once
        snapshot = snapshot_for(spec)
        ensure_allowed(snapshot, yes=yes)
        return run_snapshot(snapshot, command, report=report,
                            decide=_decide(decide_fd, decide_timeout), timeout=timeout)


def learn(command: list[str], *, spec: str | None = None, yes: bool = False
          ) -> tuple[int, str]:
    """Run `command` once with every program open; its exit status and the `[commands]`
    table of what it ran, for the person to add (learn writes nothing itself)."""
    from .run import learn_snapshot
    from .stages import snapshot_for

    snapshot = snapshot_for(spec)
    ensure_allowed(snapshot, yes=yes)
    return learn_snapshot(snapshot, command)


def wrap(command: list[str], *, spec: str | None = None, yes: bool = False,
         program: str | None = None) -> Wrapped:
    """Resolve and check now, ask if needed, save the snapshot; the line to run later."""
    from .permissions import save_snapshot
    from .run import preflight
    from .stages import snapshot_for

    snapshot = snapshot_for(spec)
    preflight(snapshot)
    if snapshot.source == DEFAULT_SPEC_NAME:
        from .describe import render
        from .permissions import remember

        remember(snapshot, render(description_of(snapshot)))  # saved, checked later
    else:
        ensure_allowed(snapshot, yes=yes)
    key = save_snapshot(snapshot)
    import shlex

    launcher = program or _launcher()
    return Wrapped(key, shlex.join([launcher, "exec", key, "--", *command]))


def _launcher() -> str:
    """The installed `lnk-sandbox` beside this interpreter (a venv's bin folder)."""
    path = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "lnk-sandbox")
    return path if os.access(path, os.X_OK) else "lnk-sandbox"


def exec_saved(snapshot_id: str, command: list[str], *, report: str | None = None,
               decide_fd: int | None = None,
               decide_timeout: float = DEFAULT_DECIDE_TIMEOUT,
               timeout: float | None = None) -> int:
    """Run `command` confined by a saved snapshot; never resolves a name again."""
    from .deadline import check_timeout
    from .permissions import load_snapshot
    from .policy import Context
    from .run import run_snapshot

    timeout = check_timeout(timeout)
    snapshot = load_snapshot(Context.current().lnk_home, snapshot_id)
    return run_snapshot(snapshot, command, report=report,
                        decide=_decide(decide_fd, decide_timeout), timeout=timeout)


def _decide(fd: int | None, timeout: float) -> Decide | None:
    return None if fd is None else Decide(fd, timeout)


def describe(spec: str | None = None) -> dict[str, Any]:
    from .stages import snapshot_for

    return description_of(snapshot_for(spec)).to_dict()


def description_of(snapshot: Snapshot) -> Description:
    """What a person is asked to allow (describe.py), with what holds where this OS's
    sandbox runs without namespaces, which its backend says (a door asks the chooser;
    describe.py, below the doors, does not)."""
    from .backends import backend
    from .describe import describe as describe_snapshot

    return describe_snapshot(snapshot, namespaces=backend().without_namespaces(snapshot))


def check(spec: str | None = None) -> dict[str, Any]:
    from .backends import backend

    return backend().check(spec).to_dict()


__all__ = ["SandboxError", "Wrapped", "check", "describe", "exec_saved", "learn", "run",
           "wrap"]
