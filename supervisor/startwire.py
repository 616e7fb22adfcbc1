"""The start server's wire: whom it serves, where it listens, and what is said on it.

A start server (`linux/startserver.py`) is the supervisor's modules loaded once, forking
a child per run (`linux/startrun.py`); the command line's thin client (`startclient.py`)
and the harness API (`lnk_sandbox/_server.py`) talk to it. This module is what both
sides share. The command line loads it on every start, so it imports only what the
interpreter has built in (os, sys, _socket), never the rest of the supervisor.

Whom a server serves. A run forked from the server inherits what the kernel confines
the server by, not what confines the caller: its uid and groups, capabilities,
no_new_privs and seccomp filters, namespaces, root, cgroup, LSM label, hard rlimits,
nice and OOM score. So a server serves only a caller confined exactly as it is
(`confinement`, read from /proc, compared on each connection by both sides): a process
in another sandbox (a namespace, a filter, no_new_privs of its own) never gets a run
less confined than itself, nor a sandbox's process posing as a server the caller's
argv, environment and descriptors. And it runs exactly the code the caller would
(`code_identity`: the interpreter, its module path, the variables its start reads).
Both make the server's name (`server_key`), a socket in `$LNK_HOME/server`, a folder of
this user's alone that no sandbox ever sees (`$LNK_HOME` is hidden from each).

The wire: a connection carries framed messages (a length, then items, each a length
and bytes), read as name/value pairs. The caller sends one request with its
descriptors (SCM_RIGHTS) and, while the run lasts, the signals it was sent; the run
answers `accepted` once it took the request (nothing ran before: a caller that hears
nothing more may start it elsewhere), then the outcome.
"""

from __future__ import annotations

import _socket
import os
import sys

SWITCH = "LNK_START_SERVER"  # unset/"0": off; "1": on; "required": fail rather than run without
FOLDER = "server"
PROTOCOL = b"lnk-start-server/1"
IDLE_SECONDS = 600.0  # an idle server ends after this long (LNK_START_SERVER_IDLE)
MAX_FDS = 250  # what one SCM_RIGHTS message carries (the kernel's SCM_MAX_FD is 253)
_MAX_MESSAGE = 1 << 24
_STATUS_LINES = (b"Uid:", b"Gid:", b"Groups:", b"NoNewPrivs:", b"Seccomp:",
                 b"Seccomp_filters:", b"CapInh:", b"CapPrm:", b"CapEff:", b"CapBnd:",
                 b"CapAmb:", b"Cpus_allowed_list:", b"Mems_allowed_list:")
_NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time",
               "time_for_children", "user", "uts")
_SO_PEERCRED = getattr(_socket, "SO_PEERCRED", None)  # Linux's; the server needs it
_SO_PEERPIDFD = 77  # Linux 6.5's, asm-generic's number (alpha, mips, parisc, sparc differ)
_PEERPIDFD_MACHINES = ("x86_64", "aarch64", "riscv64", "i686", "armv7l", "ppc64le",
                       "s390x", "loongarch64")


def switch() -> str:
    """"0" (off: unset, or 0/off/no/false), "1" (on: 1/on/yes/true; a run in-process
    where no server can serve) or "required" (status 125 where none can serve). Off by
    default: a server is a long-lived process holding the person's rights, and a
    person turns it on knowingly (docs/design.md, "The start server")."""
    value = os.environ.get(SWITCH, "").strip().lower()
    if value in ("1", "on", "yes", "true"):
        return "1"
    return "required" if value == "required" else "0"


def available() -> bool:
    """Whether this system has what the server needs: a peer's credentials on a unix
    socket (SO_PEERCRED) and /proc to read its confinement from."""
    return _SO_PEERCRED is not None and os.path.isdir("/proc/self/ns")


def lnk_home() -> str | None:
    """`$LNK_HOME` as `policy.Context.current` finds it, or None where that would ask
    more of the system (no $HOME, a relative path): the run then says why itself."""
    value = os.environ.get("LNK_HOME") or ""
    if not value:
        home = os.environ.get("HOME") or ""
        if not home:
            return None
        value = os.path.join(home, ".lnk")
    if not value.startswith("/"):
        return None
    value = os.path.normpath(value)
    return value[1:] if value.startswith("//") else value


