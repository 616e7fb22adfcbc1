"""Starting bubblewrap: pinned sources, the inner's configuration, the status socket.

Everything here is synchronous and imports little, because it sits on every start:
bwrap is running before the supervisor imports what only later stages need (anyio,
the network proxy).

Facts:
- bwrap is spawned from the thread that stays for the whole run (the main thread, which
  also runs the event loop): bwrap's --die-with-parent is PR_SET_PDEATHSIG, which fires
  when the *thread* that forked it exits.
- bwrap is started with SIGINT, SIGTERM, SIGHUP and SIGQUIT ignored (an ignored signal
  stays ignored across exec): a Ctrl-C at the terminal reaches the whole foreground group,
  and bwrap dying of it first would kill the target before its own handler ran. The inner
  restores the defaults before its execve.
- bwrap gets a process group of its own, made the terminal's foreground group while it
  runs (as a shell does for a job), so the target keeps reading the terminal and gets
  Ctrl-C; the inner waits for the go until that is done.
"""

from __future__ import annotations

import _socket
import os
import signal
from typing import TYPE_CHECKING

from ..errors import LaunchError
from ..signal_forwarding import FORWARDED
from ..terminal import foreground_terminal, give_terminal
from .bwrap import BwrapInfo, bwrap_args
from .pinning import LinkInPath, PinnedPath, pin
from .plan import LaunchPlan

if TYPE_CHECKING:
    from collections.abc import Callable

    from inner.config import Config

    from .cgroups import RunCgroups
    from .idmapped import PrivateMounts


class Launched:
    """A running bwrap and the supervisor's ends of its channels. `direct`: no bwrap, the
    process waited for is the inner, then the command itself (direct.py): its own exit
    status is the command's, and nothing writes `json_status`."""

    def __init__(self, *, pid: int, pidfd: int, status: _socket.socket, json_status: int,
                 terminal_fd: int | None, direct: bool = False) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.status = status
        self.json_status = json_status
        self.terminal_fd = terminal_fd
        self.direct = direct
        self.closing: list[int] = []
        # Without namespaces: what ends the rest of the sandbox once the command has
        # ended (direct_spawn.end_leftovers), before the watch is waited for, which a
        # process left under the filter (the reaper, a daemon) would hold up.
        self.ended: Callable[[], None] | None = None

    def close(self) -> None:
        for fd in (self.pidfd, self.json_status, *self.closing):
            try:
                os.close(fd)
            except OSError:
                pass
        self.status.close()


