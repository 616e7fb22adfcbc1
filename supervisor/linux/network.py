"""The network on Linux beyond bwrap's namespaces: proxy mode, ports, unix sockets.

`none` and `host` alone need nothing here: bwrap's --unshare-net (none, the default, and
proxy) leaves the sandbox its own loopback only, and host shares the host's. Then:
- proxy mode adds to the plan a read-only /etc/resolv.conf naming 127.0.0.1, made in the
  run's folder (`NetworkRun.resolv_conf`; run_mounts.py binds it), to the environment the
  proxy variables (`proxy_environment`);
- `[network] unix` adds a read-only bind of each named socket at its own path
  (run_mounts.py), and its variable (SSH_AUTH_SOCK) to the environment;
- proxy mode, `forward` and `expose` add to the run `NetworkRun`: the netns_helper process
  that joins the sandbox's namespaces and makes the listeners inside (the proxy's, and
  each forwarded port's), which it hands to the supervisor to serve; the inner's go waits
  for them. Exposed ports are bound on the host's loopback before bwrap starts.

Facts:
- bwrap's `--json-status-fd` gives `{"child-pid": N, "net-namespace": INODE, ...}` once
  the sandbox exists, and `{"exit-code": N}` when it ends. The first line is read a byte
  at a time, so the exit line stays in the pipe for `Supervision.finish`.
- The helper is spawned from the main thread, which lives for the whole run: its
  PR_SET_PDEATHSIG follows the thread that forked it. It is spawned when the run's
  network is opened, before bwrap, so that its interpreter's start overlaps bwrap's and
  the inner's; it is handed its job (the sandbox to join) by the status thread as soon
  as bwrap reports the sandbox, and its listeners come back before that thread sends
  the go (`hand_off`). It gets a process group of its own, so a signal meant for the
  supervisor's group reaches the target (through the supervisor) and not the helper.
- A listener the helper made takes connections (the kernel completes the handshake, a
  datagram waits in its buffer) before anything accepts them: the proxy and its event
  loop are loaded when one is readable (`wake_fds`), not before the go, so a command that
  never connects never loads them, and the first connection waits for them instead of
  every start (issue 21).
- A listening socket keeps the network namespace it was made in: the supervisor accepts
  on the helper's, from its own namespace, and the connection is the sandbox's.
- A path socket is reached through the file system, whatever the network namespace:
  binding the socket's inode at its path (bwrap makes a file there) is all it takes.
- /etc/resolv.conf may be a link (to /run/systemd/resolve/stub-resolv.conf, say): bwrap
  cannot mount over a link (it tries to create the file where it points, in a folder it
  may only read), so the file is mounted where the link leads, and the link inside,
  which is the host's, leads to it.
"""

from __future__ import annotations

import array
import errno
import functools
import json
import os
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

from netns_helper.protocol import (
    DNS_PORT,
    HTTP_PORT,
    MAX_LISTENERS,
    MAX_MESSAGE,
    SOCKS_PORT,
    Job,
    Listen,
)

from ..errors import HelperError, LaunchError
from .layout import RESOLV_CONF, ResolvConfHost
from .run_mounts import PLAN_SOURCE

__all__ = ["PLAN_SOURCE", "RESOLV_CONF", "NetworkRun", "ResolvConfHost", "proxy_environment"]

if TYPE_CHECKING:
    from ..events import EventLog
    from ..grants import Snapshot
    from ..netpolicy import Decide
    from ..proxy.runfolder import RunFolder
    from ..proxy.upstream import Gate
    from .supervise import Served, Supervision

READY_TIMEOUT = 30.0


def helper_boot() -> str:
    """The helper's entry: its package beside this supervisor's (the same checkout, never
    another installation's), run with -I -S, since it imports the standard library only:
    no site, no .pth file of the environment runs on the way (3 ms of its start)."""
    from ..installation import inner_source

    root = os.path.dirname(inner_source())
    return (f"import sys;sys.path.insert(0,{root!r});"
            "from netns_helper.main import main;main()")


def proxy_environment() -> dict[str, str]:
    """The proxy variables for the helper's fixed ports inside the sandbox."""
    from ..netpolicy import proxy_environment as variables

    return variables(HTTP_PORT, SOCKS_PORT)


