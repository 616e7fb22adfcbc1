"""The command line's thin client: `lnk sandbox run` and `exec`, served by a start server.

`cli.main_lnk` and `cli.main_lnk_sandbox` call `serve` first. Where a server can serve
the command, it hands the server its argv, its environment, its working directory
(an O_PATH descriptor) and every descriptor it holds, at the same numbers (so `--spec
/dev/fd/5`, `--decide-fd 7`, a harness's leaked pipe behave as they do in-process); its
umask, rlimits, ignored and blocked signals are read from /proc by the run itself. It
then passes on the signals it is sent (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and exits with
the run's status: the run (`linux/startrun.py`) does everything an in-process `lnk`
does, in the same order, with the same code, and ends itself at once when this process
is gone, however it went (SIGKILL included), as an in-process lnk killed so would be.

It returns, and the command runs in this process as it always did, wherever the server
could change what the command sees or does:

- `LNK_START_SERVER` unset or 0 (the default: it is opt-in), or a system without
  SO_PEERCRED and /proc;
- a terminal on stdin, stdout or stderr: a run forked by the server is in no session of
  the terminal's, so the terminal could not be handed to the sandbox as a shell hands it
  to a job (its foreground group, Ctrl-C and Ctrl-Z straight to the command, its modes
  put back by lnk in the foreground); a person at a terminal keeps all of it;
- an interpreter started with options of its own (`python -X ... -m supervisor`);
- no server could be reached or started, or it refused this caller (confined otherwise).

With `LNK_START_SERVER=required` the last is an error (status 125) instead: for tests, and
for a harness that would rather know.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub; signal.py costs 1 ms
import _socket
import os
import sys

from . import startwire

TYPE_CHECKING = False
if TYPE_CHECKING:  # types and typing cost each start, for annotations alone
    from types import FrameType

SERVED = False  # set in a run a server forked: it never asks a server itself
_RELAYED = (2, 15, 1, 3)  # SIGINT, SIGTERM, SIGHUP, SIGQUIT (signal_forwarding.FORWARDED)
USAGE_STATUS = 125


def serve(entry: str) -> None:
    """Serve this process's command (`sys.argv`, as `entry` = "lnk" or "lnk-sandbox"
    reads it) through a start server, and exit with its status; return where it cannot
    be served (see the module's docstring), having changed nothing."""
    if SERVED:
        return
    words = sys.argv[2:] if entry == "lnk" else sys.argv[1:]
    if entry == "lnk" and sys.argv[1:2] != ["sandbox"]:
        return
    if not words or words[0] not in ("run", "exec"):
        return
    wanted = startwire.switch()
    if wanted == "0" or not startwire.available():
        return
    if sys.orig_argv[1:2] and sys.orig_argv[1].startswith("-"):
        return
    if any(os.isatty(fd) for fd in (0, 1, 2)):
        return
    home = startwire.lnk_home()
    if home is None:
        return
    _standard_streams()
    from . import startsocket

    why = ""
    for _attempt in range(2):  # a server ending as it was reached: once more, anew
        sock, detail = startsocket.reach("cli", home, startwire.code_root())
        if sock is None:
            why = detail
            break
        outcome = _run(sock, entry, key=detail)
        if isinstance(outcome, int):
            raise SystemExit(outcome)
        why = outcome
        if not why.startswith("ended"):
            break  # refused: asking again would be refused again
    if wanted == "required":
        from .events import say

        say(f"the start server could not serve this command ({why}), and "
            f"{startwire.SWITCH}=required asks for it")
        raise SystemExit(USAGE_STATUS)


def _standard_streams() -> None:
    """Descriptors 0, 1 and 2 open, /dev/null for each closed one, as
    `terminal.standard_streams` makes them in-process."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _open_fds(own: int) -> tuple[list[int], bytes]:
    """Every descriptor this process holds but `own`, and which are close-on-exec."""
    fds = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd == own:
            continue
        try:
            closing = not os.get_inheritable(fd)
        except OSError:
            continue  # the listing's own, closed since
        fds.append((fd, closing))
    fds.sort()
    return [fd for fd, _ in fds], ",".join("1" if c else "0" for _, c in fds).encode()


def _run(sock: _socket.socket, entry: str, *, key: str) -> int | str:
    """Hand the command to the server on `sock` and wait for its end: the exit status,
    or why it was not taken (nothing ran): "ended ..." when the server went away first
    (a server ending as it was reached: worth a second one), else a refusal."""
    try:
        fds, closing = _open_fds(sock.fileno())
        if len(fds) + 2 > startwire.MAX_FDS:
            return f"more than {startwire.MAX_FDS} descriptors to hand over"
        try:
            cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as err:
            return f"the working directory cannot be opened ({err.strerror})"
        fields = {b"protocol": startwire.PROTOCOL, b"kind": b"cli", b"key": key.encode(),
                  b"entry": entry.encode(),
                  b"argv": b"\0".join(os.fsencode(word) for word in sys.argv),
                  b"env": b"\0".join(k + b"=" + v for k, v in os.environb.items()),
                  b"fds": b",".join(str(fd).encode() for fd in fds),
                  b"cloexec": closing}
        proof = os.pidfd_open(os.getpid())  # this process sends it (startrun._sent_by)
        try:
            startwire.send(sock, fields, [proof, *fds, cwd])
        finally:
            os.close(cwd)
            os.close(proof)
        inbox = startwire.Inbox(sock)
        first = inbox.next()
        if first is not None and b"refused" in first:
            return f"it refused: {first[b'refused'].decode('utf-8', 'replace')}"
        if first is None or b"accepted" not in first:
            return "ended before it took the command"
        return _follow(sock, inbox)
    except (OSError, ValueError) as err:
        return f"ended before it took the command ({err})"
    finally:
        sock.close()


class _Relay:
    """The signals this process is sent, passed on to the run; the last one kept."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.last = 0

    def __call__(self, sig: int, frame: FrameType | None) -> None:
        self.last = sig
        try:
            startwire.send(self.sock, {b"signal": str(sig).encode()})
        except OSError:
            pass  # the run is gone: its end says how


def _follow(sock: _socket.socket, inbox: startwire.Inbox) -> int:
    """Relay signals until the run's status comes; the status to exit with."""
    relay = _Relay(sock)
    for sig in _RELAYED:
        if _signal.getsignal(sig) != _signal.SIG_IGN:  # ignored here: never sent on
            _signal.signal(sig, relay)
    try:
        message = inbox.next()
    except (OSError, ValueError):
        message = None
    if message is not None and b"status" in message:
        return int(message[b"status"])
    if message is not None and b"ended" in message:
        # The run's supervisor died without a status: as an in-process lnk would, by
        # the same signal (the one relayed to it, SIGKILL, the OOM killer's).
        wait_status = int(message[b"ended"])
        if os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            _signal.signal(number, _signal.SIG_DFL)
            os.kill(os.getpid(), number)
            return 128 + number
    from .events import say

    say("the start server's run of this command ended without its status (it was "
        "killed, or its server was): what the sandbox left is ended by its keeper, and "
        "at the next start")
    return USAGE_STATUS
