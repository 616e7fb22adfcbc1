"""A run forked by the start server: made its caller's process, then today's run.

Forked from the single-threaded server, it is first made what an in-process `lnk` of
its caller would be, in this order:

1. every descriptor of the server's closed but its connection; signals as a fresh
   process has them (no wakeup fd, SIGCHLD at its default); a process group of its own,
   so that the server's and the runs' never meet;
2. the request read (10 seconds at most; its peer was judged by the server before the
   fork: this user's, confined exactly as the server), its key the server's own, sent
   by the process that connected (a pidfd of it: `_sent_by`), and `accepted` said;
3. the caller's descriptors placed at their own numbers, close-on-exec as they were;
   its working directory (from a descriptor); its umask, soft rlimits, ignored and
   blocked signals as /proc shows them for it; its environment, whole; its argv;
4. a thread that reads the caller's connection: each signal it passes on is raised in
   this process's main thread, where an in-process lnk would have received it; at the
   connection's end without a status given (the caller is gone, SIGKILL included) the
   run ends as an in-process lnk killed so would (the command line's: SIGKILL, its
   keeper then ending what bwrap left) or as the API's supervisor does when its harness
   goes (SIGTERM, passed to the command, killed after the grace);
5. the command line's own entry (`cli.main_lnk`), or the API's (`child.answer`); the
   status, or the API's result, sent; `os._exit`, running nothing of the server's.
"""

from __future__ import annotations

import _socket
import os
import signal
import sys
import threading
from typing import NoReturn

from .. import startwire

_REQUEST_WAIT = 10.0
_KINDS = (b"cli", b"api", b"ping")
PR_SET_NAME = 15


def run_child(conn: _socket.socket, *, mode: str, key: str, own: bytes,
              started: float) -> NoReturn:
    """Serve one connection, in a process just forked from the server; never returns."""
    status = 3
    try:
        status = _serve(conn, mode=mode, key=key, own=own, started=started)
    except BaseException:  # a bug of lnk-sandbox's: said on the caller's stderr, if placed
        try:
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
        status = 1
    finally:
        os._exit(status)


def _serve(conn: _socket.socket, *, mode: str, key: str, own: bytes, started: float) -> int:
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    mine = conn.fileno()
    os.closerange(3, mine)
    os.closerange(mine + 1, 1 << 20)
    os.setpgid(0, 0)
    pid = startwire.peer(conn)[0]  # judged by the server before it forked this run
    conn.settimeout(_REQUEST_WAIT)
    inbox = startwire.Inbox(conn)
    request = inbox.next()
    conn.settimeout(None)
    if request is None or request.get(b"protocol") != startwire.PROTOCOL or \
            request.get(b"kind") not in _KINDS or request.get(b"key") != key.encode():
        inbox.close_fds()
        _tell(conn, {b"refused": b"not a request this server takes (another version?)"})
        return 3
    if not _sent_by(pid, inbox):
        inbox.close_fds()
        _tell(conn, {b"refused": b"the request is not sent by the process that connected "
                                 b"(a relay's)"})
        return 3
    if request[b"kind"] == b"ping":
        _tell(conn, {b"pong": f"{os.getppid()} {started:.0f} {mode}".encode()})
        return 0
    _tell(conn, {b"accepted": b""})
    conn = _placed(conn, inbox, request)
    _as_caller(pid, request, cli=request[b"kind"] == b"cli")
    _name(f"lnk {pid}")
    done = threading.Event()
    threading.Thread(target=_relay, args=(inbox, request[b"kind"] == b"cli", done),
                     name="lnk-caller", daemon=True).start()
    if request[b"kind"] == b"cli":
        status = _command_line(request)
        _flush()
        done.set()
        _tell(conn, {b"status": str(status).encode()})
        return 0
    import json

    from ..child import answer

    result = answer(json.loads(request[b"request"]))
    _flush()
    done.set()
    _tell(conn, {b"result": json.dumps(result).encode()})
    return 0


def _sent_by(pid: int, inbox: startwire.Inbox) -> bool:
    """Whether the request's first descriptor is a pidfd of `pid`, the process whose
    credentials the connection carries (taken off the descriptors to place).

    SO_PEERCRED names the process that called connect(), not the one writing: a relay
    that copies bytes for another (lnk's own `[network] unix` relay, run by root, is
    one: socket_relay.py) would otherwise lend a sandbox its unconfined credentials. A
    relay forwards bytes, never descriptors, and no sandbox can open a pidfd of a
    process outside its pid namespace; so only the process that connected proves it."""
    if not inbox.fds:
        return False
    proof = inbox.fds.pop(0)
    try:
        info = startwire._read(f"/proc/self/fdinfo/{proof}")
        link = os.readlink(f"/proc/self/fd/{proof}")
    except OSError:
        return False
    finally:
        os.close(proof)
    found = [line.split(b":", 1)[1].strip() for line in info.split(b"\n")
             if line.startswith(b"Pid:")]
    return link == "anon_inode:[pidfd]" and found == [str(pid).encode()]


def _tell(conn: _socket.socket, fields: dict[bytes, bytes]) -> None:
    try:
        startwire.send(conn, fields)
    except OSError:
        pass  # the caller is gone: the relay ends the run


