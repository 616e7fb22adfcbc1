"""The terminal: handed to the sandbox as a shell hands it to a job, given back as it
was, and never written a character the sandbox chose raw.

The same on both OSes: the command runs in a process group of its own (bwrap's or
sandbox-exec's), made the terminal's foreground group while it runs, so it reads the
terminal and gets Ctrl-C itself; the supervisor takes the terminal back at the end, and
puts back the terminal's modes (termios: echo, canonical input, signals...), its line
discipline and exclusive mode, and the standard files' status flags as they were before
the run, whatever the sandbox did (`stty -echo`, raw mode left by a killed editor,
O_NONBLOCK, TIOCSETD, TIOCEXCL).

Facts (the tty layer's):
- tcsetattr() and tcflow() change the terminal itself, for every process using it: the
  shell after lnk reads with what the sandbox left. The sandbox shares the terminal (a
  program at a terminal works interactively), so it can change them; only lnk, which
  outlives it, can put them back.
- The same holds of what termios does not carry: the line discipline (TIOCSETD to N_NULL
  throws away all the shell reads and writes) and exclusive mode (TIOCEXCL: every later
  open but root's gets EBUSY, so ssh's, sudo's and pinentry's prompts fail). On Linux
  the seccomp filter refuses both inside (inner/seccomp.py); putting them back here
  holds where no filter does (macOS) and whatever else changed them.
- A process of a background group that calls tcsetattr() is sent SIGTTOU (stopped),
  unless it ignores the signal. The modes are put back only while lnk's group is the
  foreground one: in the background, the foreground job's modes are its own to keep.
- Text lnk writes (`say`, errors, describe, learn's table) holds names the sandbox chose:
  a program's path, a host's name, a file in a written folder. A terminal runs the
  escape sequences in them (ESC ] 0 ; title BEL sets the window's title, ESC [ 2 J clears
  the screen, some report back into the input), and a C1 control (U+0080 to U+009F;
  U+009B is CSI) does the same where the terminal takes 8-bit controls. So every such
  text is passed through `shown`, which writes every character that is not printable as
  an escape, `\\x1b`, `\\u009b`, one line whatever it holds; where the locale is not
  UTF-8, every non-ASCII character too (its UTF-8 bytes are controls for a terminal
  reading Latin-1).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from supervisor.system import is_macos

# -- what lnk writes ------------------------------------------------------------------------

_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UTF8: list[bool] = []  # the locale's answer, read once


def utf8_terminal() -> bool:
    """Whether the locale (LC_ALL, else LC_CTYPE, else LANG) says UTF-8."""
    if not _UTF8:
        name = next((os.environ[key] for key in ("LC_ALL", "LC_CTYPE", "LANG")
                     if os.environ.get(key)), "")
        _UTF8.append("utf-8" in name.lower() or "utf8" in name.lower())
    return _UTF8[0]


def shown(text: str, *, utf8: bool | None = None) -> str:
    """`text` as one line a terminal shows and never obeys: every character that is not
    printable written as an escape (`\\n`, `\\x1b`, `\\u202e`, `\\U000e0001`), a byte
    that was not UTF-8 (a lone surrogate of os.fsdecode) as `\\xNN`; non-ASCII kept only
    where the terminal is UTF-8 (`utf8`, the locale by default). The backslash is kept:
    what comes out is printable already, so showing it again changes nothing."""
    if text.isascii() and text.isprintable():
        return text
    wide = utf8_terminal() if utf8 is None else utf8
    out = []
    for char in text:
        code = ord(char)
        if 0x20 <= code < 0x7F or (code >= 0xA0 and wide and char.isprintable()):
            out.append(char)
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x80:
            out.append(_ESCAPES.get(char) or f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def shown_lines(lines: Iterable[str]) -> str:
    """Lines lnk laid out, each `shown`, each ending with a newline: a name holding a
    newline stays on its own line."""
    return "".join(shown(line) + "\n" for line in lines)


def shown_text(text: str) -> str:
    """A text of several lines written whole: its newlines kept, nothing else raw. Only
    for a text whose every line lnk laid out: a name holding a newline would start a
    line of its own here (`shown` each name instead)."""
    return "\n".join(shown(line) for line in text.split("\n"))


def shell_word(text: str, *, utf8: bool | None = None) -> str:
    """`text` as one word a shell (bash, zsh, ksh) reads back as exactly `text`, and one
    line a terminal shows and never obeys: shlex's quoting where `shown` keeps every
    character, else the $'...' form with each character `shown` escapes written as the
    same escape, which there stands for that character (`\\x1b`, `\\n`, `\\u202e`) or,
    for a byte that was not UTF-8, that byte (`\\xff`). A command lnk prints (`plan`'s
    bwrap line) can then be copied as it is, whatever its paths hold."""
    import shlex

    if shown(text, utf8=utf8) == text:
        return shlex.quote(text)
    return "$'" + "".join("\\" + char if char in "\\'" else shown(char, utf8=utf8)
                          for char in text) + "'"


def shell_line(words: Iterable[str], *, utf8: bool | None = None) -> str:
    """Words joined as a shell reads them back (`shell_word` each), on one line."""
    return " ".join(shell_word(word, utf8=utf8) for word in words)


# -- the terminal handed over and taken back ----------------------------------------------


def standard_streams() -> None:
    """Descriptors 0, 1 and 2 open, each that was closed (a harness may start lnk with
    `2>&-`) opened on /dev/null, and Python's stream for it made again.

    A closed one is taken by the next file lnk opens: the report, a file of `$LNK_HOME`
    being written, a folder; its notices would then be written into that file, and its
    children (the keeper, bwrap, the sandbox) would be handed it as their stdin, stdout
    or stderr (Python itself refuses to start on a folder there). /dev/null is what a
    closed stream means to them: nothing to read, nothing kept. Called first, before
    anything is opened."""
    import sys

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: `fd` itself
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        os.set_inheritable(fd, True)
        name = ("stdin", "stdout", "stderr")[fd]
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


def foreground_terminal() -> int | None:
    """The terminal on stdin when this process is in its foreground group, else None."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def give_terminal(fd: int | None, pgid: int) -> None:
    """Make `pgid` the terminal's foreground group. A background process asking for the
    terminal gets SIGTTOU, so it is ignored while asking."""
    if fd is None:
        return
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, pgid)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, previous)


