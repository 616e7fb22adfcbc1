"""The network helper: `python -I -m netns_helper CTL_FD SUPERVISOR_PID` (the supervisor
runs `main` by -I -S -c, with this package's folder first on sys.path: helper_boot in
supervisor/linux/network.py).

Its steps, in this order:
1. die with the supervisor (PR_SET_PDEATHSIG), checking it is still the parent;
2. read the job (the sandbox's reaper pid, its network namespace's inode, the listeners);
3. on the host side, open the reaper's pidfd and namespaces (checked against bwrap's
   report);
4. join the user namespace, then the network namespace: every import is done by then and
   none started a thread, since a threaded process cannot join a user namespace;
5. make the listeners on 127.0.0.1 there (made now, they are the sandbox's), waiting for
   bwrap's loopback address, and hand them to the supervisor, which serves them itself;
6. until the sandbox's reaper exits or the supervisor's channel closes, make a socket
   inside whenever the supervisor asks for one (a port the sandbox exposes).

It imports the standard library only (_socket, not socket, whose enums cost its start 3
ms; no typing, no dataclasses), and nothing of it starts a thread: its start is
on the path of every proxy-mode start (the go waits for its listeners), so it loads no
event loop and no netlink library. Every failure before ready is sent to the supervisor
as structured data, which ends the run with status 125; after ready, the helper's death
does the same (the supervisor watches it), so the sandbox is never left with a silently
dead network.
"""

from __future__ import annotations

import _socket
import array
import errno
import json
import os
import select
import sys
import time

from .namespaces import JoinError, die_with_parent, join, open_namespaces
from .protocol import EXIT_DONE, EXIT_FAILED, MAX_MESSAGE, Job, Listen, failure, ready

LOOPBACK_WAIT = 10.0


def make_listener(item: Listen, deadline: float) -> _socket.socket | None:
    """One listener inside; None for an optional one whose address is not there.

    bwrap adds 127.0.0.1 to the sandbox's loopback concurrently (the helper never
    configures it: bwrap adds the address with NLM_F_EXCL and dies on EEXIST), so a bind
    before it is there fails with EADDRNOTAVAIL and is tried again. ::1 comes later
    still: the kernel adds it when bwrap sets the loopback up, after the address, so
    an optional one is tried again too while the namespace's IPv6 is on (taken for
    missing at once, a forward's [::1] was refused in one run of CI's). A listener needs
    no more than the address: nothing connects before the target runs, after bwrap's
    set-up.
    """
    family = _socket.AF_INET6 if ":" in item.address else _socket.AF_INET
    kind = _socket.SOCK_DGRAM if item.kind == "udp" else _socket.SOCK_STREAM
    while True:
        sock = _socket.socket(family, kind)
        try:
            if kind == _socket.SOCK_STREAM:
                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            sock.bind((item.address, item.port))
            if kind == _socket.SOCK_STREAM:
                sock.listen(1024)
            return sock
        except OSError as err:
            sock.close()
            coming = not item.optional or (family == _socket.AF_INET6 and _ipv6_on())
            if err.errno == errno.EADDRNOTAVAIL and coming and time.monotonic() < deadline:
                time.sleep(0.001)
                continue
            if err.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) and item.optional:
                return None
            raise JoinError("listen", f"listening on {item.address}:{item.port} inside: "
                            f"{err.strerror}", err.errno) from None


def _ipv6_on() -> bool:
    """Whether this network namespace's loopback takes IPv6 (read in the namespace the
    helper joined: /proc/sys/net answers for the reader's)."""
    try:
        with open("/proc/sys/net/ipv6/conf/lo/disable_ipv6", "rb") as setting:
            return setting.read().strip() == b"0"
    except OSError:
        return False


def serve(ctl: _socket.socket, pidfd: int) -> None:
    """Make sockets inside on request until the sandbox or the supervisor is gone."""
    while True:
        readable, _, _ = select.select([ctl.fileno(), pidfd], [], [])
        if pidfd in readable:
            return  # the sandbox's reaper exited
        try:
            message = ctl.recv(MAX_MESSAGE)
        except OSError:
            return
        if not message:
            return  # the supervisor is gone
        try:
            request = json.loads(message)
            family = {4: _socket.AF_INET, 6: _socket.AF_INET6}[request["socket"]]
            made = _socket.socket(family, _socket.SOCK_STREAM)
        except (ValueError, KeyError, TypeError) as err:
            _send(ctl, json.dumps({"error": f"not a request: {err}"}).encode())
            continue
        except OSError as err:
            _send(ctl, json.dumps({"error": err.strerror}).encode())
            continue
        try:
            _send(ctl, b'{"socket": true}', [made.fileno()])
        finally:
            made.close()


def run(ctl: _socket.socket, parent: int) -> int:
    try:
        die_with_parent(parent)
        message = ctl.recv(MAX_MESSAGE)
        if not message:
            return EXIT_DONE
        job = Job.decode(message)
        namespaces = open_namespaces(job.pid, job.net_inode)
        join(namespaces)
        namespaces.close()
        deadline = time.monotonic() + LOOPBACK_WAIT
        made = [(item.name, make_listener(item, deadline)) for item in job.listen]
    except JoinError as err:
        _send(ctl, failure(err.step, err.message, err.errno))
        return EXIT_FAILED
    except Exception as err:
        _send(ctl, failure("helper", f"{type(err).__name__}: {err}"))
        return EXIT_FAILED
    listeners = [(name, sock) for name, sock in made if sock is not None]
    _send(ctl, ready([name for name, _ in listeners]), [s.fileno() for _, s in listeners])
    for _, sock in listeners:
        sock.close()  # the supervisor's now; the helper keeps no way into them
    serve(ctl, namespaces.pidfd)
    return EXIT_DONE


def _send(ctl: _socket.socket, message: bytes, fds: list[int] | None = None) -> None:
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))] if fds \
        else []
    try:
        ctl.sendmsg([message], ancillary)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not all(a.isdigit() for a in args):
        sys.stderr.write("usage: python -m netns_helper CTL_FD SUPERVISOR_PID\n")
        raise SystemExit(2)
    ctl = _socket.socket(fileno=int(args[0]))
    os.set_inheritable(ctl.fileno(), False)
    raise SystemExit(run(ctl, int(args[1])))