# -- whom a server serves ---------------------------------------------------------------


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def confinement(proc: str = "/proc/self") -> bytes:
    """What the kernel confines the process at `proc` (/proc/self, /proc/PID) by, as
    one byte string: equal for two processes a run cannot tell apart. OSError where it
    cannot be read (the process is gone, or not this user's to look at)."""
    status = _read(f"{proc}/status")
    parts = [line for line in status.split(b"\n") if line.startswith(_STATUS_LINES)]
    for name in _NAMESPACES:
        try:
            info = os.stat(f"{proc}/ns/{name}")
        except FileNotFoundError:  # a kernel without this kind (time: before 5.6)
            parts.append(f"{name}:-".encode())
            continue
        parts.append(f"{name}:{info.st_dev}:{info.st_ino}".encode())
    root = os.stat(f"{proc}/root")
    parts.append(f"root:{root.st_dev}:{root.st_ino}".encode())
    parts.append(_read(f"{proc}/cgroup"))
    try:
        parts.append(b"lsm:" + _read(f"{proc}/attr/current"))
    except OSError:  # no LSM that labels processes (EINVAL)
        parts.append(b"lsm:-")
    # The hard limits (a run may lower a soft one to the caller's, never raise a hard
    # one), the nice value (field 19 of stat) and the OOM score's adjustment: what a
    # process cannot take back once lowered, it must share with its server.
    for line in _read(f"{proc}/limits").split(b"\n")[1:]:
        words = line[26:].split()
        if len(words) >= 2:
            parts.append(line[:26].strip() + b":" + words[1])
    stat = _read(f"{proc}/stat")
    parts.append(b"nice:" + stat[stat.rfind(b")") + 2:].split()[16])
    parts.append(b"oom:" + _read(f"{proc}/oom_score_adj").strip())
    return b"\n".join(parts)


def code_identity(mode: str, root: str) -> bytes:
    """What decides which code a run executes: the interpreter, the folder holding
    `supervisor`, and for the command line ("cli") its module path and the variables
    its start reads (PYTHON*); for the API ("api", started with -I as its supervisor
    always was) none of them. The locale decides the standard streams' encoding."""
    parts = [mode, sys.executable, root, sys.getfilesystemencoding(),
             sys.getfilesystemencodeerrors()]
    if mode == "cli":
        parts += [f"path:{entry}" for entry in sys.path]
    for name in sorted(os.environ):
        if name in ("LANG", "LANGUAGE") or name.startswith("LC_") or (
                mode == "cli" and name.startswith("PYTHON")):
            parts.append(f"{name}={os.environ[name]}")
    return "\0".join(parts).encode("utf-8", "surrogateescape")


def server_key(own_confinement: bytes, identity: bytes) -> str:
    """The server's name: a digest of whom it serves and of the code it runs."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]
    except ImportError:  # Python 3.12 and later name it _sha2
        from _sha2 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
    digest: str = sha256(own_confinement + b"\0\0" + identity).hexdigest()
    return digest[:32]


def code_root() -> str:
    """The folder holding the `supervisor` package this process runs."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- messages ---------------------------------------------------------------------------


def pack(fields: dict[bytes, bytes]) -> bytes:
    """A message: its length, then each name and value, each with its length."""
    body = b"".join(len(item).to_bytes(4, "little") + item
                    for pair in fields.items() for item in pair)
    return len(body).to_bytes(4, "little") + body


def unpack(body: bytes) -> dict[bytes, bytes]:
    """A message's fields; ValueError for anything that is not one."""
    items = []
    at = 0
    while at < len(body):
        if at + 4 > len(body):
            raise ValueError("a field's length is cut short")
        size = int.from_bytes(body[at:at + 4], "little")
        at += 4
        if size > len(body) - at:
            raise ValueError("a field runs past the message's end")
        items.append(body[at:at + size])
        at += size
    if len(items) % 2:
        raise ValueError("a field's name without its value")
    return dict(zip(items[::2], items[1::2], strict=True))


