"""Red team, issue 26 item 4: the person's terminal, attacked through what termios does
not hold and through lnk's own words.

`lnk sandbox run` runs at a real pseudo-terminal of the test's own, as a shell starts a
job (lnk a session leader with the terminal, in the foreground); the test keeps the
terminal's other end, so what it finds after lnk returns is what the person's shell
finds. Each attack has its control: the same program run without lnk leaves the change
behind, so the check would see it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from support.red_team import escaped, need
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

N_TTY, N_NULL = 0, 27  # line disciplines (include/uapi/linux/tty.h)
TIOCGEXCL = 0x80045440


class Terminal(NamedTuple):
    status: int
    output: bytes
    found: Any  # what `look` found on the terminal once the program ended


def at_terminal(argv: list[str], *, cwd: Path, env: dict[str, str],
                look: Callable[[int, int, str], object], timeout: float = 60) -> Terminal:
    """Run `argv` as a job at a terminal of its own; once it ended, `look(master, slave,
    its name)` at the terminal it leaves to the person's shell."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    output, status = b"", None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and status is None:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    output += os.read(master, 65536)
                except OSError:
                    pass
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(wait_status)
        need(status is not None, f"still running after {timeout} s: {output!r}")
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        assert status is not None
        return Terminal(status, output, look(master, slave, name))
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
        os.close(slave)


def _command(sandbox: Sandbox, through_lnk: bool, code: str) -> list[str]:
    program = [PYTHON_INSIDE, "-c", code]
    return [*sandbox.who.prefix, *([LNK, "sandbox", "run", "--"] if through_lnk else []),
            *program]


def _works(master: int, slave: int, _name: str) -> tuple[int, str]:
    """The line discipline, and what becomes of text the shell writes."""
    (ldisc,) = struct.unpack("i", fcntl.ioctl(slave, termios.TIOCGETD, b"\0" * 4))
    try:
        os.write(slave, b"PROMPT$ ")
    except OSError as err:  # N_NULL's write: EOPNOTSUPP, the shell's prompt is lost
        return ldisc, f"write: {errno.errorcode.get(err.errno or 0, err)}"
    seen = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            seen += os.read(master, 4096)
        except OSError:
            break
    return ldisc, "shown" if b"PROMPT$ " in seen else "not shown"


SET_LDISC = (f"import fcntl, struct, sys, termios\nprint('CHANGING', flush=True)\n"
             f"fcntl.ioctl(0, termios.TIOCSETD, struct.pack('i', {N_NULL}))\n")


@pytest.mark.parametrize("through_lnk", [
    pytest.param(True, id="lnk", marks=escaped(
        "terminal.kept_terminal saves and puts back termios and the status flags only: a "
        "sandbox's ioctl(TIOCSETD, N_NULL) on the terminal it was handed (allowed by the "
        "seccomp filter) stays after lnk returns; the person's shell then reads nothing "
        "typed and every character it writes is thrown away")),
    pytest.param(False, id="control"),
])
def test_the_terminals_line_discipline_after_the_run(sandbox: Sandbox,
                                                     through_lnk: bool) -> None:
    run = at_terminal(_command(sandbox, through_lnk, SET_LDISC), cwd=sandbox.project,
                      env=sandbox.env({"TERM": "dumb"}), look=_works)
    need(b"CHANGING" in run.output, run.output)
    ldisc, shown = run.found
    if not through_lnk:  # the control: without lnk, the terminal stays broken
        need(ldisc == N_NULL and shown != "shown", run.found)
        return
    assert (ldisc, shown) == (N_TTY, "shown"), f"line discipline {ldisc}, the shell's text: {shown}"


EXCLUSIVE = ("import fcntl, termios\nprint('CHANGING', flush=True)\n"
             "fcntl.ioctl(0, termios.TIOCEXCL)\n")