def _placed(conn: _socket.socket, inbox: startwire.Inbox, request: dict[bytes, bytes]
            ) -> _socket.socket:
    """The caller's descriptors at their own numbers, and its working directory; the
    connection moved above them all."""
    import fcntl

    targets = [int(n) for n in request[b"fds"].split(b",") if n]
    closing = request.get(b"cloexec", b"").split(b",")
    received = inbox.fds
    inbox.fds = []
    if len(received) != len(targets) + 1:
        raise ValueError("the descriptors sent are not the ones the request names")
    top = max([*targets, *received, conn.fileno(), 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top) for fd in received]
    raised = fcntl.fcntl(conn.fileno(), fcntl.F_DUPFD_CLOEXEC, top)
    for fd in (*received, conn.detach()):
        os.close(fd)
    conn = _socket.socket(fileno=raised)
    inbox.sock = conn
    for target, fd, flag in zip(targets, moved, closing, strict=False):
        os.dup2(fd, target, inheritable=flag != b"1")
    os.fchdir(moved[-1])
    for fd in moved:
        os.close(fd)
    return conn  # above every placed one: the next descriptor opened is what it would be


def _as_caller(pid: int, request: dict[bytes, bytes], *, cli: bool) -> None:
    """The caller's umask, soft limits, ignored (and, for the command line, blocked)
    signals, environment and argv."""
    status = {line.split(b":", 1)[0]: line.split(b":", 1)[1].strip()
              for line in startwire._read(f"/proc/{pid}/status").split(b"\n") if b":" in line}
    os.umask(int(status[b"Umask"], 8))
    _limits(startwire._read(f"/proc/{pid}/limits"))
    ignored = int(status[b"SigIgn"], 16)
    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP) or 32 <= number < 34:
            continue  # not to be caught, or glibc's own (its threads' cancellation)
        if ignored >> (number - 1) & 1:
            wanted: object = signal.SIG_IGN
        elif number == signal.SIGINT:
            wanted = signal.default_int_handler
        else:
            wanted = signal.SIG_DFL
        try:
            if signal.getsignal(number) != wanted:
                signal.signal(number, wanted)  # type: ignore[arg-type]
        except (OSError, ValueError):
            continue
    if cli:
        blocked = int(status[b"SigBlk"], 16)
        signal.pthread_sigmask(signal.SIG_SETMASK,
                               [n for n in range(1, signal.NSIG) if blocked >> (n - 1) & 1])
    environment = [entry.partition(b"=") for entry in request[b"env"].split(b"\0") if entry]
    os.environb.clear()
    os.environb.update({name: value for name, _, value in environment})
    if cli:
        sys.argv = [os.fsdecode(word) for word in request[b"argv"].split(b"\0")]


_LIMITS = {b"Max cpu time": "RLIMIT_CPU", b"Max file size": "RLIMIT_FSIZE",
           b"Max data size": "RLIMIT_DATA", b"Max stack size": "RLIMIT_STACK",
           b"Max core file size": "RLIMIT_CORE", b"Max resident set": "RLIMIT_RSS",
           b"Max processes": "RLIMIT_NPROC", b"Max open files": "RLIMIT_NOFILE",
           b"Max locked memory": "RLIMIT_MEMLOCK", b"Max address space": "RLIMIT_AS",
           b"Max file locks": "RLIMIT_LOCKS", b"Max pending signals": "RLIMIT_SIGPENDING",
           b"Max msgqueue size": "RLIMIT_MSGQUEUE", b"Max nice priority": "RLIMIT_NICE",
           b"Max realtime priority": "RLIMIT_RTPRIO", b"Max realtime timeout": "RLIMIT_RTTIME"}


def _limits(table: bytes) -> None:
    """Each soft limit as the caller's (its hard ones are this process's: the server
    serves only callers whose hard limits are its own)."""
    import resource

    for line in table.split(b"\n")[1:]:
        name = _LIMITS.get(line[:26].strip())
        words = line[26:].split()
        if name is None or len(words) < 2 or not hasattr(resource, name):
            continue
        which = getattr(resource, name)
        soft = resource.RLIM_INFINITY if words[0] == b"unlimited" else int(words[0])
        current, hard = resource.getrlimit(which)
        if soft != current:
            resource.setrlimit(which, (soft, hard))


def _name(text: str) -> None:
    """The process's name (comm, 15 bytes) says whose run it is: `ps` shows `lnk PID`."""
    try:
        from inner.syscalls import libc

        libc().prctl(PR_SET_NAME, text.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _relay(inbox: startwire.Inbox, cli: bool, done: threading.Event) -> None:
    """The caller's signals raised in the main thread; its going, the run's end."""
    main = threading.main_thread().ident
    assert main is not None
    while True:
        try:
            message = inbox.next()
        except (OSError, ValueError):
            message = None
        if message is None:
            if done.is_set():
                return
            if cli:
                os.kill(os.getpid(), signal.SIGKILL)
            signal.pthread_kill(main, signal.SIGTERM)
            return
        if b"signal" in message:
            number = int(message[b"signal"] or 0)
            if number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                signal.pthread_kill(main, number)
        elif b"kill" in message:
            os.kill(os.getpid(), signal.SIGKILL)


def _command_line(request: dict[bytes, bytes]) -> int:
    """`lnk` as the caller started it, in this process: its exit status."""
    from .. import cli, startclient

    startclient.SERVED = True
    entry = cli.main_lnk if request[b"entry"] == b"lnk" else cli.main_lnk_sandbox
    try:
        entry()
    except SystemExit as exit:
        code = exit.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        sys.stderr.write(f"{code}\n")
        return 1
    return 0


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