def standard_flags() -> dict[int, int]:
    """The file status flags of stdin, stdout and stderr, as they are before a run.

    The sandbox shares these open files with the shell or harness that started it, and
    fcntl(F_SETFL) changes the open file itself: a program that leaves O_NONBLOCK set
    on the terminal breaks the shell's next read (EAGAIN) after the run."""
    import fcntl

    flags = {}
    for fd in (0, 1, 2):
        try:
            flags[fd] = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
    return flags


def restore_flags(flags: dict[int, int]) -> None:
    """Put back what a run changed of `standard_flags()` (O_NONBLOCK, O_APPEND...)."""
    import fcntl

    for fd, value in flags.items():
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) != value:
                fcntl.fcntl(fd, fcntl.F_SETFL, value)
        except OSError:
            continue


# Linux's tty ioctls (include/uapi/asm-generic/ioctls.h) that read back what TCSETS does
# not hold: the line discipline (TIOCGETD; termios has the number) and exclusive mode
# (TIOCGEXCL, Linux 3.8; termios lacks it). A BSD number differs, so TIOCGEXCL is read
# on Linux only; a Mac has no call that reads it back.
_TIOCGEXCL = 0x80045440


class Saved(NamedTuple):
    """One terminal as it was before the run: its termios modes, and what termios does
    not hold but a sandbox can change for good (None: this OS cannot read it back)."""

    attrs: list[Any]
    discipline: int | None  # TIOCGETD: 0 is N_TTY; N_NULL throws away all typed and shown
    exclusive: int | None  # TIOCGEXCL: 1 refuses every open but root's (EBUSY)


def _read_int(fd: int, request: int) -> int | None:
    import fcntl
    import struct

    try:
        (value,) = struct.unpack("i", fcntl.ioctl(fd, request, bytes(4)))
    except OSError:
        return None
    return int(value)


