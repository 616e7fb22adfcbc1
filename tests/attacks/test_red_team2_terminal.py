"""Red team 2 (issue 26 item 4's class): what a program leaves on the person's terminal
beyond termios, the line discipline and TIOCEXCL (another branch's): output stopped
with tcflow(TCOOFF), which no termios restore undoes (held), and the window size set
with TIOCSWINSZ (the person's next `ls`, `less` and editor lay out for 10 columns).

lnk runs at a real pseudo-terminal of the test's own, as a shell starts a job
(support in test_red_team_terminal.py); after it returns, the test looks at the
terminal as the person's shell finds it. Each has its control: the same program run
without lnk leaves the change behind.
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import struct
import termios

import pytest

from attacks.test_red_team_terminal import _command, at_terminal
from support.red_team import escaped, need
from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

SIZE = struct.pack("HHHH", 40, 120, 0, 0)


def _shown(master: int, slave: int) -> str:
    """Whether text the person's shell writes reaches the screen (a non-blocking write:
    a stopped terminal would block it for ever)."""
    flags = fcntl.fcntl(slave, fcntl.F_GETFL)
    fcntl.fcntl(slave, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        os.write(slave, b"PROMPT$ ")
    except OSError as err:
        return f"write: {errno.errorcode.get(err.errno or 0, err)}"
    finally:
        fcntl.fcntl(slave, fcntl.F_SETFL, flags)
    seen = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            seen += os.read(master, 4096)
        except OSError:
            break
    return "shown" if b"PROMPT$ " in seen else "not shown"


def _size(slave: int) -> tuple[int, ...]:
    return struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))[:2]


STOP = ("import termios\nprint('CHANGING', flush=True)\n"
        "termios.tcflow(0, termios.TCOOFF)\n")
RESIZE = ("import fcntl, struct, termios\nprint('CHANGING', flush=True)\n"
          "fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 5, 10, 0, 0))\n")


@pytest.mark.parametrize("through_lnk", [
    pytest.param(True, id="lnk"), pytest.param(False, id="control")])
def test_output_stopped_inside_stays_stopped(sandbox: Sandbox, through_lnk: bool) -> None:
    """Held: tcflow(TCOOFF) inside; the person's shell's next prompt is shown."""
    def look(master: int, slave: int, _name: str) -> str:
        shown = _shown(master, slave)
        termios.tcflow(slave, termios.TCOON)  # let the test's own terminal go
        return shown

    found = at_terminal(_command(sandbox, through_lnk, STOP), cwd=sandbox.project,
                        env=sandbox.env(), look=look)
    need(b"CHANGING" in found.output, f"never started: {found.output!r}")
    if through_lnk:
        assert found.found == "shown", found
    else:
        need(found.found != "shown", f"the control left output running: {found}")


@pytest.mark.parametrize("through_lnk", [
    pytest.param(True, id="lnk", marks=escaped(
        "terminal.kept_terminal does not save and restore the window size "
        "(TIOCGWINSZ/TIOCSWINSZ): a size set inside stays, and the person's programs "
        "lay out for it until the terminal is resized")),
    pytest.param(False, id="control"),
])
def test_the_window_size_set_inside_stays(sandbox: Sandbox, through_lnk: bool) -> None:
    def look(_master: int, slave: int, _name: str) -> tuple[int, ...]:
        return _size(slave)

    argv = _command(sandbox, through_lnk, RESIZE)
    # the size the person's terminal has before: set by a first run that changes none
    found = at_terminal(["/bin/sh", "-c", 'stty rows 40 cols 120 && exec "$@"', "sh",
                         *argv], cwd=sandbox.project, env=sandbox.env(), look=look)
    need(b"CHANGING" in found.output, f"never started: {found.output!r}")
    if through_lnk:
        assert found.found == (40, 120), found
    else:
        need(found.found == (5, 10), f"the control's size did not stay: {found}")