class NetworkRun:
    """The run's network beyond bwrap's namespaces: the proxy (proxy mode), forwarded
    and exposed ports, and the helper that joins the sandbox for them.

    The inner's go waits for `hand_off`, which makes the helper's listeners the
    supervisor's, so the target never starts before its way out is there. A helper that
    fails to start, or dies before the sandbox ends, ends the run with status 125
    (`Supervision.fail`).
    """

    def __init__(self, snapshot: Snapshot, events: EventLog, decide: Decide | None,
                 folder: RunFolder | None, exposed: dict[int, list[socket.socket]]):
        self.snapshot = snapshot
        self.events = events
        self.decide = decide
        self.gate: Gate | None = None
        self.folder = folder
        self.exposed = exposed
        self.handed: dict[str, list[socket.socket]] | None = None
        self.handed_off = threading.Event()  # hand_off is over, whatever came of it
        self._net_inode: int | None = None
        self.helper_pid: int | None = None
        self._helper_pidfd: int | None = None
        self._reaper_pidfd: int | None = None
        self._ctl: socket.socket | None = None
        self._ctl_lock: Any = None

    @staticmethod
    def open(snapshot: Snapshot, events: EventLog, decide: Decide | None = None
             ) -> NetworkRun:
        """Make what must be there before bwrap (the run's folder, exposed ports' host
        listeners) and spawn the helper; LaunchError when an exposed port is taken.
        Nothing here loads the event loop's or the proxy's modules: that is done in
        `service`, while bwrap and the inner start."""
        from ..proxy.runfolder import RunFolder

        folder = None
        exposed: dict[int, list[socket.socket]] = {}
        run = None
        try:
            if snapshot.settings.network_mode == "proxy":
                folder = RunFolder.open(snapshot.lnk_home)
            for port in snapshot.network.expose:
                try:
                    exposed[port] = listen_host(port)
                except OSError as err:
                    raise LaunchError(
                        f"[network] expose: port {port} of the host's loopback cannot be "
                        f"listened on: {err.strerror}",
                        hint="stop what listens there, or expose another port",
                        errno=err.errno) from None
            run = NetworkRun(snapshot, events, decide, folder, exposed)
            run._ctl = run._spawn_helper()
        except BaseException:
            if run is not None:
                run.close()
            else:
                for sockets in exposed.values():
                    for sock in sockets:
                        sock.close()
                if folder is not None:
                    folder.close()
            raise
        return run

    def _open_gate(self) -> None:
        """The proxy's decisions, lookups and decider (proxy mode), made in the loop."""
        if self.snapshot.settings.network_mode != "proxy":
            return
        from ..proxy.gate import open_gate
        from .routes import KernelOwn
        from .socket_filter import KernelHere

        self.gate = open_gate(self.snapshot, self.events, self.decide, own=KernelOwn,
                              here=KernelHere())
        if self._net_inode is not None:
            from .peers import describe_peer, pid_of_peer

            self.gate.find_pid = functools.partial(pid_of_peer, self._net_inode)
            if self.gate.decider is not None:
                self.gate.decider.describe_peer = functools.partial(describe_peer,
                                                                    self._net_inode)

    def listeners(self) -> tuple[Listen, ...]:
        """What the helper makes inside: the proxy's, then each forwarded port's."""
        wanted: list[Listen] = []
        if self.snapshot.settings.network_mode == "proxy":
            wanted += [Listen("http", "127.0.0.1", HTTP_PORT),
                       Listen("socks", "127.0.0.1", SOCKS_PORT),
                       Listen("dns-tcp", "127.0.0.1", DNS_PORT),
                       Listen("dns-udp", "127.0.0.1", DNS_PORT, "udp")]
        for port in self.snapshot.network.forward:
            wanted += [Listen(f"forward-{port}", "127.0.0.1", port),
                       Listen(f"forward-{port}", "::1", port, optional=True)]
        return tuple(wanted)

    def served(self) -> Served:
        """What `supervise` needs: the service, the hand-off before the go, and the fds
        whose readiness needs the service."""
        from .supervise import Served

        return Served(self.service, self.hand_off, self.wake_fds)

    def wake_fds(self) -> list[int]:
        """What the service is needed for once readable: a listener (a connection or a
        datagram waits), the helper's pidfd (it died); none once the sandbox ended."""
        if self._reaper_pidfd is not None and _readable(self._reaper_pidfd):
            return []  # the sandbox ended: the helper goes with it, nothing is served
        fds = [s.fileno() for sockets in (self.handed or {}).values() for s in sockets]
        fds += [s.fileno() for sockets in self.exposed.values() for s in sockets]
        if self._helper_pidfd is not None and self.handed_off.is_set():
            fds.append(self._helper_pidfd)
        return fds

    def resolv_conf(self) -> str:
        """The sandbox's resolv.conf in this run's own folder (proxy mode), which the plan
        binds: the folder exists before the plan is built, so the plan names it at once."""
        return self.folder.resolv_conf if self.folder is not None else PLAN_SOURCE

    async def service(self, supervision: Supervision) -> None:
        """Serve the network and keep the helper for the run (a task in the run's loop)."""
        import anyio

        self._ctl_lock = anyio.Lock()
        try:
            self._open_gate()
            if not self.handed_off.is_set():  # an exposed port's connection came first
                await anyio.to_thread.run_sync(self.handed_off.wait, abandon_on_cancel=True)
            async with anyio.create_task_group() as group:
                if self.handed is not None:
                    group.start_soon(self._serve, self.handed)
                    await self._keep_helper()
                group.cancel_scope.cancel()
        except BaseExceptionGroup as group_error:
            problems = group_error.subgroup(HelperError)
            if problems is None:
                first = group_error.exceptions[0]
                supervision.fail(HelperError(
                    f"the network proxy failed: {type(first).__name__}: {first}"))
            else:
                problem = problems.exceptions[0]
                assert isinstance(problem, HelperError)
                supervision.fail(problem)
        except HelperError as problem:
            supervision.fail(problem)
        finally:
            self._stop_helper()

    def hand_off(self, supervision: Supervision) -> bool:
        """Hand the helper its job and take the listeners it made (`handed`), in the
        status thread before the go; HelperError when it failed. False, and no go, when
        the sandbox ended first (finish() says why)."""
        try:
            self.handed = self._hand_off(supervision.launched.json_status,
                                         supervision.launched.pidfd)
        finally:
            self.handed_off.set()
        supervision.poke()  # wait_sync watches the listeners from now on
        return self.handed is not None

    def _hand_off(self, status_fd: int, bwrap: int) -> dict[str, list[socket.socket]] | None:
        status = _read_status_line(status_fd)
        if status is None:
            return None  # bwrap ended before making the sandbox
        pid, net = status.get("child-pid"), status.get("net-namespace")
        if not isinstance(pid, int) or not isinstance(net, int):
            raise HelperError(f"bubblewrap reported no sandbox pid and network namespace "
                              f"({status})")
        try:
            self._reaper_pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        self._net_inode = net
        ctl = self._ctl
        assert ctl is not None
        ctl.send(Job(pid=pid, net_inode=net, listen=self.listeners()).encode())
        import select

        readable, _, _ = select.select([ctl.fileno(), bwrap], [], [], READY_TIMEOUT)
        if ctl.fileno() not in readable:
            if bwrap in readable:
                return None  # the sandbox ended first (its own failure)
            raise HelperError(f"the network helper did not start within {READY_TIMEOUT:.0f} "
                              "seconds")
        message, fds = _receive(ctl)
        if not message:
            raise HelperError(f"the network helper exited before it was ready "
                              f"({self._helper_status()})")
        reply: dict[str, Any] = json.loads(message)
        if not reply.get("ready"):
            for fd in fds:
                os.close(fd)
            if _readable(self._reaper_pidfd):
                return None  # the sandbox ended first (its own failure)
            raise _startup_error(reply)
        names = reply.get("listeners", [])
        handed: dict[str, list[socket.socket]] = {}
        for name, fd in zip(names, fds, strict=True):
            handed.setdefault(str(name), []).append(socket.socket(fileno=fd))
        return handed

    async def _serve(self, handed: dict[str, list[socket.socket]]) -> None:
        import anyio

        from ..proxy.ports import serve_expose, serve_forward
        from ..proxy.server import ProxyServer

        try:
            async with anyio.create_task_group() as tasks:
                if self.gate is not None:
                    proxy = {kind: handed.get(kind, []) for kind in
                             ("http", "socks", "dns-tcp", "dns-udp")}
                    tasks.start_soon(ProxyServer(self.gate).serve, proxy)
                for port in self.snapshot.network.forward:
                    tasks.start_soon(serve_forward, handed.get(f"forward-{port}", []), port,
                                     self.events, tasks)
                for port, sockets in self.exposed.items():
                    tasks.start_soon(serve_expose, sockets, port, self._make_socket,
                                     self.events, tasks)
        finally:
            for sockets in handed.values():  # a harness's process runs many runs
                for sock in sockets:
                    sock.close()

    async def _make_socket(self, version: int) -> socket.socket:
        """A TCP socket made by the helper inside the sandbox's network namespace."""
        import anyio

        ctl = self._ctl
        if ctl is None:
            raise OSError(errno.ENOTCONN, "the network helper is gone")
        async with self._ctl_lock:
            ctl.send(json.dumps({"socket": version}).encode())
            while True:
                try:
                    message, fds = _receive(ctl)
                    break
                except BlockingIOError:
                    await anyio.wait_readable(ctl)
        reply = json.loads(message) if message else {"error": "the helper is gone"}
        if not fds:
            raise OSError(errno.EIO, str(reply.get("error")))
        for extra in fds[1:]:
            os.close(extra)
        return socket.socket(fileno=fds[0])

    async def _keep_helper(self) -> None:
        import anyio

        assert self._helper_pidfd is not None
        await anyio.wait_readable(self._helper_pidfd)
        if _readable(self._reaper_pidfd):
            return  # the sandbox ended and the helper with it
        raise HelperError(
            f"the network helper died mid-run ({self._helper_status()}), so the sandbox "
            "was ended rather than left with a dead network",
            hint="run it again; if it recurs, `lnk sandbox check` and the helper's "
            "message above say what failed")

    def _spawn_helper(self) -> socket.socket:
        ctl, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            os.set_inheritable(child.fileno(), True)
            argv = [sys.executable, "-I", "-S", "-c", helper_boot(), str(child.fileno()),
                    str(os.getpid())]
            self.helper_pid = os.posix_spawn(
                sys.executable, argv, {"LANG": "C.UTF-8"}, setpgroup=0,
                file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                              (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
        except OSError as err:
            ctl.close()
            raise HelperError(f"cannot start the network helper: {err.strerror}",
                              errno=err.errno) from None
        finally:
            child.close()  # before bwrap is spawned: it must never hold the channel
        self._helper_pidfd = os.pidfd_open(self.helper_pid)
        ctl.setblocking(False)
        return ctl

    def _helper_status(self) -> str:
        """How the helper ended, reaping it."""
        if self.helper_pid is None:
            return "not started"
        try:
            pid, status = os.waitpid(self.helper_pid, os.WNOHANG)
        except ChildProcessError:
            return "already reaped"
        if pid == 0:
            return "still running"
        self.helper_pid = None
        if os.WIFSIGNALED(status):
            return f"killed by signal {os.WTERMSIG(status)}"
        return f"exit status {os.waitstatus_to_exitcode(status)}"

    def _stop_helper(self) -> None:
        """Kill and reap the helper; nothing of the run's network outlives it."""
        if self.helper_pid is not None:
            try:
                os.kill(self.helper_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.helper_pid, 0)
            except ChildProcessError:
                pass
            self.helper_pid = None
        for fd in (self._helper_pidfd, self._reaper_pidfd):
            if fd is not None:
                os.close(fd)
        self._helper_pidfd = self._reaper_pidfd = None
        if self._ctl is not None:
            self._ctl.close()
            self._ctl = None

    def close(self) -> None:
        self._stop_helper()
        for sockets in self.exposed.values():
            for sock in sockets:
                sock.close()
        self.exposed = {}
        if self.folder is not None:
            self.folder.close()


def listen_host(port: int) -> list[socket.socket]:
    """The host's loopback listeners for an exposed `port` (::1 where the host has it);
    OSError when 127.0.0.1:`port` is taken."""
    made: list[socket.socket] = []
    try:
        for address in ("127.0.0.1", "::1"):
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind((address, port))
                sock.listen(128)
            except OSError as err:
                sock.close()
                if family == socket.AF_INET6 and err.errno in (errno.EADDRNOTAVAIL,
                                                               errno.EAFNOSUPPORT):
                    continue
                raise
            made.append(sock)
    except BaseException:
        for sock in made:
            sock.close()
        raise
    return made


def _receive(ctl: socket.socket) -> tuple[bytes, list[int]]:
    """One message and the descriptors beside it (BlockingIOError when none waits)."""
    message, ancillary, _, _ = ctl.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(
        MAX_LISTENERS * array.array("i").itemsize), socket.MSG_CMSG_CLOEXEC)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return message, list(fds)


def _startup_error(reply: dict[str, Any]) -> HelperError:
    step, text, code = reply.get("step"), reply.get("error"), reply.get("errno")
    hint = ('use [network] mode = "none" or "host", or see `lnk sandbox check` for what '
            "this machine offers")
    if step in ("setns user", "setns net") and code == 1:  # EPERM
        hint = ("the supervisor must own the sandbox's user namespace: run lnk-sandbox as "
                "the user who runs the command; or " + hint)
    return HelperError(f"the network helper could not set up the sandbox's network: "
                       f"{text} (step: {step})", hint=hint,
                       errno=code if isinstance(code, int) else None)


def _read_status_line(fd: int) -> dict[str, Any] | None:
    """bwrap's first --json-status-fd record, read a byte at a time (blocking: bwrap
    writes it at once, or ends); None at its end."""
    os.set_blocking(fd, True)
    line = b""
    while not line.endswith(b"\n"):
        try:
            byte = os.read(fd, 1)
        except InterruptedError:
            continue
        if not byte:
            return None
        line += byte
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _readable(fd: int | None) -> bool:
    import select

    if fd is None:
        return False
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)
