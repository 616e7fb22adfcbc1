"""What the supervisor and the network helper say to each other, and where they listen.

The control channel is a SOCK_SEQPACKET socketpair the helper inherits, so each message
arrives whole: one JSON object per message. The supervisor sends one `Job`; the helper
answers `{"ready": true}` once every listener inside is open, or
`{"error": TEXT, "step": STEP, "errno": N}` and exits 1. The channel then stays open for
the run: its end-of-file tells the helper the supervisor is gone.

The name service (DNS) is a unix stream socket of the supervisor's: one JSON line per
question (`{"id": N, "name": NAME, "type": QTYPE}`), one per answer (`{"id": N, "rcode":
"NOERROR" | "REFUSED" | "NXDOMAIN" | "SERVFAIL", "addresses": [...]}`), so the decision
and the lookup stay in the supervisor and the helper only speaks DNS's wire format.

Standard library only: the supervisor imports this module too.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

# Inside the sandbox's network namespace, on 127.0.0.1. Fixed, since the sandbox's
# environment names them before the helper exists (bwrap is given it at spawn).
HTTP_PORT = 3128
SOCKS_PORT = 1080
DNS_PORT = 53

# The supervisor's unix sockets, in the run's private folder.
HTTP_SOCKET = "http.sock"
SOCKS_SOCKET = "socks.sock"
DNS_SOCKET = "dns.sock"

# Exit statuses of the helper.
EXIT_DONE = 0  # the sandbox or the supervisor is gone: nothing left to serve
EXIT_FAILED = 1  # a step failed; the error was sent on the control channel

MAX_MESSAGE = 65536


class Job(NamedTuple):
    """What the helper joins and where it forwards.

    `pid` is bwrap's pid-1 reaper (its `child-pid`), which is in every namespace of the
    sandbox; `net_inode` the inode bwrap reported for its network namespace, checked
    against what /proc/PID/ns/net opens, so a reused pid is never joined. `run_dir` is
    the run's private folder holding the supervisor's sockets.
    """

    pid: int
    net_inode: int
    run_dir: str

    def encode(self) -> bytes:
        return json.dumps(self._asdict()).encode()

    @staticmethod
    def decode(data: bytes) -> Job:
        fields: dict[str, Any] = json.loads(data)
        return Job(pid=int(fields["pid"]), net_inode=int(fields["net_inode"]),
                   run_dir=str(fields["run_dir"]))


def ready() -> bytes:
    return b'{"ready": true}'


def failure(step: str, text: str, errno: int | None = None) -> bytes:
    return json.dumps({"error": text, "step": step, "errno": errno}).encode()
