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
from .system import SYSTEM

if TYPE_CHECKING:
    import argparse

USAGE_STATUS = 125

# `run` and `exec` are what harnesses call for every tool command: their plain forms are
# read without argparse, which (with gettext and shutil) costs each start about 5 ms
# here. Anything else (help, a typo, another command) goes to argparse, which owns the
# grammar and every message.
_FAST_VALUED = ("--spec", "--report", "--decide-fd", "--decide-timeout", "--timeout")
_FAST_FLAGS = ("--yes",)


def _fast(argv: list[str]) -> dict[str, Any] | None:
    """The options of a plain `run ... -- COMMAND` or `exec ID ... -- COMMAND`, else None."""
    if not argv or argv[0] not in ("run", "exec") or "--" not in argv:
        return None
    split = argv.index("--")
    head, command = argv[1:split], argv[split + 1:]
    found: dict[str, Any] = {"action": argv[0], "spec": None, "report": None, "yes": False,
                             "decide_fd": None, "decide_timeout": None, "timeout": None,
                             "command": command}
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
            from .terminal import shown

            self.print_usage(sys.stderr)
            sys.stderr.write(f"lnk-sandbox: {shown(message)}\n")
            raise SystemExit(USAGE_STATUS)

    from . import helptext

    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=prog, description=helptext.DESCRIPTION, epilog=helptext.EPILOG,
                     formatter_class=raw)
    parser.add_argument("--version", action="version", version=version())
    commands = parser.add_subparsers(dest="action", required=True, parser_class=_Parser,
                                     title="commands", metavar="COMMAND")

    def command(name: str, text: str = "", *, spec: bool = True, yes: bool = False,
                rest: bool = True) -> argparse.ArgumentParser:
        text = helptext.COMMANDS[name][0]
        sub: argparse.ArgumentParser = commands.add_parser(
            name, help=text, description=text[:1].upper() + text[1:] + ".",
            epilog=helptext.epilog(name), formatter_class=raw)
        if spec:
            sub.add_argument("--spec", metavar="FILE",
                             help="the spec (TOML); the embedded default without it")
        if yes:
            sub.add_argument("--yes", action="store_true",
                             help="allow a spec not allowed before without asking")
        if rest:
            _rest(sub)
        return sub

    run = command("run", "run a command in a sandbox", yes=True)
    run.add_argument("--report", metavar="FILE",
                     help="write every refusal to FILE as JSON lines")
    _timeout_option(run)
    _decide_options(run)
    learn = command("learn", "run once with every program open; print the [commands] "
                    "lines for what ran", yes=True)
    learn.add_argument("--output", metavar="FILE",
                       help="write the [commands] table to FILE (by default it goes to "
                       "stderr, after the command's own output)")
    check = command("check", "what this machine enforces for a spec", rest=False)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    plan = command("plan", "print the mount plan and bwrap's arguments, or the macOS profile")
    plan.add_argument("--os", choices=("linux", "macos"), dest="target_os",
                      default=SYSTEM,
                      help="whose plan to print; either works on any OS")
    describe = command("describe", "what a person is asked to allow", rest=False)
    describe.add_argument("--json", action="store_true", help="print it as JSON")
    command("wrap", "check now, and print a command line that runs it later", yes=True)
    saved = command("exec", "run a command wrapped before (what wrap prints)", spec=False,
                    rest=False)
    saved.add_argument("snapshot_id", metavar="ID")
    saved.add_argument("--report", metavar="FILE",
                       help="write every refusal to FILE as JSON lines")
    _timeout_option(saved)
    _decide_options(saved)
    _rest(saved)
    allowing = command("allow", rest=False, yes=True)
    allowing.add_argument("--for", metavar="DIR", dest="folder",
                          help="allow it in DIR and every folder inside it (without it: "
                          "in the working directory alone)")
    cache = command("cache", rest=False)
    cache.add_argument("what", choices=("clear",), help="clear: empty them")
    cache.add_argument("--all", action="store_true", help="every spec's and agent's caches")
    return parser


def _rest(parser: argparse.ArgumentParser) -> None:
    import argparse

    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]",
                        help="the command to run, after --")


