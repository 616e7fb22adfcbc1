"""Run by root, the sockets `[network] unix` names are relayed by the supervisor.

A root-run sandbox runs as another uid (idmapped.py), and a daemon that checks its
peer's uid refuses it: ssh-agent answers only its own uid (and 0), so `ssh-add -l` in a
root-run sandbox given root's agent socket got its connection closed. The person named
the socket to hand it over as themselves. So, run by root, each named socket is bound
inside from a socket of the supervisor's own in the run's private folder ($LNK_HOME/run,
hidden from every sandbox), and each connection to it is relayed to the real socket by
the supervisor, whose uid the daemon sees: root's, as the person meant.

Threads, not the run's event loop: the relay must serve from before the command starts
to after it ends, in every mode, and a run without the proxy has no loop until a
program is watched. Each connection is two copies, one per direction; a half-closed
direction is passed on with shutdown(SHUT_WR), so a client reading to the end works.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Sequence

from ..errors import LaunchError

_CHUNK = 64 * 1024
# Connections relayed at once, per run: each costs the supervisor two threads and two
# descriptors outside the run's cgroups, so the sandbox must not choose how many (an
# agent socket needs a few; the proxy caps its own at 512 on one event loop).
MAX_CONNECTIONS = 64


class SocketRelay:
    """Listening sockets in the run's private folder, each relaying to a named socket."""

    def __init__(self, folder: str, targets: Sequence[str]) -> None:
        self.folder = folder
        self.listeners: list[tuple[socket.socket, str, str]] = []
        self.closed = threading.Event()
        self.room = threading.BoundedSemaphore(MAX_CONNECTIONS)
        try:
            for number, target in enumerate(targets):
                path = os.path.join(folder, f"relay-{number}.sock")
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(path)
                os.chmod(path, 0o600)  # the sandbox's through the idmapped bind alone
                listener.listen(16)
                self.listeners.append((listener, path, target))
        except OSError as err:
            self.close()
            raise LaunchError(f"cannot relay the named sockets: {err.strerror}",
                              errno=err.errno) from None
        for listener, _, target in self.listeners:
            threading.Thread(target=self._accept, args=(listener, target),
                             name="lnk-socket-relay", daemon=True).start()

    def relays(self) -> dict[str, str]:
        """Each named socket's relay: what the plan binds in its place (plan_for)."""
        return {target: path for _, path, target in self.listeners}

    def _accept(self, listener: socket.socket, target: str) -> None:
        while not self.closed.is_set():
            # Past the cap, new connections wait in the listener's backlog (then are
            # refused) until one of the relayed ones ends.
            while not self.room.acquire(timeout=0.5):
                if self.closed.is_set():
                    return
            try:
                inside, _ = listener.accept()
            except OSError:
                self.room.release()
                return
            try:
                outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                outside.connect(target)
            except OSError:
                inside.close()
                self.room.release()
                continue
            pair = _Pair(inside, outside, room=self.room)
            for source, sink in ((inside, outside), (outside, inside)):
                threading.Thread(target=_copy, args=(source, sink, pair),
                                 name="lnk-socket-relay", daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        for listener, path, _ in self.listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
            try:
                os.unlink(path)
            except OSError:
                pass


class _Pair:
    """A relayed connection's two sockets, closed once both directions are done."""

    def __init__(self, *sockets: socket.socket, room: threading.BoundedSemaphore) -> None:
        self.sockets = sockets
        self.left = len(sockets)
        self.lock = threading.Lock()
        self.room = room

    def done(self) -> None:
        with self.lock:
            self.left -= 1
            if self.left:
                return
        for sock in self.sockets:
            sock.close()
        self.room.release()


def _copy(source: socket.socket, sink: socket.socket, pair: _Pair) -> None:
    try:
        while chunk := source.recv(_CHUNK):
            sink.sendall(chunk)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        try:
            source.shutdown(socket.SHUT_RD)
        except OSError:
            pass
        pair.done()
