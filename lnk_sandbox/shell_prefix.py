"""Claude Code's Bash tool in a sandbox: the command prefix `CLAUDE_CODE_SHELL_PREFIX` runs.

Claude Code documents `CLAUDE_CODE_SHELL_PREFIX` as a program every shell command it
spawns goes through (Bash tool calls, hooks, stdio MCP servers' start): it quotes the
prefix and the whole command as two shell words and runs that line with the user's
shell, so the prefix gets the command as one string, `$1`, to evaluate again. A Bash
tool call's string has this form (Claude Code 2.1; with a prefix set, the glob option is
switched off for bash and zsh alike):

    source ~/.claude/shell-snapshots/snapshot-bash-<ms>-<id>.sh 2>/dev/null || true &&
    { shopt -u extglob || setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true &&
    eval '<the command>' < /dev/null && pwd -P >| /tmp/claude-<hex>-cwd

The last step writes the shell's final working directory to a file in the harness's
/tmp, which Claude Code reads to keep `cd` from one call to the next. A sandbox has a
/tmp of its own, so this prefix rewrites that one redirection to a file in the run's own
/tmp and, after the run, copies what the shell wrote there (one line, a path) to the
file Claude Code reads: the command itself, and everything else it writes, stay inside.

Use: `CLAUDE_CODE_SHELL_PREFIX=/path/to/lnk-sandbox-shell-prefix`, the spec named by
`LNK_SANDBOX_SPEC` (Claude Code joins the prefix and its flags by a rule that changed
between versions, so the prefix is a program with no arguments, configured by the
environment). The spec must have been allowed before, at a terminal: `lnk sandbox allow
--spec FILE --for DIR` (DIR and every folder inside it): Claude Code runs commands with no
terminal to ask on, and a refusal says that command.
`lnk-sandbox shell-prefix [--spec FILE] COMMAND` is the same for a person to try.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import stat
import sys

import anyio

from supervisor.errors import NotAllowedError, SandboxError

from ._api import Sandbox

SPEC_VARIABLE = "LNK_SANDBOX_SPEC"
CWD_FILE_INSIDE = ".lnk-sandbox-claude-cwd"
MAX_CWD_FILE = 4096

# The tail Claude Code ends a Bash tool call with: the cwd written for its next call.
_CWD_TAIL = re.compile(r"(&&\s*pwd\s+-P\s*>\|\s*)('[^']*'|\"[^\"]*\"|\S+)\s*$")
_SNAPSHOT_SHELL = re.compile(r"/shell-snapshots/snapshot-(bash|zsh)-")


def cwd_file_of(command: str) -> tuple[str, str] | None:
    """(the command up to the file's name, the file Claude Code reads), when the command
    ends as a Bash tool call does; None for another command (a hook, a server)."""
    found = _CWD_TAIL.search(command)
    if found is None:
        return None
    path = shlex.split(found.group(2))[0]
    return command[: found.start(2)], path


def shell_for(command: str) -> str:
    """The shell the command was written for: its snapshot's, else the user's bash or zsh,
    else bash (the command uses `source` and `eval`, which sh may lack)."""
    snapshot = _SNAPSHOT_SHELL.search(command)
    if snapshot:
        return snapshot.group(1)
    name = os.path.basename(os.environ.get("SHELL", ""))
    return name if name in ("bash", "zsh") else "bash"


def _copy_cwd_file(session_tmp: str, target: str) -> None:
    """What the shell wrote in the sandbox's /tmp, to the file Claude Code reads: one
    absolute path, opened without following a link on either side."""
    try:
        fd = os.open(os.path.join(session_tmp, CWD_FILE_INSIDE),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # the command failed: Claude Code keeps its working directory
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        data = os.read(fd, MAX_CWD_FILE + 1)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    if len(data) > MAX_CWD_FILE or not text.startswith("/") or text.count("\n") > 1:
        return
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                  | os.O_CLOEXEC, 0o666)
    try:
        os.write(out, data)
    finally:
        os.close(out)


async def run_prefixed(command: str, *, spec: str | None) -> int:
    """Run Claude Code's command string in a sandbox of `spec`; its exit status."""
    async with Sandbox(spec) as sandbox:
        assert sandbox.tmp is not None
        inside_tmp = "/tmp" if sys.platform != "darwin" else sandbox.tmp
        found = cwd_file_of(command)
        if found is not None:
            command = found[0] + shlex.quote(os.path.join(inside_tmp, CWD_FILE_INSIDE))
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP
                                        ) as signals, anyio.CancelScope() as scope:
            async def cancel_on_signal() -> None:
                async for _ in signals:
                    scope.cancel()  # the run's supervisor is ended, tree and all
                    return

            async with anyio.create_task_group() as group:
                group.start_soon(cancel_on_signal)
                done = await sandbox.run([shell_for(command), "-c", command], capture=False)
                group.cancel_scope.cancel()
        if scope.cancelled_caught:
            return 128 + signal.SIGTERM
        if found is not None:
            _copy_cwd_file(sandbox.tmp, found[1])
        return done.returncode


def main(argv: list[str], prog: str = "lnk-sandbox shell-prefix") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=(
        "Run one shell command string (Claude Code's CLAUDE_CODE_SHELL_PREFIX) in a "
        f"sandbox; the spec from --spec or ${SPEC_VARIABLE}."))
    parser.add_argument("--spec", metavar="FILE",
                        help=f"the spec (TOML); ${SPEC_VARIABLE}, or the embedded default")
    parser.add_argument("command", nargs="+", help="the command string, evaluated by a shell")
    args = parser.parse_args(argv)
    spec = args.spec or os.environ.get(SPEC_VARIABLE) or None
    try:
        return anyio.run(lambda: run_prefixed(" ".join(args.command), spec=spec))
    except NotAllowedError as err:
        # Claude Code runs the prefix with no terminal and takes no flag for it: the
        # one way on is the person allowing the spec at a terminal, for the folder
        # Claude Code works in (and the folders inside it).
        if err.command is not None:
            err = NotAllowedError(err.message, hint="allow it once at a terminal (it shows "
                                  f"what it allows and asks): {err.command}")
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        return err.exit_status
    except SandboxError as err:
        sys.stderr.write(f"lnk-sandbox: {err.render()}\n")
        return err.exit_status


def entry() -> None:
    """The console script `lnk-sandbox-shell-prefix COMMAND`, what the variable names."""
    raise SystemExit(main(sys.argv[1:], os.path.basename(sys.argv[0])))


if __name__ == "__main__":
    entry()
