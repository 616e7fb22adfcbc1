"""Reaching a start server: its socket found in `$LNK_HOME/server`, or a server started.

Shared by the command line's thin client and the harness API, so it imports no more than
`startwire` does, but on the rare path that starts a server (json, fcntl).

A server is found by its name (`startwire.server_key`) in `$LNK_HOME/server`, a folder
the server made (through `host_files.PrivateFolder`: no link on the way, 0700, this
user's) and that the caller opens without following a link and finds so again. The
socket is reached through that open folder (`/proc/self/fd/N/NAME`), so a path longer
than a socket's address may be (108 bytes) is reached all the same, and a folder swapped
after the check is not the one connected to. The process answering must be this user's
and confined exactly as the caller (`startwire.peer_confined_as`): a sandbox's process
holding a socket there would not be.

None found (first use, idle timeout, an upgrade, a machine restart): one is started, in
a session of its own, with no descriptor of the caller's (the bootstrap closes them),
its standard files on /dev/null, and an environment of only what its start reads (the
module path's variables, the locale, HOME for the user's site): never the caller's
secrets, which each run gets from its own caller instead. It says `ready` once it
listens (or why it cannot, and the caller runs the command itself).
"""

from __future__ import annotations

import _socket
import os
import sys

from . import startwire

_START_WAIT = 30.0  # seconds a starting server may take (a loaded 2-CPU machine: ~0.3)
_BOOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linux", "startboot.py")

def open_folder(lnk_home: str) -> int | None:
    """`$LNK_HOME/server` opened (O_PATH) where it is a folder of this user's alone,
    made by a server; None otherwise (missing, a link, another's, open to others)."""
    try:
        fd = os.open(os.path.join(lnk_home, startwire.FOLDER),
                     os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def connect(folder: int, key: str, own: bytes) -> _socket.socket | None:
    """A connection to the server `key` in the open `folder`, answered by a process of
    this user's confined as `own`; None where there is none (or another answers)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.connect(f"/proc/self/fd/{folder}/{key}.sock")
        if startwire.peer_confined_as(sock, own) is None:
            return sock
    except OSError:
        pass
    sock.close()
    return None


def start(lnk_home: str, key: str, mode: str, root: str) -> str | None:
    """Start the server `key` and wait until it listens: None, or why it could not (the
    caller then runs the command itself). Several callers may start one at once: each
    server takes the folder's lock before it binds, and all but the first, finding one
    answering, say `ready` and end."""
    import json

    parent, child = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    config = {"mode": mode, "key": key, "lnk_home": lnk_home, "root": root,
              "path": sys.path if mode == "cli" else [root], "idle": _idle()}
    flags = ["-P"] if mode == "cli" else ["-I"]
    environment = {name: value for name, value in os.environ.items()
                   if name in ("HOME", "LANG", "LANGUAGE") or name.startswith("LC_")
                   or (mode == "cli" and name.startswith("PYTHON"))}
    try:
        pid = os.posix_spawn(
            sys.executable, [sys.executable, *flags, _BOOT, "lnk-start-server"],
            environment,
            file_actions=[(os.POSIX_SPAWN_DUP2, child.fileno(), 3),
                          (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDWR, 0),
                          (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)],
            setsid=True)
    except OSError as err:
        parent.close()
        child.close()
        return f"cannot start it: {err.strerror}"
    child.close()
    try:
        data = json.dumps(config).encode()
        parent.sendall(len(data).to_bytes(4, "little") + data)
        parent.settimeout(_START_WAIT)
        answer = b""
        while chunk := parent.recv(4096):
            answer += chunk
    except OSError as err:
        answer = f"no: it did not answer ({err.strerror or 'timed out'})".encode()
    finally:
        parent.close()
        os.waitpid(pid, 0)  # the first process of its start, which leaves at once
    text = answer.decode("utf-8", "replace").strip()
    return None if text == "ready" else text.removeprefix("no: ") or "it ended at once"


def _idle() -> float:
    text = os.environ.get("LNK_START_SERVER_IDLE", "")
    try:
        return max(1.0, float(text)) if text else startwire.IDLE_SECONDS
    except ValueError:
        return startwire.IDLE_SECONDS


def reach(mode: str, lnk_home: str, root: str) -> tuple[_socket.socket | None, str]:
    """A connection to the server for `mode` ("cli", "api"), started where there is
    none, and the server's key; or None, and why there is none."""
    own = startwire.confinement()
    key = startwire.server_key(own, startwire.code_identity(mode, root))
    folder = open_folder(lnk_home)
    if folder is not None:
        try:
            sock = connect(folder, key, own)
        finally:
            os.close(folder)
        if sock is not None:
            return sock, key
    problem = start(lnk_home, key, mode, root)
    if problem is not None:
        return None, problem
    folder = open_folder(lnk_home)
    if folder is None:
        return None, f"its folder {lnk_home}/{startwire.FOLDER} is not one of this user's alone"
    try:
        sock = connect(folder, key, own)
    finally:
        os.close(folder)
    return (sock, key) if sock is not None else (None, "it started, and no one answers")


def described(lnk_home: str) -> str:
    """Whether the command line's start server is on and runs, for `check`: it is
    asked (a ping, proven as a request is) where one answers."""
    wanted = startwire.switch()
    if wanted == "0":
        return f"off ({startwire.SWITCH}=1 turns it on)"
    if not startwire.available():
        return "on, but this system has no SO_PEERCRED or /proc: each run starts itself"
    own = startwire.confinement()
    key = startwire.server_key(own, startwire.code_identity("cli", startwire.code_root()))
    folder = open_folder(lnk_home)
    sock = None
    if folder is not None:
        try:
            sock = connect(folder, key, own)
        finally:
            os.close(folder)
    if sock is None:
        return f"on ({startwire.SWITCH}={wanted}), none running: the next run starts one"
    try:
        proof = os.pidfd_open(os.getpid())
        try:
            startwire.send(sock, {b"protocol": startwire.PROTOCOL, b"kind": b"ping",
                                  b"key": key.encode()}, [proof])
        finally:
            os.close(proof)
        sock.settimeout(5.0)
        answer = startwire.Inbox(sock).next() or {}
    except (OSError, ValueError):
        answer = {}
    finally:
        sock.close()
    pong = answer.get(b"pong", b"").decode("utf-8", "replace").split()
    if len(pong) != 3:
        return f"on ({startwire.SWITCH}={wanted}), one listening did not answer"
    import time

    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(pong[1])))
    return (f"on ({startwire.SWITCH}={wanted}), running: pid {pong[0]}, since {since}, "
            f"in {lnk_home}/{startwire.FOLDER}")