def terminal_modes() -> dict[int, Saved]:
    """The state (termios, line discipline, exclusive mode) of each terminal on stdin,
    stdout or stderr, one fd each. termios is imported only where a terminal is: a run
    without one (a harness's) loads nothing it does not use (test_start_path.py)."""
    modes: dict[int, Saved] = {}
    devices: set[int] = set()
    for fd in (0, 1, 2):
        try:
            if not os.isatty(fd):
                continue
            device = os.fstat(fd).st_rdev
        except OSError:
            continue
        if device in devices:
            continue
        import termios

        try:
            attrs = termios.tcgetattr(fd)
        except termios.error:
            continue
        getd = getattr(termios, "TIOCGETD", None)
        modes[fd] = Saved(attrs, None if getd is None else _read_int(fd, getd),
                          None if is_macos() else _read_int(fd, _TIOCGEXCL))
        devices.add(device)
    return modes


def restore_modes(modes: dict[int, Saved]) -> None:
    """Put back each terminal as `terminal_modes()` found it: its line discipline first
    (a new one starts from empty buffers), exclusive mode, then its modes, and restart
    its output (a sandbox's tcflow(TCOOFF) would leave it stopped), while lnk's process
    group is the terminal's foreground one. TIOCSETD, like tcsetattr, is sent SIGTTOU
    from the background (tty_check_change), so it too is ignored meanwhile. Where
    exclusive mode cannot be read back (a Mac has no TIOCGEXCL), it is cleared: the
    terminal lnk was started at is one a person's programs open (ssh's, sudo's prompts),
    never a serial line held exclusive, and a sandbox's TIOCEXCL would lock them out.

    The window size (TIOCSWINSZ) is left as it is: the person's terminal sets it again
    on every resize, and putting back the size from before the run would undo a resize
    made while it ran."""
    if not modes:
        return
    import fcntl
    import struct
    import termios

    for fd, saved in modes.items():
        try:
            if os.tcgetpgrp(fd) != os.getpgrp():
                continue
        except OSError:
            continue
        previous = _ignore_sigttou()
        try:
            if saved.discipline is not None \
                    and _read_int(fd, termios.TIOCGETD) != saved.discipline:
                _quietly(fcntl.ioctl, fd, termios.TIOCSETD, struct.pack("i", saved.discipline))
            if saved.exclusive is None:  # unreadable (a Mac): a person's terminal is not
                _quietly(fcntl.ioctl, fd, termios.TIOCNXCL)  # exclusive, so it is cleared
            elif _read_int(fd, _TIOCGEXCL) != saved.exclusive:
                _quietly(fcntl.ioctl, fd,
                         termios.TIOCEXCL if saved.exclusive else termios.TIOCNXCL)
            try:
                if termios.tcgetattr(fd) != saved.attrs:
                    termios.tcsetattr(fd, termios.TCSANOW, saved.attrs)
                termios.tcflow(fd, termios.TCOON)
            except termios.error:
                pass
        finally:
            _restore_sigttou(previous)


def _quietly(call: Callable[..., object], *args: Any) -> None:
    """One step of putting a terminal back: a step that fails (the terminal hung up)
    leaves the others to be tried."""
    try:
        call(*args)
    except OSError:
        pass


def _ignore_sigttou() -> Any:
    try:
        return signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    except ValueError:  # not the main thread: lnk is in the foreground, checked above
        return None


def _restore_sigttou(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTTOU, previous)


class Kept(NamedTuple):
    """What a run may change of the terminal and the standard files, as it was before."""

    flags: dict[int, int]
    modes: dict[int, Saved]


@contextmanager
def kept_terminal() -> Iterator[Kept]:
    """The standard files' flags and the terminal's modes saved now and put back when
    the block ends, however it ends (the command's own end, SIGKILL, a timeout, Ctrl-C,
    lnk's own error)."""
    kept = Kept(standard_flags(), terminal_modes())
    try:
        yield kept
    finally:
        restore_modes(kept.modes)
        restore_flags(kept.flags)