def version() -> str:
    """`lnk-sandbox VERSION`, from the installed distribution's metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return f"lnk-sandbox {installed('lnk-sandbox')}"
    except PackageNotFoundError:
        return "lnk-sandbox (not installed: run from a source tree)"


def _timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", metavar="SECONDS",
                        help="kill the command and everything it started after SECONDS "
                        "(exit status 124)")


def _timeout(args: Any) -> float | None:
    if args.timeout is None:
        return None
    from .deadline import parse_timeout

    return parse_timeout(str(args.timeout))


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


def _clear_caches(spec_path: str | None, *, every: bool) -> int:
    """`cache clear --spec FILE` empties that spec's private caches (its agent's, where
    it names one); `--all` every one of them."""
    from .caches import CACHES, clear, scope
    from .policy import Context
    from .spec import load_spec

    if every == (spec_path is not None):
        raise SpecError("name the spec whose caches to empty (--spec FILE), or --all",
                        file="<command line>")
    lnk_home = Context.current().lnk_home
    if every:
        folder, whose = os.path.join(lnk_home, CACHES), "every spec's and agent's caches"
    else:
        assert spec_path is not None
        spec = load_spec(spec_path)
        folder = os.path.join(lnk_home, CACHES, scope(spec.source, spec.agent))
        whose = (f"the agent {spec.agent}'s caches" if spec.agent else
                 f"the caches of {spec_path}")
    try:
        count = clear(folder)
    except OSError as err:
        raise SandboxError(f"cannot empty {folder}: {err.strerror}") from None
    sys.stdout.write(f"emptied {whose}: {count} files and folders removed from {folder}\n")
    return 0


def dispatch(prog: str, argv: Sequence[str]) -> int:
    fast = _fast(list(argv))
    args: Any = (SimpleNamespace(**fast) if fast is not None
                 else _parser(prog).parse_args(list(argv)))
    from . import api

    if args.action == "run":
        return api.run(_command(args.command), spec=args.spec, yes=args.yes,
                       report=args.report, timeout=_timeout(args), **_decide(args))
    if args.action == "exec":
        return api.exec_saved(args.snapshot_id, _command(args.command), report=args.report,
                              timeout=_timeout(args), **_decide(args))
    if args.action == "learn":
        from .terminal import shown_text

        status, text = api.learn(_command(args.command), spec=args.spec, yes=args.yes)
        text = shown_text(text)  # shown as rendered (learn.render): nothing raw, whatever
        if args.output is None:
            sys.stderr.write(text)  # never mixed with the command's output on stdout
            return status
        from .events import say
        from .host_files import open_report

        fd = open_report(args.output, what="what learn found")
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        say(f"the [commands] table for what ran is in {args.output}")
        return status
    if args.action == "wrap":
        wrapped = api.wrap(_command(args.command), spec=args.spec, yes=args.yes)
        sys.stdout.write(wrapped.command_line + "\n")
        return 0
    if args.action == "describe":
        from .describe import render
        from .stages import snapshot_for

        description = api.description_of(snapshot_for(args.spec))
        if args.json:
            import json

            sys.stdout.write(json.dumps(description.to_dict(), indent=2) + "\n")
        else:
            sys.stdout.write(render(description))  # shown line by line
        return 0
    if args.action == "check":
        from .backends import backend, render_check

        report = backend().check(args.spec)
        if args.json:
            import json

            sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
        else:
            sys.stdout.write(render_check(report))
        return 0 if report.can_launch else 1
    if args.action == "cache":
        return _clear_caches(args.spec, every=args.all)
    if args.action == "allow":
        if args.spec is None:
            raise SpecError("name the spec to allow (--spec FILE): the embedded default "
                            "is never asked about", file="<command line>")
        from .events import say

        say(api.allow(args.spec, folder=args.folder, yes=args.yes))
        return 0
    if args.action == "plan":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        import io

        from .backends import backend
        from .stages import snapshot_for
        from .terminal import shown_text

        listing = io.StringIO()
        status = backend(args.target_os).print_plan(snapshot_for(args.spec), command,
                                                    listing)
        # each path is shown by the backend; shown_text here leaves no other raw character
        sys.stdout.write(shown_text(listing.getvalue()))
        return status
    raise AssertionError(args.action)


def _main(prog: str, argv: Sequence[str]) -> NoReturn:
    try:
        status = dispatch(prog, argv)
    except SandboxError as err:
        from .events import say_shown  # on a line of its own, after the sandbox's

        say_shown(err.render())  # shown already, its hint on a line of its own
        status = err.exit_status
    except OSError as err:
        # The file system refused what no check before foresaw: said as the others are,
        # status 125, never a traceback (a harness would read its status 1 as the
        # command's). Each cause a person can give has its own message before this.
        from .events import say

        say(unforeseen(err))
        status = USAGE_STATUS
    except KeyboardInterrupt:
        status = 128 + 2
    sys.stdout.flush()
    raise SystemExit(status)


def unforeseen(err: OSError) -> str:
    """An OSError no check named, as a message and a hint."""
    where = "".join(f" {name}" for name in (err.filename, err.filename2) if name)
    return (f"cannot go on:{where}: {err.strerror or err}\n  hint: lnk-sandbox met it "
            "on a file of its own or one the environment names ($HOME, $LNK_HOME, the "
            "working directory, --spec, --report): check that it is there and yours to "
            "use, and run it again")


def _client(name: str, prog: str, argv: list[str]) -> NoReturn:
    """`mcp` and `shell-prefix`: clients of the Python API in lnk_sandbox, loaded only
    when asked for (the MCP SDK is an extra, and nothing of either sits on a run's start)."""
    if name == "mcp":
        try:
            from lnk_sandbox.mcp_server import main as serve
        except ImportError as err:
            sys.stderr.write(f"lnk-sandbox: `{prog}` needs the mcp extra ({err})\n"
                             "  hint: pip install 'lnk-sandbox[mcp]'\n")
            raise SystemExit(USAGE_STATUS) from None
        raise SystemExit(serve(argv, prog))
    from lnk_sandbox.shell_prefix import main as prefix

    raise SystemExit(prefix(argv, prog))


def main_lnk() -> NoReturn:
    """`lnk sandbox ...`: the `sandbox` word first, then the same commands; `lnk mcp`.
    `lnk --help` and `lnk --version` answer for the sandbox, the one family of commands
    lnk has."""
    if os.environ.get("LNK_START_SERVER"):  # opt-in: off, not even its client is loaded
        from .startclient import serve

        serve("lnk")  # exits here when a start server ran the command (startclient.py)
    from .terminal import standard_streams

    standard_streams()
    argv = sys.argv[1:]
    if argv[:1] in (["--help"], ["-h"], ["help"], ["--version"]):
        _main("lnk sandbox", ["--help" if argv[0] == "help" else argv[0]])
    if argv and argv[0] == "mcp":
        _client("mcp", "lnk mcp", argv[1:])
    if not argv or argv[0] != "sandbox":
        usage = "usage: lnk sandbox COMMAND [ARG...]   (lnk --help lists the commands)\n"
        what = f"unknown command {argv[0]!r}" if argv else "no command given"
        sys.stderr.write(f"{usage}lnk: {what}: lnk's commands are under `lnk sandbox`, as "
                         "in: lnk sandbox run -- make test\n")
        raise SystemExit(USAGE_STATUS)
    _main("lnk sandbox", argv[1:])


def main_lnk_sandbox() -> NoReturn:
    """`lnk-sandbox ...`: the same commands without the `sandbox` word; `mcp` and
    `shell-prefix` (Claude Code's CLAUDE_CODE_SHELL_PREFIX)."""
    if os.environ.get("LNK_START_SERVER"):  # opt-in: off, not even its client is loaded
        from .startclient import serve

        serve("lnk-sandbox")  # exits here when a start server ran the command
    from .terminal import standard_streams

    standard_streams()
    prog = os.path.basename(sys.argv[0]) or "lnk-sandbox"
    argv = sys.argv[1:]
    if argv and argv[0] in ("mcp", "shell-prefix"):
        _client(argv[0], f"{prog} {argv[0]}", argv[1:])
    _main(prog, argv)
