"""The person's terminal, attacked from inside: what lnk prints of the sandbox's choosing
reaches it escaped, and its modes are as they were once lnk returns, however the run
ended. Run at a real pseudo-terminal of its own (support/processes.in_terminal), lnk
its session leader in the foreground, as a shell starts a job."""

from __future__ import annotations

import os
import signal
import termios
from pathlib import Path

import pytest

from support.processes import in_terminal
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

# Names a program the sandbox writes and runs may have, each with how lnk shows it: a
# window title and a screen clear, a C1 CSI (U+009B, which a terminal taking 8-bit
# controls obeys), a line of its own that would pass for lnk's, a right-to-left
# override, a byte that is not UTF-8 with a blink.
HOSTILE = {
    b"t\x1b]0;pwned\x07\x1b[2J": "t\\x1b]0;pwned\\x07\\x1b[2J",
    "c1\u009b31m".encode(): "c1\\u009b31m",
    b"nl\nlnk-sandbox: all clear": "nl\\nlnk-sandbox: all clear",
    "bidi\u202etxt.exe".encode(): "bidi\\u202etxt.exe",
    b"raw\xff\x1b[5m": "raw\\xff\\x1b[5m",
}
# The attacker: makes each file executable in the working directory and runs it; the
# list refuses them (Landlock: EACCES), the exec watch names them. Then it writes an
# escape sequence of its own to the terminal: the terminal receives what the sandbox
# writes itself (it is the sandbox's to use), which shows the check below sees one.
ATTACKER = r"""
import os, sys
print("STARTED", flush=True)
for name in [bytes.fromhex(n) for n in sys.argv[1:]]:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o755)
    os.write(fd, b"no program: the list refuses it before the kernel reads it\n")
    os.close(fd)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(b"./" + name, [name])
            except OSError as err:
                os._exit(err.errno)
        print("EXEC", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
    except OSError as err:
        print("FORK", err.errno, flush=True)
sys.stdout.buffer.write(b"OWN\x1b[0mWRITE\n")
"""
LISTED = f'[files]\nwrite = ["."]\n[commands]\nprograms = ["{PYTHON_INSIDE}"]\n'


@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
def test_a_refused_programs_name_reaches_the_terminal_escaped(sandbox: Sandbox) -> None:
    spec = sandbox.write_spec(LISTED)
    argv = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes", "--",
            PYTHON_INSIDE, "-c", ATTACKER, *(name.hex() for name in HOSTILE)]
    run = in_terminal(argv, cwd=sandbox.project, env=sandbox.env({"TERM": "xterm"}))
    lines = run.output.decode("utf-8", "replace").split("\r\n")
    assert lines[0] == "STARTED", run.output
    assert lines.count(f"EXEC {13}") == len(HOSTILE), run.output  # EACCES, each tried
    # The sandbox's own escape reached the terminal raw: the terminal shows what it gets.
    assert "OWN\x1b[0mWRITE" in lines
    # lnk's lines: each name escaped, on its one line; nothing else of lnk's is there.
    said = [line for line in lines if line.startswith("lnk-sandbox:")]
    built = ("built inside a folder the sandbox writes, so never listed by learn; run it "
             "outside or list it by path")  # the programs are made in the written folder
    assert said == [f"lnk-sandbox: refused {sandbox.project}/{shown} (not in [commands]): "
                    f"{built}" for shown in HOSTILE.values()], run.output
    rest = run.output.replace(b"OWN\x1b[0mWRITE", b"")
    for raw in (b"\x1b", b"\x07", b"\xc2\x9b", b"\xe2\x80\xae", b"\xff"):
        assert raw not in rest, (raw, run.output)
    assert run.status == 0


INSIDE_CHANGED = ("stty {modes}; stty -a | tr ' ;' '\\n\\n' | grep -qx -- -echo && "
                  "echo CHANGED; ")
ENDINGS = {  # how the run ends -> (what lnk is given, the command's script, typed, status)
    "its own exit": ([], "exit 3", (), 3),
    "SIGKILL": ([], "kill -9 $$", (), 128 + signal.SIGKILL),
    "a timeout": (["--timeout", "3"], "sleep 60", (), 124),
    "Ctrl-C": ([], "sleep 60", ((b"CHANGED", b"\x03"),), 128 + signal.SIGINT),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_terminals_modes_are_as_before_after_the_run(sandbox: Sandbox,
                                                        ending: str) -> None:
    """Echo off, canonical input off, raw-ish: the terminal is as it was once lnk returns,
    whether the command exits, is SIGKILLed, runs out its time or gets Ctrl-C."""
    options, script, typed, status = ENDINGS[ending]
    command = INSIDE_CHANGED.format(modes="-echo -icanon -ixon min 1") + script
    # bash: dash, between echo and sleep, sometimes lets a Ctrl-C go by (at a bare
    # terminal too, 4 times in 15 here); bash and python never did.
    argv = [*sandbox.who.prefix, LNK, "sandbox", "run", *options, "--", "/bin/bash", "-c",
            command]
    run = in_terminal(argv, cwd=sandbox.project, env=sandbox.env({"TERM": "dumb"}),
                      typed=typed)
    assert b"CHANGED" in run.output, run.output  # the modes did change, inside
    assert run.status == status, run.output
    assert run.after == run.before, _differences(run.before, run.after)
    assert run.after[3] & termios.ECHO and run.after[3] & termios.ICANON


def test_the_control_a_lasting_change_is_seen(tmp_path: Path) -> None:
    """Without lnk, the same change stays after the program ends: what the test above
    compares would catch it."""
    argv = ["/bin/sh", "-c", INSIDE_CHANGED.format(modes="-echo -icanon") + "exit 0"]
    run = in_terminal(argv, cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    assert b"CHANGED" in run.output
    assert run.after != run.before
    assert not run.after[3] & termios.ECHO


def _differences(before: list[object], after: list[object]) -> str:
    names = ["iflag", "oflag", "cflag", "lflag", "ispeed", "ospeed", "cc"]
    return ", ".join(f"{n}: {b!r} -> {a!r}" for n, b, a in zip(names, before, after,
                                                                 strict=True) if a != b)
