"""The network helper: `python -I -m netns_helper CTL_FD SUPERVISOR_PID`.

Its steps, in this order:
1. die with the supervisor (PR_SET_PDEATHSIG), checking it is still the parent;
2. read the job (the sandbox's reaper pid, its network namespace's inode, the run folder);
3. on the host side, open all it needs: the run folder, the reaper's pidfd and namespaces
   (checked against bwrap's report);
4. join the user namespace, then the network namespace: every import is done by then and
   none started a thread, since a threaded process cannot join a user namespace;
5. wait for bwrap's loopback (up, with 127.0.0.1), through pyroute2;
6. open the listeners on 127.0.0.1 (made now, they are the sandbox's), say ready;
7. serve until the sandbox's reaper exits or the supervisor's channel closes.

Every failure before ready is sent to the supervisor as structured data, which ends the
run with status 125; after ready, the helper's death does the same (the supervisor
watches it), so the sandbox is never left with a silently dead network.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time

# Imported here, before joining: none of these starts a thread (a test pins that), and
# nothing may be imported after the join that would need the host's view.
from pyroute2 import IPRoute  # type: ignore[import-untyped]

try:  # the faster loop where installed; it starts no thread either
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
    uvloop = None  # type: ignore[assignment]

from . import bridge
from .namespaces import JoinError, Namespaces, die_with_parent, join, open_namespaces
from .protocol import (
    DNS_PORT,
    EXIT_DONE,
    EXIT_FAILED,
    HTTP_PORT,
    HTTP_SOCKET,
    MAX_MESSAGE,
    SOCKS_PORT,
    SOCKS_SOCKET,
    Job,
    failure,
    ready,
)

IFF_UP = 0x1
LOOPBACK_WAIT = 10.0


def wait_loopback(timeout: float = LOOPBACK_WAIT) -> None:
    """Wait until bwrap has brought `lo` up with 127.0.0.1 (it does so concurrently).

    The helper never configures it itself: bwrap adds the address with NLM_F_EXCL and
    dies on EEXIST, so doing its work first would break the sandbox's start.
    """
    deadline = time.monotonic() + timeout
    with IPRoute() as ipr:
        while True:
            indexes = ipr.link_lookup(ifname="lo")
            if indexes:
                link = ipr.get_links(indexes[0])[0]
                addresses = {a.get_attr("IFA_ADDRESS")
                             for a in ipr.get_addr(index=indexes[0], family=socket.AF_INET)}
                if link["flags"] & IFF_UP and "127.0.0.1" in addresses:
                    return
            if time.monotonic() > deadline:
                raise JoinError("loopback", "the sandbox's loopback never came up with "
                                "127.0.0.1")
            time.sleep(0.002)


def _listen() -> tuple[list[tuple[socket.socket, str]], socket.socket, socket.socket]:
    try:
        return ([(bridge.listen_tcp(HTTP_PORT), HTTP_SOCKET),
                 (bridge.listen_tcp(SOCKS_PORT), SOCKS_SOCKET)],
                bridge.listen_tcp(DNS_PORT), bridge.listen_udp(DNS_PORT))
    except OSError as err:
        raise JoinError("listen", f"listening on 127.0.0.1 inside: {err.strerror}",
                        err.errno) from None


async def _serve(ctl: socket.socket, namespaces: Namespaces, run_dir: str,
                 listeners: tuple[list[tuple[socket.socket, str]], socket.socket,
                                  socket.socket]) -> None:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_said_once)
    stop = asyncio.Event()

    def on_ctl() -> None:
        try:
            if ctl.recv(MAX_MESSAGE):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        stop.set()  # the supervisor is gone

    ctl.setblocking(False)
    loop.add_reader(ctl.fileno(), on_ctl)
    loop.add_reader(namespaces.pidfd, stop.set)  # the sandbox's reaper exited
    forwards, dns_tcp, dns_udp = listeners
    forwards = [(sock, os.path.join(run_dir, name)) for sock, name in forwards]
    await bridge.serve(forwards, dns_tcp, dns_udp, run_dir, stop)


_said: set[str] = set()


def _said_once(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
    """An error in one connection's callback: one line on stderr, never a traceback."""
    error = context.get("exception")
    text = f"{type(error).__name__}: {error}" if error else str(context.get("message"))
    if text not in _said and len(_said) < 16:
        _said.add(text)
        sys.stderr.write(f"lnk-sandbox: network helper: {text}\n")


def run(ctl: socket.socket, parent: int) -> int:
    try:
        die_with_parent(parent)
        message = ctl.recv(MAX_MESSAGE)
        if not message:
            return EXIT_DONE
        job = Job.decode(message)
        try:
            folder = os.open(job.run_dir, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as err:
            raise JoinError("open run folder", f"{job.run_dir}: {err.strerror}",
                            err.errno) from None
        # A short path to every socket, whatever the folder's length (sun_path: 108).
        run_dir = f"/proc/self/fd/{folder}"
        namespaces = open_namespaces(job.pid, job.net_inode)
        join(namespaces)
        namespaces.close()
        wait_loopback()
        listeners = _listen()
    except JoinError as err:
        _send(ctl, failure(err.step, err.message, err.errno))
        return EXIT_FAILED
    except Exception as err:
        _send(ctl, failure("helper", f"{type(err).__name__}: {err}"))
        return EXIT_FAILED
    _send(ctl, ready())
    serving = _serve(ctl, namespaces, run_dir, listeners)
    if uvloop is not None:
        uvloop.run(serving)
    else:
        asyncio.run(serving)
    return EXIT_DONE


def _send(ctl: socket.socket, message: bytes) -> None:
    try:
        ctl.send(message)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not all(a.isdigit() for a in args):
        sys.stderr.write("usage: python -m netns_helper CTL_FD SUPERVISOR_PID\n")
        raise SystemExit(2)
    ctl = socket.socket(fileno=int(args[0]))
    os.set_inheritable(ctl.fileno(), False)
    raise SystemExit(run(ctl, int(args[1])))
