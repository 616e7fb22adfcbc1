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


def _ask(text: str, folder: str) -> str:
    """Show `text` and ask on the terminal: "y" (this snapshot), "b" (in `folder` and
    every folder inside it), "" (no, or no terminal to ask on)."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return ""
    from .home_places import look_again

    look_again()  # the answer may take minutes: the plan looks at home's places anew
    try:
        from .terminal import shown_lines

        shown = shown_lines(f"  {line}" for line in text.splitlines())
        here = shown_lines([folder]).rstrip("\n")
        os.write(tty, ("lnk-sandbox: this spec was not allowed before. It would allow:\n"
                       f"{shown}Allow it? y: yes, for this exact set of grants; b: yes, "
                       f"for this folder ({here}) and every folder inside it; N: no "
                       "[y/b/N] ").encode("utf-8", "replace"))
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 64:
            chunk = os.read(tty, 64)
            if not chunk:
                break
            answer += chunk
    finally:
        os.close(tty)
    said = answer.strip().lower()
    return {b"y": "y", b"yes": "y", b"b": "b"}.get(said, "")


def allow_command(snapshot: Snapshot) -> str:
    """The command a person runs at a terminal to allow `snapshot` ahead of time, for
    its working directory and every folder inside it."""
    import shlex

    return shlex.join(["lnk", "sandbox", "allow", "--spec", snapshot.source, "--for",
                       snapshot.cwd])


def not_allowed(snapshot: Snapshot, *, yes: str | None = "--yes") -> NotAllowedError:
    """The refusal of a spec not allowed before where no one can be asked, with the
    command that allows it (`yes`: how this caller says yes itself, if it can)."""
    command = allow_command(snapshot)
    return NotAllowedError(
        f"the spec {snapshot.source} was not allowed before, and there is no terminal "
        "to ask on",
        hint=f"allow it at a terminal (it shows what it allows and asks): {command}"
        + (f"; or pass {yes}" if yes else ""), command=command,
    )


def ensure_allowed(snapshot: Snapshot, *, yes: bool, yes_word: str | None = "--yes") -> None:
    """Remembered, or asked now, or `yes`: else NotAllowedError saying how to allow it
    (`yes_word`: how the caller says yes, in the hint; None where it cannot)."""
    if snapshot.source == DEFAULT_SPEC_NAME:
        return
    from .permissions import remember, remember_below, remembered

    if remembered(snapshot):
        return  # the description (dataclasses, inspect: 8 ms) only for asking or --yes
    from .describe import render

    text = render(description_of(snapshot))
    interactive = sys.stdin.isatty() and os.path.exists("/dev/tty")
    answer = "y" if yes else _ask(text, snapshot.cwd) if interactive else ""
    if answer == "y":
        remember(snapshot, text)
        return
    if answer == "b":
        remember_below(snapshot, text)
        return
    if interactive:
        raise NotAllowedError("not allowed: the sandbox was not started")
    raise not_allowed(snapshot, yes=yes_word)


def allow(spec: str, *, folder: str | None = None, yes: bool = False) -> str:
    """`lnk sandbox allow`: allow `spec` ahead of time, for a client with no terminal,
    remembered as an answer is: its snapshot resolved in `folder`, for that folder and
    every folder inside it (the working directory and no other, without `folder`).
    Shown and asked at a terminal unless `yes`; what was allowed, as a line to say."""
    from .describe import describe, render
    from .errors import SpecError
    from .permissions import remember, remember_below
    from .policy import Context
    from .stages import snapshot_for

    context = Context.current()
    if folder is not None:
        where = os.path.realpath(folder)
        if not os.path.isdir(where):
            raise SpecError(f"--for {folder}: no such folder", file="<command line>",
                            hint="name the folder the client works in, or one holding it")
        context = context._replace(cwd=where)
    snapshot = snapshot_for(spec, context)
    if snapshot.source == DEFAULT_SPEC_NAME:
        raise SpecError("the embedded default spec is never asked about, so there is "
                        "nothing to allow", file="<command line>",
                        hint="name the spec to allow: lnk sandbox allow --spec FILE")
    text = render(describe(snapshot))
    below = f"{snapshot.cwd} and every folder inside it"
    if not yes:
        from .terminal import shown_lines

        try:
            tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            raise NotAllowedError(
                "there is no terminal to ask on", hint="run it at a terminal, or pass "
                "--yes having read `lnk sandbox describe --spec FILE`") from None
        try:
            shown = shown_lines(f"  {line}" for line in text.splitlines())
            # the folder's real path may hold names a sandbox chose: shown escaped
            where_text = shown_lines([below if folder is not None else snapshot.cwd]
                                     ).rstrip("\n")
            os.write(tty, (f"lnk-sandbox: allow this spec in {where_text}? It would "
                           f"allow:\n{shown}Allow it? [y/N] ").encode("utf-8", "replace"))
            answer = os.read(tty, 64)
        finally:
            os.close(tty)
        if answer.strip().lower() not in (b"y", b"yes"):
            raise NotAllowedError("not allowed: nothing was remembered")
    if folder is not None:
        remember_below(snapshot, text)
        return f"allowed {snapshot.source} in {below}"
    remember(snapshot, text)
    return f"allowed {snapshot.source} in {snapshot.cwd}"


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


__all__ = ["SandboxError", "Wrapped", "allow", "check", "describe", "exec_saved", "learn",
           "run", "wrap"]
