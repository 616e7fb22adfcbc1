"""Proxy mode on Linux: the sandbox's resolv.conf and environment, and the network helper.

`none` and `host` need nothing here: bwrap's --unshare-net (none, the default, and proxy)
leaves the sandbox its own loopback only, and host shares the host's. Proxy mode adds:
- to the plan, a read-only /etc/resolv.conf naming 127.0.0.1 (`with_resolv_conf`);
- to the environment, the proxy variables (`proxy_environment`);
- to the run, `NetworkRun`: the proxy's unix listeners, and the netns_helper process that
  joins the sandbox and bridges 127.0.0.1 there to them; the inner's go waits for it.

Facts:
- bwrap's `--json-status-fd` gives `{"child-pid": N, "net-namespace": INODE, ...}` once
  the sandbox exists, and `{"exit-code": N}` when it ends. The first line is read a byte
  at a time, so the exit line stays in the pipe for `Supervision.finish`.
- The helper is spawned from the main thread, which runs the event loop for the whole
  run: its PR_SET_PDEATHSIG follows the thread that forked it. It is spawned when the
  run's network is opened, before bwrap, so that its interpreter's start and imports
  (about 150 ms here) overlap bwrap's and the inner's; it is handed its job (the sandbox
  to join) once bwrap reports the sandbox. It gets a process group of its own, so a
  signal meant for the supervisor's group reaches the target (through the supervisor)
  and not the helper.
- /etc/resolv.conf may be a link (to /run/systemd/resolve/stub-resolv.conf, say): bwrap
  cannot mount over a link (it tries to create the file where it points, in a folder it
  may only read), so the file is mounted where the link leads, and the link inside,
  which is the host's, leads to it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from netns_helper.protocol import HTTP_PORT, MAX_MESSAGE, SOCKS_PORT, Job

from ..errors import HelperError, LaunchError
from .plan import LaunchPlan, MountOp

if TYPE_CHECKING:
    from ..events import EventLog
    from ..proxy.server import ProxyServer
    from .supervise import Supervision

RESOLV_CONF = "/etc/resolv.conf"
PLAN_SOURCE = "<the run's private folder>/resolv.conf"
READY_TIMEOUT = 30.0
LOOPBACK = "localhost,127.0.0.1,::1"


def proxy_environment() -> dict[str, str]:
    """The variables that send the sandbox's clients to the helper's listeners.

    socks5h: names go to the proxy unresolved. NO_PROXY keeps the sandbox's own loopback,
    whose servers are the program's own, off the proxy. Upper and lower case both, since
    clients differ (curl reads only the lower-case http_proxy).
    """
    values = {
        "HTTP_PROXY": f"http://127.0.0.1:{HTTP_PORT}",
        "HTTPS_PROXY": f"http://127.0.0.1:{HTTP_PORT}",
        "ALL_PROXY": f"socks5h://127.0.0.1:{SOCKS_PORT}",
        "NO_PROXY": LOOPBACK,
    }
    return {**values, **{name.lower(): value for name, value in values.items()}}


class ResolvConfHost(NamedTuple):
    """Where this host's /etc/resolv.conf leads: `dest` the file a mount must cover (the
    link's end when it is a link), None when there is none; `exists` whether it is there."""

    dest: str | None
    exists: bool

    @staticmethod
    def probe(path: str = RESOLV_CONF) -> ResolvConfHost:
        if not os.path.lexists(path):
            return ResolvConfHost(None, False)
        real = os.path.realpath(path)
        return ResolvConfHost(real, os.path.exists(real))


def with_resolv_conf(plan: LaunchPlan, source: str, host: ResolvConfHost) -> LaunchPlan:
    """The plan with the proxy's resolv.conf mounted read-only (pure).

    Mounted after every grant and before the closing remount-ro ops, which need the
    root writable for bwrap to make the mount point.
    """
    if host.dest is None:
        # glibc asks 127.0.0.1 when there is no resolv.conf at all: the helper answers.
        return _replace_ops(plan, plan.ops, note="no /etc/resolv.conf on this host: "
                            "the resolver's default, 127.0.0.1, is the helper")
    holder = _holder(plan, host.dest)
    if holder is not None and not host.exists:
        raise LaunchError(
            f"{RESOLV_CONF} leads to {host.dest}, which does not exist, in {holder.dest} "
            f"({holder.reason}), where the sandbox's resolv.conf cannot be put",
            hint=f"make {host.dest} exist (an empty file will do), or use network mode "
            '"none" or "host"')
    reason = "proxy mode: names are asked of the helper on 127.0.0.1"
    if host.dest != RESOLV_CONF:
        reason += f" ({RESOLV_CONF} leads here)"
    op = MountOp("ro-bind", host.dest, source, reason)
    ops = list(plan.ops)
    at = len(ops)
    while at > 0 and ops[at - 1].kind == "remount-ro":
        at -= 1
    ops.insert(at, op)
    return _replace_ops(plan, tuple(ops))


