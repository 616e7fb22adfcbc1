"""The command line: `lnk sandbox COMMAND ...` and `lnk-sandbox COMMAND ...`.

A thin layer over the stages in `run.py`: it parses arguments, calls them, and turns a
SandboxError into one message and exit status 125. No traceback reaches a person for
anything they can cause.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

from .errors import SandboxError, SpecError

if TYPE_CHECKING:
    import argparse

USAGE_STATUS = 125

# `run` and `exec` are what harnesses call for every tool command: their plain forms are
# read without argparse, which (with gettext and shutil) costs each start about 5 ms
# here. Anything else (help, a typo, another command) goes to argparse, which owns the
# grammar and every message.
_FAST_VALUED = ("--spec", "--report", "--decide-fd", "--decide-timeout")
_FAST_FLAGS = ("--yes",)


def _fast(argv: list[str]) -> dict[str, Any] | None:
    """The options of a plain `run ... -- COMMAND` or `exec ID ... -- COMMAND`, else None."""
    if not argv or argv[0] not in ("run", "exec") or "--" not in argv:
        return None
    split = argv.index("--")
    head, command = argv[1:split], argv[split + 1:]
    found: dict[str, Any] = {"action": argv[0], "spec": None, "report": None, "yes": False,
                             "decide_fd": None, "decide_timeout": None, "command": command}
    if argv[0] == "exec":
        if not head or head[0].startswith("-"):
            return None
        found["snapshot_id"], head = head[0], head[1:]
    allowed_valued = _FAST_VALUED if argv[0] == "run" else _FAST_VALUED[1:]
    index = 0
    while index < len(head):
        word = head[index]
        name, equals, value = word.partition("=")
        if name in allowed_valued and equals and value:
            found[name[2:].replace("-", "_")] = value
        elif word in allowed_valued and index + 1 < len(head):
            index += 1
            found[word[2:].replace("-", "_")] = head[index]
        elif word in _FAST_FLAGS and argv[0] == "run":
            found["yes"] = True
        else:
            return None
        index += 1
    return found


def _command(argv: list[str]) -> list[str]:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise SpecError("no command given", file="<command line>",
                        hint="put the command after '--', as in: lnk sandbox run -- make test")
    return argv


def _parser(prog: str) -> argparse.ArgumentParser:
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            self.print_usage(sys.stderr)
            sys.stderr.write(f"lnk-sandbox: {message}\n")
            raise SystemExit(USAGE_STATUS)

    parser = _Parser(prog=prog, description="Run a command confined by a spec.")
    commands = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)

    def command(name: str, text: str, *, spec: bool = True, yes: bool = False,
                rest: bool = True) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(name, help=text)
        if spec:
            sub.add_argument("--spec", metavar="FILE",
                             help="the spec (TOML); the embedded default without it")
        if yes:
            sub.add_argument("--yes", action="store_true",
                             help="allow a spec not allowed before without asking")
        if rest:
            sub.add_argument("command", nargs=argparse.REMAINDER)
        return sub

    run = command("run", "run a command in a sandbox", yes=True)
    run.add_argument("--report", metavar="FILE",
                     help="write every refusal to FILE as JSON lines")
    _decide_options(run)
    command("learn", "run once with every program open; print the [commands] lines for "
            "what ran", yes=True)
    check = command("check", "what this machine enforces for a spec", rest=False)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    plan = command("plan", "print the mount plan and bwrap's arguments, or the macOS profile")
    plan.add_argument("--os", choices=("linux", "macos"), dest="target_os",
                      default="macos" if sys.platform == "darwin" else "linux",
                      help="whose plan to print; either works on any OS")
    describe = command("describe", "what a person is asked to allow", rest=False)
    describe.add_argument("--json", action="store_true", help="print it as JSON")
    command("wrap", "check now, and print a command line that runs it later", yes=True)
    saved = command("exec", "run a command wrapped before (what wrap prints)", spec=False,
                    rest=False)
    saved.add_argument("snapshot_id", metavar="ID")
    saved.add_argument("--report", metavar="FILE",
                       help="write every refusal to FILE as JSON lines")
    _decide_options(saved)
    saved.add_argument("command", nargs=argparse.REMAINDER)
    return parser


def _decide_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decide-fd", metavar="N",
                        help="ask on descriptor N (a socket) about destinations no "
                        "[network] list names, one JSON line each (proxy mode)")
    parser.add_argument("--decide-timeout", metavar="SECONDS",
                        help="refuse when no verdict comes within SECONDS (default 30)")


def _decide(args: Any) -> dict[str, Any]:
    """--decide-fd and --decide-timeout as the API's keyword arguments."""
    found: dict[str, Any] = {}
    if args.decide_fd is not None:
        if not str(args.decide_fd).isdigit():
            raise SpecError(f"--decide-fd {args.decide_fd!r} is not a descriptor number",
                            file="<command line>")
        found["decide_fd"] = int(args.decide_fd)
    if args.decide_timeout is not None:
        try:
            found["decide_timeout"] = float(args.decide_timeout)
        except ValueError:
            raise SpecError(f"--decide-timeout {args.decide_timeout!r} is not a number of "
                            "seconds", file="<command line>") from None
        if args.decide_fd is None:
            raise SpecError("--decide-timeout without --decide-fd", file="<command line>")
    return found


