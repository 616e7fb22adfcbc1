"""The start server: the supervisor's modules loaded once, a child forked for each run.

Started on first use by a client (`startsocket.start`), it listens on
`$LNK_HOME/server/KEY.sock` and, for each connection of this user's, forks a child that
does everything an in-process `lnk` does (`startrun.py`). What it is, and why it may be:

- It holds the person's rights for as long as it lives, so only the same user reaches
  it: the socket is in a folder of theirs alone (0700, made through
  `host_files.PrivateFolder`), inside `$LNK_HOME`, which every sandbox has hidden; the
  peer's uid is checked on every connection (SO_PEERCRED) before anything else, another
  uid's connection closed unread; then, still before it forks or reads a word, that the
  peer is confined exactly as this server (`startwire.confinement`), so a process in
  any sandbox, ours or another tool's, never gets a run less confined than itself, nor
  makes the server fork at all.
- It carries nothing from one run to the next: it reads nothing a client sends (the run,
  forked, reads the request), runs nothing but `fork`, holds no cache a run fills (each
  child's are its own and go with it), and every run gets its caller's environment,
  descriptors, working directory, umask, rlimits and signals, never the server's or a
  previous caller's. What it keeps is what a fresh `lnk` would load: the modules.
- It is single-threaded, with no event loop, whenever it forks (checked before it says
  it is ready): each child starts its threads and loop as a fresh `lnk` would.
- It ends when the installation changes (inotify watches, set before any module of the
  project beyond this one is loaded, on the packages' folders, every folder of the module
  path, and the interpreter): the next connection is told `stale` and its client starts
  a new server; when its socket is removed or replaced; and after `idle` seconds without
  a connection (LNK_START_SERVER_IDLE, 600 by default) with no run of its own going on.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from typing import Any

from .. import startwire
from .startwatch import InstallWatch

# What a run may load, loaded once (each from the module path the client gave): the
# command line and the API's doors, a run on Linux, the exec watch, the network and its
# proxy, the event loop they run under. Not supervisor.proxy.relay, which reads tuning
# variables of the environment as it is imported (a run reads its own caller's).
PRELOAD = (
    "supervisor.cli", "supervisor.api", "supervisor.run", "supervisor.child",
    "supervisor.backends", "supervisor.linux.backend", "supervisor.linux.supervise",
    "supervisor.linux.notify", "supervisor.linux.probes", "supervisor.linux.idmapped",
    "supervisor.person_settings", "supervisor.below_top", "supervisor.describe",
    "supervisor.permissions", "supervisor.linux.watch", "supervisor.linux.network",
    "supervisor.linux.startrun", "supervisor.commit_check", "supervisor.stages",
    "supervisor.environment_paths", "supervisor.fish_variables", "supervisor.hard_links",
    "supervisor.hg_settings", "supervisor.home_hidden", "supervisor.home_places",
    "supervisor.hook_text", "supervisor.mountinfo", "supervisor.nonamespace",
    "supervisor.once_per_start", "supervisor.runs_as_you",
    "supervisor.settings_named", "supervisor.shell_words", "supervisor.tool_settings",
    "subprocess", "socket", "locale", "fnmatch", "json", "resource", "fcntl", "anyio",
    "uvloop",
)


def main(config: dict[str, Any]) -> None:
    """The server's life, from the bootstrap in `startsocket` (descriptor 3 is the
    client that started it: `ready`, or `no: WHY`, is said there)."""
    os.closerange(4, 1 << 20)  # nothing of the client that started it
    watch = InstallWatch(startwire.code_root(), sys.path)
    try:
        server = _open(config, watch)
    except Exception as err:  # said to the client, which runs the command itself
        _say(f"no: {type(err).__name__}: {err}")
        return
    if server is None:
        _say("ready")  # another server of this key answers
        return
    _say("ready")
    server.serve()


def _say(text: str) -> None:
    try:
        os.write(3, text.encode("utf-8", "replace"))
    except OSError:
        pass
    os.close(3)


def _open(config: dict[str, Any], watch: InstallWatch) -> Server | None:
    """The server, listening, its modules loaded; None when one of this key answers."""
    mode, key, lnk_home = str(config["mode"]), str(config["key"]), str(config["lnk_home"])
    own = startwire.confinement()
    identity = startwire.code_identity(mode, str(config["root"]))
    if startwire.server_key(own, identity) != key:
        raise RuntimeError("this server would serve other callers than the one starting "
                           "it (its confinement or code differs)")
    from ..host_files import PrivateFolder

    home = PrivateFolder.lnk_home(lnk_home)
    assert home is not None
    with home:
        folder = home.folder(startwire.FOLDER)
    assert folder is not None
    import fcntl

    lock = folder.open(f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        from ..startsocket import connect

        answering = connect(folder.fd, key, own)
        if answering is not None:
            answering.close()
            folder.close()
            return None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        path = f"/proc/self/fd/{folder.fd}/{key}.sock"
        try:
            os.unlink(path)  # a dead server's (none answers; the lock is held)
        except FileNotFoundError:
            pass
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(64)
        listener.setblocking(False)
    finally:
        os.close(lock)
    watch.folder(folder.fd, f"{key}.sock")
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            continue  # an optional one (uvloop) not installed here
    import gc
    import threading

    # What is loaded now is shared with every run forked after: frozen, the collector
    # of a run never walks (and so never copies) the server's objects, page by page.
    gc.collect()
    gc.freeze()
    if threading.active_count() != 1:
        raise RuntimeError("a module loaded started a thread; a fork would copy a "
                           "process whose other threads are gone")
    return Server(mode, key, own, listener=listener, folder=folder.fd, watch=watch,
                  idle=float(config["idle"]))


class Server:
    """The listening socket, the watch on the installation, and the runs forked."""

    def __init__(self, mode: str, key: str, own: bytes, *, listener: socket.socket,
                 folder: int, watch: InstallWatch, idle: float) -> None:
        self.mode, self.key, self.own = mode, key, own
        self.listener, self.folder, self.watch, self.idle = listener, folder, watch, idle
        self.runs: dict[int, socket.socket] = {}  # pid -> its connection, for `ended`
        self.started = time.time()
        self.socket_id = os.stat(f"/proc/self/fd/{folder}/{key}.sock").st_ino

    def serve(self) -> None:
        wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a run ended: reap it
        import select

        deadline = time.monotonic() + self.idle
        stale = False
        while True:
            self._reap()
            if self.watch.changed():
                stale = True
                break
            left = deadline - time.monotonic()
            if left <= 0 and not self.runs:
                break
            readable, _, _ = select.select([self.listener.fileno(), self.watch.fd, wake_read],
                                           [], [], max(left, 1.0))
            if wake_read in readable:
                while _drained(wake_read):
                    pass
            if self.listener.fileno() in readable:
                if self._accept():
                    stale = True
                    break
                deadline = time.monotonic() + self.idle
        self._end(stale)

    def _accept(self, *, stale: bool = False) -> bool:
        """Take each waiting connection: a run forked for each of this user's, or, once
        the installation changed (or `stale`), each told `stale` and closed. Whether it
        changed."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return stale
            _, uid, _ = startwire.peer(conn)
            if uid != os.geteuid():
                conn.close()  # another user's: never read, never forked for
                continue
            problem = startwire.peer_confined_as(conn, self.own)
            if problem is not None:  # a sandbox's process (any tool's): never forked for
                self._tell(conn, {b"refused": problem.encode()})
                conn.close()
                continue
            stale = stale or self.watch.changed()
            if stale:
                self._tell(conn, {b"stale": b""})
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                from .startrun import run_child

                self._forget(conn)
                run_child(conn, mode=self.mode, key=self.key, own=self.own,
                          started=self.started)
            self.runs[pid] = conn

    def _forget(self, keep: socket.socket) -> None:
        """In a run just forked: the server's sockets let go of without closing (the
        run closes every descriptor but its own at once)."""
        self.listener.detach()
        for conn in self.runs.values():
            if conn is not keep:
                conn.detach()
        self.runs.clear()
        self.watch.forget()

    def _reap(self) -> None:
        """Reap ended runs; each one's client that heard no status hears how it ended."""
        while self.runs:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.runs.pop(pid, None)
            if conn is not None:
                self._tell(conn, {b"ended": str(wait_status).encode()})
                conn.close()

    @staticmethod
    def _tell(conn: socket.socket, fields: dict[bytes, bytes]) -> None:
        try:
            conn.send(startwire.pack(fields), socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
        except OSError:
            pass  # its client is gone, or heard its status and went

    def _end(self, stale: bool) -> None:
        """Stop listening: the socket removed first (while it is still this server's),
        then every connection already waiting served, or told `stale`."""
        try:
            path = f"/proc/self/fd/{self.folder}/{self.key}.sock"
            if os.stat(path).st_ino == self.socket_id:
                os.unlink(path)
        except OSError:
            pass
        self._accept(stale=stale)
        self.listener.close()


def _drained(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False
