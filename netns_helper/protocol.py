"""What the supervisor and the network helper say to each other, and where it listens.

The control channel is a SOCK_SEQPACKET socketpair the helper inherits, so each message
arrives whole: one JSON object per message, descriptors beside it (SCM_RIGHTS).
1. The supervisor sends one `Job`: the sandbox to join and the listeners to make there.
2. The helper answers `{"ready": true, "listeners": [NAME, ...]}` with the listening
   sockets, in that order, as descriptors; or `{"error": TEXT, "step": STEP, "errno": N}`
   and exits 1. The supervisor accepts on those sockets itself: nothing the sandbox sends
   passes through the helper.
3. For the rest of the run the supervisor may ask `{"socket": 4}` (or 6): a new TCP
   socket made inside the sandbox's network namespace, which the helper sends back
   (`{"socket": true}` and the descriptor), for the supervisor to connect to a port the
   sandbox listens on (`[network] expose`); `{"error": ...}` when it cannot be made.
The channel's end of file tells the helper the supervisor is gone; the helper's death
(its pidfd) tells the supervisor the sandbox's network is.

Standard library only: the supervisor imports this module too. Not typing: it costs
the helper's start 3 ms (re, enum, contextlib), and every proxy-mode go waits for that
start; the tuples are collections.namedtuple's, typed for mypy alone.
"""

from __future__ import annotations

import json
from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    class _Listen(NamedTuple):
        name: str
        address: str
        port: int
        kind: str = "tcp"
        optional: bool = False

    class _Job(NamedTuple):
        pid: int
        net_inode: int
        listen: tuple[Listen, ...] = ()
else:
    _Listen = namedtuple("_Listen", "name address port kind optional",
                         defaults=("tcp", False))
    _Job = namedtuple("_Job", "pid net_inode listen", defaults=((),))

# Inside the sandbox's network namespace, on 127.0.0.1. Fixed, since the sandbox's
# environment names them before the helper exists (bwrap is given it at spawn).
HTTP_PORT = 3128
SOCKS_PORT = 1080
DNS_PORT = 53

# Exit statuses of the helper.
EXIT_DONE = 0  # the sandbox or the supervisor is gone: nothing left to serve
EXIT_FAILED = 1  # a step failed; the error was sent on the control channel

MAX_MESSAGE = 65536
MAX_LISTENERS = 200  # below SCM_MAX_FD (253) descriptors in one message


class Listen(_Listen):
    """One listener to make inside (`name`, `address`, `port`): `kind` tcp or udp; an
    `optional` one is left out where its address is not there (::1 without IPv6)."""

    __slots__ = ()


class Job(_Job):
    """What the helper joins and what it makes there (`listen`).

    `pid` is bwrap's pid-1 reaper (its `child-pid`), which is in every namespace of the
    sandbox; `net_inode` the inode bwrap reported for its network namespace, checked
    against what /proc/PID/ns/net opens, so a reused pid is never joined.
    """

    __slots__ = ()

    def encode(self) -> bytes:
        return json.dumps({"pid": self.pid, "net_inode": self.net_inode,
                           "listen": [list(item) for item in self.listen]}).encode()

    @staticmethod
    def decode(data: bytes) -> Job:
        fields: dict[str, Any] = json.loads(data)
        return Job(pid=int(fields["pid"]), net_inode=int(fields["net_inode"]),
                   listen=tuple(Listen(str(n), str(a), int(p), str(k), bool(o))
                                for n, a, p, k, o in fields.get("listen", [])))


def ready(names: list[str]) -> bytes:
    return json.dumps({"ready": True, "listeners": names}).encode()


def failure(step: str, text: str, errno: int | None = None) -> bytes:
    return json.dumps({"error": text, "step": step, "errno": errno}).encode()