def _opens(box: Sandbox) -> Callable[[int, int, str], object]:
    def look(_master: int, slave: int, name: str) -> object:
        (exclusive,) = struct.unpack("i", fcntl.ioctl(slave, TIOCGEXCL, b"\0" * 4))
        # The person's next program that opens the terminal (ssh's and sudo's password
        # prompts, gpg's pinentry, less's keys): /dev/tty is this terminal for it.
        code = ("import os, sys\ntry:\n    os.close(os.open(sys.argv[1], os.O_RDWR | "
                "os.O_NOCTTY))\n    print('OPENED')\nexcept OSError as err:\n"
                "    print('ERRNO', err.errno)\n")
        done = subprocess.run([*box.who.prefix, "/usr/bin/python3", "-c", code, name],
                              capture_output=True, text=True, timeout=30)
        return exclusive, done.stdout.strip()
    return look


@pytest.mark.parametrize("through_lnk", [True, False], ids=["lnk", "control"])
def test_the_terminal_opens_for_the_person_after_the_run(
        sandbox: Sandbox, through_lnk: bool, request: pytest.FixtureRequest) -> None:
    if through_lnk and not sandbox.who.is_root:
        request.applymarker(escaped(
            "terminal.kept_terminal does not undo TIOCEXCL: the terminal stays exclusive "
            "after the run, and the person's next program opening it (ssh's or sudo's "
            "prompt, pinentry, less) gets EBUSY; root opens it all the same"))
    look = _opens(sandbox)

    def owned(master: int, slave: int, name: str) -> object:
        os.chown(name, sandbox.who.uid, sandbox.who.gid)  # the person's own terminal
        return look(master, slave, name)

    run = at_terminal(_command(sandbox, through_lnk, EXCLUSIVE), cwd=sandbox.project,
                      env=sandbox.env({"TERM": "dumb"}), look=owned)
    need(b"CHANGING" in run.output, run.output)
    exclusive, opened = run.found
    if not through_lnk:
        need(exclusive == 1, run.found)
        need(opened == ("OPENED" if sandbox.who.is_root else f"ERRNO {errno.EBUSY}"),
             run.found)
        return
    assert opened == "OPENED", f"exclusive {exclusive}: the person's open gave {opened}"


NEW_GROUP = """
import os, signal, termios
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpgrp())
    modes = termios.tcgetattr(0)
    modes[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(0, termios.TCSANOW, modes)
    print("CHANGING", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.parametrize("through_lnk", [True, False], ids=["lnk", "control"])
def test_modes_changed_from_a_group_made_foreground_inside(sandbox: Sandbox,
                                                           through_lnk: bool) -> None:
    """Held: a process of the sandbox makes a group of its own the terminal's foreground
    one (lnk's check before restoring is that lnk's group is it), turns echo and
    canonical input off and exits; lnk takes the terminal back and puts them back."""
    def modes(_master: int, slave: int, _name: str) -> object:
        return termios.tcgetattr(slave)[3] & (termios.ECHO | termios.ICANON)

    run = at_terminal(_command(sandbox, through_lnk, NEW_GROUP), cwd=sandbox.project,
                      env=sandbox.env({"TERM": "dumb"}), look=modes)
    need(b"CHANGING" in run.output, run.output)
    if not through_lnk:
        need(run.found == 0, run.found)
        return
    assert run.found == termios.ECHO | termios.ICANON


HOSTILE_NAME = "\x1b]0;pwned\x07\x1b[2J\u009b31m.example"
SOCKS = r"""
import socket, struct, sys
print("STARTED", flush=True)
name = sys.argv[1].encode()
sock = socket.create_connection(("127.0.0.1", 1080), timeout=20)
sock.sendall(b"\x05\x01\x00")
assert sock.recv(2) == b"\x05\x00"
sock.sendall(bytes([5, 1, 0, 3, len(name)]) + name + struct.pack("!H", 443))
print("REPLY", sock.recv(10)[1], flush=True)
"""


def test_a_refused_hosts_name_reaches_the_terminal_escaped(sandbox: Sandbox) -> None:
    """Held: a SOCKS5 name is bytes the sandbox chooses (a window title, a screen clear,
    a C1 CSI); lnk's refusal names it, escaped, at the terminal."""
    spec = sandbox.write_spec('[files]\nread = ["."]\n[network]\nmode = "proxy"\n'
                             'allow = ["example.org"]\n')
    argv = [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(spec), "--yes",
            "--", PYTHON_INSIDE, "-c", SOCKS, HOSTILE_NAME]
    run = at_terminal(argv, cwd=sandbox.project, env=sandbox.env({"TERM": "xterm"}),
                      look=lambda *_: None)
    need(b"STARTED" in run.output and b"REPLY 2" in run.output, run.output)
    refusal = [line for line in run.output.split(b"\r\n") if b"lnk-sandbox: refused" in line]
    need(refusal, run.output)
    assert b"\x1b" not in run.output and "\u009b".encode() not in run.output, run.output
    # (the name as the proxy decides on it: lower case, what is not UTF-8 replaced)
    assert b"refused \\x1b]0;pwned\\x07\\x1b[2j" in refusal[0], refusal


