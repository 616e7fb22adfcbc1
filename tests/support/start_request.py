"""A hand-made request to a start server, as an attacker would send it (stdlib only: it
also runs inside a sandbox, under the sandbox's own python).

    start_request.py SOCKET CWD [--no-proof] -- ARGV...

connects to SOCKET, sends a `cli` request for ARGV (argv of `lnk`, as the command line's
client sends it: supervisor/startclient.py) with this process's environment, its
standard files and CWD, and a pidfd of itself first (the proof that it is the process
that connected; `--no-proof` leaves it out), then prints each answer's names as
`ANSWER name=value` and `CLOSED` at the connection's end. `CONNECT errno=N` where the
connection itself is refused.
"""

from __future__ import annotations

import os
import socket
import sys

PROTOCOL = b"lnk-start-server/1"


def pack(fields: dict[bytes, bytes]) -> bytes:
    body = b"".join(len(item).to_bytes(4, "little") + item
                    for pair in fields.items() for item in pair)
    return len(body).to_bytes(4, "little") + body


def unpack(body: bytes) -> dict[bytes, bytes]:
    items = []
    at = 0
    while at < len(body):
        size = int.from_bytes(body[at:at + 4], "little")
        items.append(body[at + 4:at + 4 + size])
        at += 4 + size
    return dict(zip(items[::2], items[1::2], strict=False))


def main() -> None:
    split = sys.argv.index("--")
    path, cwd, *options = sys.argv[1:split]
    argv = sys.argv[split + 1:]
    key = os.path.basename(path).removesuffix(".sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as err:
        print(f"CONNECT errno={err.errno}", flush=True)
        return
    fields = {b"protocol": PROTOCOL, b"kind": b"cli", b"key": key.encode(),
              b"entry": b"lnk", b"argv": b"\0".join(os.fsencode(a) for a in argv),
              b"env": b"\0".join(k + b"=" + v for k, v in os.environb.items()),
              b"fds": b"0,1,2", b"cloexec": b"0,0,0"}
    fds = [0, 1, 2, os.open(cwd, os.O_PATH | os.O_DIRECTORY)]
    if "--no-proof" not in options:
        fds.insert(0, os.pidfd_open(os.getpid()))
    data = pack(fields)
    rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
    try:
        sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        sock.sendall(data[sent:])
    except OSError as err:  # closed unread: the answers (if any) are still there
        print(f"SEND errno={err.errno}", flush=True)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            chunk = b""
        received += chunk
        while len(received) >= 4 and len(received) >= 4 + int.from_bytes(received[:4],
                                                                           "little"):
            size = int.from_bytes(received[:4], "little")
            for name, value in unpack(received[4:4 + size]).items():
                print(f"ANSWER {name.decode()}={value.decode('utf-8', 'replace')}",
                      flush=True)
            received = received[4 + size:]
        if not chunk:
            print("CLOSED", flush=True)
            return


if __name__ == "__main__":
    main()
