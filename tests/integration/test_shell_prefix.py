"""Claude Code's Bash tool through `CLAUDE_CODE_SHELL_PREFIX=lnk-sandbox-shell-prefix`.

Each test runs the exact command line Claude Code builds for a Bash tool call with a
prefix set (Claude Code 2.1, per its documentation and the command lines it was seen
to spawn): the command string

    source <snapshot> 2>/dev/null || true &&
    { shopt -u extglob || setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true &&
    { \\builtin unalias -- 'unsetenv'; \\builtin unset -f -- 'unsetenv'; } >/dev/null 2>&1 ||
    true && eval '<command>' < /dev/null && pwd -P >| /tmp/claude-<hex>-cwd

quoted, after the quoted prefix, as one line that the user's shell runs with `-c`; the
prefix gets the string as `$1`. Claude Code then reads the cwd file for its next call.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import capabilities as caps
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

PREFIX = str(caps.VENV_BIN / "lnk-sandbox-shell-prefix")
SPEC = """
[files]
write = ["."]
read = [{ path = "~/.claude/shell-snapshots", optional = true }]
"""


def quote(text: str) -> str:
    """shell-quote's quote(), as Claude Code quotes the prefix and the command."""
    if text and all(c.isalnum() or c in "_-.,:/@\n%+" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def claude_command(command: str, snapshot: Path, cwd_file: str) -> str:
    """The command string of a Bash tool call, with a prefix set."""
    inside = command.replace("'", "'\"'\"'")  # eval's single quotes, as Claude Code writes them
    return (f"source {snapshot} 2>/dev/null || true && "
            "{ shopt -u extglob || setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true && "
            "{ \\builtin unalias -- 'unsetenv'; \\builtin unset -f -- 'unsetenv'; } "
            ">/dev/null 2>&1 || true && "
            f"eval '{inside}' < /dev/null && pwd -P >| {cwd_file}")


class Claude:
    """Spawns Bash tool calls as Claude Code does, as the test's user, in `cwd`."""

    def __init__(self, sandbox: Sandbox, *, spec: Path | None) -> None:
        self.sandbox = sandbox
        self.cwd_file = f"/tmp/claude-{secrets.token_hex(2)}-{os.getpid()}-cwd"
        snapshots = sandbox.home / ".claude" / "shell-snapshots"
        snapshots.mkdir(parents=True)
        self.snapshot = snapshots / "snapshot-bash-1765000000000-abc123.sh"
        self.snapshot.write_text("# Snapshot file\ngreet() { echo \"hello from the "
                                 "snapshot\"; }\nshopt -s expand_aliases\n")
        sandbox.chown()
        self.env = sandbox.env({"SHELL": "/bin/bash"} | (
            {"LNK_SANDBOX_SPEC": str(spec)} if spec is not None else {}))

    def bash(self, command: str, *, cwd: Path | None = None,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        line = f"{quote(PREFIX)} {quote(claude_command(command, self.snapshot, self.cwd_file))}"
        return subprocess.run([*self.sandbox.who.prefix, "/bin/bash", "-c", line],
                              cwd=cwd or self.sandbox.project, env=self.env, input=stdin,
                              capture_output=True, text=True, timeout=60)

    def reported_cwd(self) -> str | None:
        try:
            return Path(self.cwd_file).read_text()
        except FileNotFoundError:
            return None

    def cleanup(self) -> None:
        Path(self.cwd_file).unlink(missing_ok=True)


@pytest.fixture
def claude(sandbox: Sandbox) -> Iterator[Claude]:
    spec = sandbox.write_spec(SPEC)
    found = Claude(sandbox, spec=spec)  # Claude Code's snapshots folder made first
    allowed = sandbox.lnk("run", "--", "true", spec=SPEC)  # allowed once, as at a terminal
    assert allowed.returncode == 0, allowed.stderr
    yield found
    found.cleanup()


def test_a_bash_call_runs_inside_and_its_cwd_reaches_claude(claude: Claude,
                                                            sandbox: Sandbox) -> None:
    (sandbox.project / "sub").mkdir()
    sandbox.chown()
    done = claude.bash("cd sub && greet && echo \"it's $(pwd)\" && touch made.txt && "
                       "touch /tmp/only-inside && ls /tmp")
    sub = os.path.realpath(sandbox.project / "sub")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"hello from the snapshot\nit's {sub}\n")
    assert "only-inside" in done.stdout
    assert not Path("/tmp/only-inside").exists()  # the sandbox's /tmp, not the host's
    assert (sandbox.project / "sub" / "made.txt").exists()
    assert claude.reported_cwd() == f"{sub}\n"


def test_the_spec_holds_a_bash_call(claude: Claude, sandbox: Sandbox) -> None:
    secret = sandbox.home / "secret.txt"
    secret.write_text("host secret\n")
    sandbox.chown(secret)
    done = claude.bash(f"cat {secret}; touch {sandbox.home}/planted; exit 3")
    assert done.returncode == 3
    assert "host secret" not in done.stdout
    assert not (sandbox.home / "planted").exists()
    assert claude.reported_cwd() is None  # a failed call: Claude Code keeps its folder


def test_quotes_and_input_pass_whole(claude: Claude) -> None:
    done = claude.bash("printf '%s|' \"a b\" 'c'\"'\"'d' $'e\\tf'")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a b|c'd|e\tf|"
    # A hook's command reads its input on stdin; the prefix wraps hooks too.
    hook = subprocess.run([*claude.sandbox.who.prefix, PREFIX, "cat; echo done"],
                          cwd=claude.sandbox.project, env=claude.env, input='{"hook": 1}\n',
                          capture_output=True, text=True, timeout=60)
    assert (hook.returncode, hook.stdout) == (0, '{"hook": 1}\ndone\n'), hook.stderr


def test_a_spec_not_allowed_before_runs_nothing_and_says_the_command(
        sandbox: Sandbox) -> None:
    """Claude Code runs the prefix with no terminal and passes it no flag: the hint is
    the command the person runs at a terminal (never "pass --yes", which the prefix
    cannot take), for the folder Claude Code works in and every folder inside it; once
    run, a Bash call in a folder inside runs."""
    spec = sandbox.write_spec(SPEC + "\n# changed, so not allowed yet\n[env]\nset = { X = "
                              '"1" }\n', name="other.toml")
    claude = Claude(sandbox, spec=spec)
    try:
        done = claude.bash(f"touch {sandbox.project}/ran")
        command = f"lnk sandbox allow --spec {spec} --for {sandbox.project}"
        assert (done.returncode, done.stdout, done.stderr) == (125, "", (
            f"lnk-sandbox: the spec {spec} was not allowed before, and there is no "
            "terminal to ask on\n"
            f"  hint: allow it once at a terminal (it shows what it allows and asks): "
            f"{command}\n"))
        assert "--yes" not in done.stderr
        assert not (sandbox.project / "ran").exists()
        assert claude.reported_cwd() is None
        allowed = sandbox.lnk("allow", "--spec", str(spec), "--for", str(sandbox.project),
                              "--yes")
        assert allowed.returncode == 0, allowed.stderr
        (sandbox.project / "sub").mkdir()
        sandbox.chown()
        done = claude.bash(f"touch {sandbox.project}/sub/ran", cwd=sandbox.project / "sub")
        assert done.returncode == 0, done.stderr
        assert (sandbox.project / "sub" / "ran").exists()
    finally:
        claude.cleanup()