def _holder(plan: LaunchPlan, path: str) -> MountOp | None:
    """The deepest bind (ro or not) holding `path`: what a mount there would go into."""
    best: MountOp | None = None
    for op in plan.ops:
        if op.kind not in ("ro-bind", "bind"):
            continue
        inside = op.dest in (path, "/") or path.startswith(op.dest + "/")
        if inside and (best is None or op.dest.count("/") >= best.dest.count("/")):
            best = op
    return best


def _replace_ops(plan: LaunchPlan, ops: tuple[MountOp, ...], note: str | None = None
                 ) -> LaunchPlan:
    return plan._replace(ops=ops, notes=(*plan.notes, note) if note else plan.notes)


class NetworkRun:
    """Proxy mode for one run: the proxy's folder and listeners, and the helper.

    `go` is set once the helper listens inside; the inner's go waits on it, so the
    target never starts before its way out is there. A helper that fails to start, or
    dies before the sandbox ends, ends the run with status 125 (`Supervision.fail`).
    """

    def __init__(self, server: ProxyServer):
        self.server = server
        self.go = threading.Event()
        self.helper_pid: int | None = None
        self._helper_pidfd: int | None = None
        self._reaper_pidfd: int | None = None
        self._ctl: socket.socket | None = None

    @staticmethod
    def open(lnk_home: str, allow: tuple[str, ...], events: EventLog) -> NetworkRun:
        from ..proxy.resolver import Resolver
        from ..proxy.rules import Allowlist
        from ..proxy.server import ProxyServer
        from ..proxy.upstream import Gate

        gate = Gate(Allowlist.from_texts(allow), Resolver.from_environment(), events)
        run = NetworkRun(ProxyServer.open(lnk_home, gate))
        try:
            run._ctl = run._spawn_helper()
        except BaseException:
            run.close()
            raise
        return run

    def supervise_options(self) -> dict[str, Any]:
        """What `supervise` needs for proxy mode: the loop at once, the service, the go."""
        return {"needs_loop": True, "services": [self.service], "go_conditions": [self.go]}

    def plan(self, plan: LaunchPlan) -> LaunchPlan:
        """`plan` (made by `plan_for`) with this run's resolv.conf as the source."""
        ops = tuple(op._replace(source=self.server.resolv_conf)
                    if op.source == PLAN_SOURCE else op for op in plan.ops)
        return plan._replace(ops=ops)

    async def service(self, supervision: Supervision) -> None:
        """Serve the proxy and keep the helper for the run (a task in the run's loop)."""
        import anyio

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self.server.serve)
                await self._keep_helper(supervision)
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
        finally:
            self._stop_helper()

    async def _keep_helper(self, supervision: Supervision) -> None:
        import anyio

        status = await _read_status_line(supervision.launched.json_status)
        if status is None:
            return  # bwrap ended before making the sandbox: finish() says why
        pid, net = status.get("child-pid"), status.get("net-namespace")
        if not isinstance(pid, int) or not isinstance(net, int):
            raise HelperError(f"bubblewrap reported no sandbox pid and network namespace "
                              f"({status})")
        try:
            self._reaper_pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # the sandbox is gone already: finish() says why
        ctl = self._ctl
        assert ctl is not None
        ctl.send(Job(pid=pid, net_inode=net, run_dir=self.server.folder).encode())
        with anyio.move_on_after(READY_TIMEOUT):
            await anyio.wait_readable(ctl)
        try:
            message = ctl.recv(MAX_MESSAGE)
        except BlockingIOError:
            raise HelperError(f"the network helper did not start within {READY_TIMEOUT:.0f} "
                              "seconds") from None
        if not message:
            raise HelperError(f"the network helper exited before it was ready "
                              f"({self._helper_status()})")
        reply: dict[str, Any] = json.loads(message)
        if not reply.get("ready"):
            if _readable(self._reaper_pidfd):
                return  # the sandbox ended first (its own failure): finish() says why
            raise _startup_error(reply)
        self.go.set()
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
            argv = [sys.executable, "-I", "-m", "netns_helper", str(child.fileno()),
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
        self.server.close()


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


async def _read_status_line(fd: int) -> dict[str, Any] | None:
    """bwrap's first --json-status-fd record, read a byte at a time; None at its end."""
    import anyio

    os.set_blocking(fd, False)
    line = b""
    while not line.endswith(b"\n"):
        try:
            byte = os.read(fd, 1)
        except BlockingIOError:
            await anyio.wait_readable(fd)
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