FORGED = "app\nlnk-sandbox: nothing is held here, all clear\x1b[2J"


@escaped("cli.dispatch writes `lnk sandbox plan` through terminal.shown_text, which keeps "
         "a newline in a path: a repository a run made (a checkout there at the next "
         "launch) named with a line of lnk's own shows that line as lnk's")
def test_a_plans_lines_hold_what_a_run_named_on_one_line(sandbox: Sandbox) -> None:
    """A first run makes a repository whose folder's name holds a newline and a line
    that would pass for lnk's own; `lnk sandbox plan` in that folder's parent lists it
    (a checkout there at launch) and must show it escaped, on one line."""
    src = sandbox.home / "src"
    src.mkdir()
    sandbox.chown()
    done = sandbox.run("/usr/bin/python3", "-c", "import os, subprocess, sys\n"
                       "os.mkdir(sys.argv[1])\nsubprocess.run(['git', 'init', '-q', "
                       "sys.argv[1]], check=True)\nprint('MADE')", FORGED, cwd=src)
    need(done.stdout == "MADE\n", done.stderr)
    plan = sandbox.lnk("plan", cwd=src)
    need(plan.returncode == 0 and "/.git" in plan.stdout, plan.stderr)
    need("nothing is held here" in plan.stdout, plan.stdout)  # the name is in the plan
    assert "\x1b" not in plan.stdout
    forged = [line for line in plan.stdout.splitlines()
              if line.startswith("lnk-sandbox: nothing is held")]
    assert forged == [], forged


STI = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for request in (0x5412, 0x5412 | 1 << 32):  # TIOCSTI, and with a bit the kernel drops
    done = libc.syscall(16, 0, ctypes.c_ulong(request), ctypes.c_char_p(b"#"))
    print("STI", hex(request), 0 if done == 0 else ctypes.get_errno(), flush=True)
"""


@pytest.mark.parametrize("through_lnk", [True, False], ids=["lnk", "control"])
def test_typing_into_the_persons_terminal(sandbox: Sandbox, through_lnk: bool) -> None:
    """Held: TIOCSTI (CVE-2017-5226), and the same request with a high bit set, which
    the kernel truncates to 32 bits while a filter comparing 64 lets it by
    (CVE-2019-10063): refused inside; the control shows the kernel here allows both."""
    run = at_terminal(_command(sandbox, through_lnk, STI), cwd=sandbox.project,
                      env=sandbox.env({"TERM": "dumb"}), look=lambda *_: None)
    # (the control's injected `#` is echoed at the start of each line)
    results = [line.split("STI ", 1)[1].split() for line in run.output.decode().splitlines()
               if "STI " in line]
    need(len(results) == 2, run.output)
    if not through_lnk:
        need(results == [["0x5412", "0"], ["0x100005412", "0"]], results)
        return
    assert results == [["0x5412", str(errno.EPERM)], ["0x100005412", str(errno.EPERM)]]