class _ChildFds:
    """Descriptors bwrap inherits; the supervisor closes its copies after the spawn."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def add(self, fd: int) -> int:
        os.set_inheritable(fd, True)
        self.fds.append(fd)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()


def _pin_sources(plan: LaunchPlan, child: _ChildFds,
                 pinned_at: dict[int, PinnedPath] | None = None) -> dict[int, int]:
    """fd per op index; missing optional sources are left out of the plan by the caller.
    `pinned_at` collects what each bind pinned (root mode maps some of them)."""
    fds: dict[int, int] = {}
    for index, op in enumerate(plan.ops):
        if op.kind in ("ro-bind", "bind"):
            assert op.source is not None
            try:
                pinned = pin(op.source)
            except FileNotFoundError:
                raise LaunchError(
                    f"{op.source} ({op.reason}) no longer exists",
                    hint="create it again, or mark the grant optional",
                ) from None
            except LinkInPath as err:
                err.message = f"{op.reason}: {err.message}"
                raise
            fds[index] = child.add(pinned.fd)
            if pinned_at is not None:
                pinned_at[index] = pinned
        elif op.kind == "hide-file":
            read_end, write_end = os.pipe()
            os.close(write_end)  # an empty file: bwrap reads EOF at once
            fds[index] = child.add(read_end)
    return fds


def _idmap(plan: LaunchPlan, fds: dict[int, int], pinned_at: dict[int, PinnedPath],
           child: _ChildFds) -> PrivateMounts:
    """Root mode: a copy of each bind, idmapped where the plan marks it, made here (a
    copy can be made only in the namespace its mount is in), in place of its pinned fd;
    attached in the spawning thread's private namespace by `enter`, just before bwrap
    starts."""
    from .idmapped import PrivateMounts

    private = PrivateMounts()
    try:
        for index, op in enumerate(plan.ops):
            if index in pinned_at:
                fds[index] = child.add(private.copy(pinned_at[index], op.dest,
                                                    idmap=op.idmapped))
    except BaseException:
        private.leave()
        raise
    return private


def _setpriv() -> str:
    for folder in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        path = os.path.join(folder, "setpriv")
        if os.access(path, os.X_OK):
            return path
    raise LaunchError("root mode runs the sandbox as a uid of its own, which needs setpriv "
                      "(util-linux), and it is not installed",
                      hint="apt-get install util-linux")


def _config_fd(config: Config, child: _ChildFds) -> int:
    """The inner's configuration in a memory file it reads from the start (the form may
    be larger than a pipe holds, and nothing writes it while bwrap starts)."""
    data = config.encode()
    fd = os.memfd_create("lnk-inner-config", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return child.add(fd)


def spawn(
    plan: LaunchPlan,
    info: BwrapInfo,
    *,
    argv: list[str],
    env: dict[str, str],
    inner_config: Config,
    mark: tuple[str, ...] = (),
    cgroups: RunCgroups | None = None,
) -> Launched:
    """Pin every source, start bwrap with only `env`, and hand the terminal to it.
    `inner_config`: what the inner applies, less the command and the status socket.

    `cgroups`: the run's own, which this process has been entering since the start
    began (RunCgroups.entering), so bwrap and all it forks are born there; this process
    goes back right after, in the back."""
    child = _ChildFds()
    parent_fds: list[int] = []
    private: PrivateMounts | None = None
    try:
        pinned_at: dict[int, PinnedPath] = {}
        fds = _pin_sources(plan, child, pinned_at)
        if plan.root_mode:
            private = _idmap(plan, fds, pinned_at, child)
        # _socket, not socket: socket.py's enums and selectors cost every start about 2 ms.
        status_parent, status_child = _socket.socketpair(_socket.AF_UNIX,
                                                         _socket.SOCK_SEQPACKET)
        parent_fds.append(status_parent.detach())
        status_child_fd = child.add(status_child.detach())
        json_read, json_write = os.pipe()
        parent_fds.append(json_read)
        child.add(json_write)
        config_fd = _config_fd(inner_config.replace(argv=argv, status_fd=status_child_fd),
                               child)
        index = {id(op): i for i, op in enumerate(plan.ops)}
        args = bwrap_args(
            plan,
            info,
            fd_of=lambda op: str(fds[index[id(op)]]),
            json_status_fd=str(json_write),
            config_fd=str(config_fd),
            mark=mark,
        )
        program = info.path
        if private is not None:
            # Root mode: bwrap runs as the sandbox's own uid, with no group of root's.
            from .idmapped import SANDBOX_GID, SANDBOX_UID

            program = _setpriv()
            args = [program, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}",
                    "--clear-groups", "--", *args]
        terminal = foreground_terminal()
        saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in FORWARDED}
        try:
            if private is not None:
                private.enter()
            if cgroups is not None:
                cgroups.entered()
            pid = os.posix_spawn(
                program,
                args,
                env,
                setpgroup=0,
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                setsigmask=(),
            )
        finally:
            if private is not None:
                private.leave()
                private = None
            if cgroups is not None:
                cgroups.leave_soon()
            for sig, handler in saved.items():
                signal.signal(sig, handler)
    except OSError as err:
        child.close()
        for fd in parent_fds:
            os.close(fd)
        raise LaunchError(f"cannot start bubblewrap: {err.strerror}", errno=err.errno) from None
    except BaseException:
        if private is not None:
            private.leave()
        child.close()
        for fd in parent_fds:
            os.close(fd)
        raise
    child.close()
    give_terminal(terminal, pid)
    return Launched(
        pid=pid,
        pidfd=os.pidfd_open(pid),
        status=_socket.socket(fileno=parent_fds[0]),
        json_status=parent_fds[1],
        terminal_fd=terminal,
    )