def _print_plan(spec: str | None, command: list[str]) -> int:
    from .linux.bwrap import BwrapInfo, bwrap_args
    from .linux.run import plan_for
    from .run import snapshot_for

    snapshot = snapshot_for(spec)
    plan = plan_for(snapshot)
    out = sys.stdout
    out.write(f"# spec: {snapshot.source}\n# mounts, in order:\n")
    for op in plan.ops:
        source = f" <- {op.source}" if op.source and op.source != op.dest else ""
        out.write(f"{op.kind:<10} {op.dest}{source}    # {op.reason}\n")
    info = BwrapInfo("bwrap", "?", True, True)
    args = bwrap_args(plan, info, fd_of=lambda op: f"FD<{op.source}>", json_status_fd="FD",
                      config_fd="FD")
    import shlex

    out.write("# bwrap's arguments (FD<path>: that path, opened without following links):\n")
    out.write(shlex.join(args) + "\n")
    out.write(f"# command: {shlex.join(command)}\n")
    out.writelines(f"# note: {note}\n" for note in plan.notes)
    return 0


def dispatch(prog: str, argv: Sequence[str]) -> int:
    fast = _fast(list(argv))
    args: Any = (SimpleNamespace(**fast) if fast is not None
                 else _parser(prog).parse_args(list(argv)))
    from . import api

    if args.action == "run":
        return api.run(_command(args.command), spec=args.spec, yes=args.yes,
                       report=args.report, **_decide(args))
    if args.action == "exec":
        return api.exec_saved(args.snapshot_id, _command(args.command), report=args.report,
                              **_decide(args))
    if args.action == "learn":
        from .run import learn_snapshot, snapshot_for

        command = _command(args.command)
        snapshot = snapshot_for(args.spec)
        api.ensure_allowed(snapshot, yes=args.yes)
        status, text = learn_snapshot(snapshot, command)
        sys.stdout.flush()
        sys.stdout.write(text)
        return status
    if args.action == "wrap":
        wrapped = api.wrap(_command(args.command), spec=args.spec, yes=args.yes)
        sys.stdout.write(wrapped.command_line + "\n")
        return 0
    if args.action == "describe":
        from .describe import describe, render
        from .run import snapshot_for

        description = describe(snapshot_for(args.spec))
        if args.json:
            import json

            sys.stdout.write(json.dumps(description.to_dict(), indent=2) + "\n")
        else:
            sys.stdout.write(render(description))
        return 0
    if args.action == "check":
        from .check import check
        from .check import render as render_check

        report = check(args.spec)
        if args.json:
            import json

            sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
        else:
            sys.stdout.write(render_check(report))
        return 0 if report.can_launch else 1
    if args.action == "plan":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if args.target_os == "macos":
            from .macos.run import print_plan
            from .run import snapshot_for

            return print_plan(snapshot_for(args.spec), command, sys.stdout)
        return _print_plan(args.spec, command)
    raise AssertionError(args.action)


def _main(prog: str, argv: Sequence[str]) -> NoReturn:
    try:
        status = dispatch(prog, argv)
    except SandboxError as err:
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        status = err.exit_status
    except KeyboardInterrupt:
        status = 128 + 2
    sys.stdout.flush()
    raise SystemExit(status)


def main_lnk() -> NoReturn:
    """`lnk sandbox ...`: the `sandbox` word first, then the same commands."""
    argv = sys.argv[1:]
    if not argv or argv[0] != "sandbox":
        sys.stderr.write("usage: lnk sandbox {run,learn,check,plan,describe,wrap,exec} ...\n")
        raise SystemExit(USAGE_STATUS)
    _main("lnk sandbox", argv[1:])


def main_lnk_sandbox() -> NoReturn:
    """`lnk-sandbox ...`: the same commands without the `sandbox` word."""
    _main(os.path.basename(sys.argv[0]) or "lnk-sandbox", sys.argv[1:])