def send(sock: _socket.socket, fields: dict[bytes, bytes], fds: list[int] | tuple[int, ...]
         = ()) -> None:
    """Send one message, with `fds` on its first byte (SCM_RIGHTS)."""
    data = memoryview(pack(fields))
    if fds:
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        data = data[sent:]
    while data:
        data = data[sock.send(data):]


class Inbox:
    """The messages of one connection, as they come: whole ones, and the descriptors
    that came with them (each close-on-exec, for the reader to place)."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.data = b""
        self.fds: list[int] = []

    def take(self) -> dict[bytes, bytes] | None:
        """The next whole message already received, or None."""
        if len(self.data) < 4:
            return None
        size = int.from_bytes(self.data[:4], "little")
        if size > _MAX_MESSAGE:
            raise ValueError("a message longer than any the wire sends")
        if len(self.data) < 4 + size:
            return None
        body, self.data = self.data[4:4 + size], self.data[4 + size:]
        return unpack(body)

    def receive(self) -> bool:
        """Read what is there (blocking unless the socket is not); False at its end."""
        space = _socket.CMSG_SPACE(4 * (MAX_FDS + 3))
        data, ancillary, flags, _ = self.sock.recvmsg(1 << 16, space,
                                                      _socket.MSG_CMSG_CLOEXEC)
        for level, kind, rights in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                whole = len(rights) - len(rights) % 4
                self.fds += [int.from_bytes(rights[i:i + 4], sys.byteorder, signed=True)
                             for i in range(0, whole, 4)]
        if flags & _socket.MSG_CTRUNC:
            raise ValueError("more descriptors than a request may carry")
        self.data += data
        return bool(data)

    def next(self) -> dict[bytes, bytes] | None:
        """The next message, read as needed; None at the connection's end."""
        while (message := self.take()) is None:
            if not self.receive():
                return None
        return message

    def close_fds(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def peer(sock: _socket.socket) -> tuple[int, int, int]:
    """The (pid, uid, gid) of the process at the other end when it connected (or
    listened): SO_PEERCRED, in this process's namespaces."""
    assert _SO_PEERCRED is not None
    raw = sock.getsockopt(_socket.SOL_SOCKET, _SO_PEERCRED, 12)
    return (int.from_bytes(raw[0:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder),
            int.from_bytes(raw[8:12], sys.byteorder))


def _peer_pidfd(sock: _socket.socket, pid: int) -> int:
    """A pidfd of the process that connected: the kernel's own (SO_PEERPIDFD, Linux
    6.5), which no pid reused since can stand for; else one opened by its pid (a
    request's own pidfd, startrun._sent_by, then proves the sender is that process)."""
    if os.uname().machine not in _PEERPIDFD_MACHINES:
        return os.pidfd_open(pid)
    try:
        raw = sock.getsockopt(_socket.SOL_SOCKET, _SO_PEERPIDFD, 4)
    except OSError:  # ENOPROTOOPT before 6.5
        return os.pidfd_open(pid)
    fd = int.from_bytes(raw, sys.byteorder, signed=True)
    os.set_inheritable(fd, False)
    return fd


def peer_confined_as(sock: _socket.socket, own: bytes) -> str | None:
    """None when the process at the other end is this user's and confined as `own`
    says; else why not. A pidfd taken before /proc is read, and found still running
    after, keeps a pid reused meanwhile from being the one judged."""
    pid, uid, _ = peer(sock)
    if uid != os.geteuid():
        return f"uid {uid} is not this server's user ({os.geteuid()})"
    if pid <= 0:
        return "its process is in no namespace this one sees"
    try:
        pidfd = _peer_pidfd(sock, pid)
    except OSError:
        return "its process is gone"
    try:
        try:
            theirs = confinement(f"/proc/{pid}")
        except OSError as err:
            return f"its confinement cannot be read ({err.strerror})"
        import select  # a C module, no Python of its own

        if select.select([pidfd], [], [], 0)[0]:
            return "its process ended while it was looked at"
    finally:
        os.close(pidfd)
    if theirs != own:
        return "it is confined otherwise (namespaces, credentials, filters or limits)"
    return None
