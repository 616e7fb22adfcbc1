"""Starting the inner without bwrap, and ending what it leaves (direct.py's run).

The supervisor spawns the inner itself and stays its parent, and, with no pid namespace
to end with bwrap, kills and reaps whatever the sandbox left when the run ends: it is a
subreaper while the run lasts, so what the sandbox orphans (a daemon's double fork)
comes back to it rather than to the machine's init.
"""

from __future__ import annotations

import _socket
import ctypes
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import LaunchError
from ..installation import inner_source, interpreter
from ..signal_forwarding import FORWARDED
from ..terminal import foreground_terminal, give_terminal
from .bwrap import inner_boot
from .inner_program import COMPILED, choose, compiled_path
from .launch import Launched

if TYPE_CHECKING:
    from inner.config import Config

    from .cgroups import RunCgroups

# posix_spawn through libc: glibc's posix_spawn_file_actions_addchdir_np (2.29) starts
# the inner in the working directory, which os.posix_spawn cannot; and ctypes lets go of
# the GIL while the kernel makes the process (keeper.py measured why that matters).
_SETPGROUP = 0x02
_SETSIGDEF = 0x04
_SETSIGMASK = 0x08


def inner_args(config_fd: int, *, file_op: bool, mark: tuple[str, ...] = ()) -> list[str]:
    """The inner's command line from the host's own files: the compiled one, or the
    Python one where it cannot run or a file operation asks (inner_program.choose).
    `mark` follows the fd (runs.tag: how the next start finds a killed run's inner
    before its exec); neither inner reads it."""
    if choose(file_op=file_op) == COMPILED:
        binary = compiled_path()
        if binary is not None:
            return [binary, str(config_fd), *mark]
    python, _ = interpreter()
    parent_inner = os.path.dirname(inner_source())
    return [python, "-I", "-S", "-c", inner_boot(parent_inner), str(config_fd), *mark]


def spawn_inner(argv: list[str], *, env: dict[str, str], cwd: str, config: Config,
                mark: tuple[str, ...] = (), cgroups: RunCgroups | None = None,
                reaper: int | None = None) -> Launched:
    """Start the inner, in `cwd`, with only `env`, its configuration (inner/config.py,
    with `argv` and the status socket added) on an inherited fd, in a process group of
    its own made the terminal's foreground group; born in the run's cgroups. SIGINT,
    SIGTERM, SIGHUP and SIGQUIT reach it ignored (the inner restores them before its
    exec): Ctrl-C during its set-up must not kill it half done. `reaper`: the read end
    of the pipe the inner's reaper watches (inner/reaper.py), handed over and closed
    here; the caller keeps the write end open until the sandbox has ended."""
    inherited: list[int] = []
    if reaper is not None:
        inherited.append(reaper)
        os.set_inheritable(reaper, True)
        config = config.replace(reaper=reaper)
    try:
        status_parent, status_child = _socket.socketpair(_socket.AF_UNIX,
                                                         _socket.SOCK_SEQPACKET)
        child = status_child.detach()
        inherited.append(child)
        os.set_inheritable(child, True)
        try:
            data = config.replace(argv=argv, status_fd=child).encode()
        except ValueError as err:
            raise LaunchError(
                f"the inner confiner's configuration cannot be written: {err}") from None
        config_fd = os.memfd_create("lnk-inner-config", os.MFD_CLOEXEC)
        inherited.append(config_fd)
        view = memoryview(data)
        while view:
            view = view[os.write(config_fd, view):]
        os.lseek(config_fd, 0, os.SEEK_SET)
        os.set_inheritable(config_fd, True)
        json_read, json_write = os.pipe()  # nothing writes it: no bwrap
        os.close(json_write)
        args = inner_args(config_fd, file_op=config.file is not None, mark=mark)
        terminal = foreground_terminal()
        saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in FORWARDED}
        try:
            if cgroups is not None:
                cgroups.entered()
            pid = _posix_spawn(args, env, cwd)
        finally:
            if cgroups is not None:
                cgroups.leave_soon()
            for sig, handler in saved.items():
                signal.signal(sig, handler)
    except OSError as err:
        raise LaunchError(f"cannot start the inner confiner: {err.strerror}",
                          errno=err.errno) from None
    finally:
        for fd in inherited:
            os.close(fd)
    give_terminal(terminal, pid)
    return Launched(pid=pid, pidfd=os.pidfd_open(pid), status=status_parent,
                    json_status=json_read, terminal_fd=terminal, direct=True)


def _posix_spawn(argv: list[str], env: dict[str, str], cwd: str) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    actions = ctypes.create_string_buffer(1024)  # posix_spawn_file_actions_t: 80 bytes
    attributes = ctypes.create_string_buffer(1024)  # posix_spawnattr_t: 336 bytes
    default = ctypes.create_string_buffer(128)  # sigset_t
    empty = ctypes.create_string_buffer(128)
    _check(libc.posix_spawn_file_actions_init(actions))
    try:
        _check(libc.posix_spawnattr_init(attributes))
        try:
            if not hasattr(libc, "posix_spawn_file_actions_addchdir_np"):
                raise LaunchError("this C library cannot start a program in a folder "
                                  "(posix_spawn_file_actions_addchdir_np, glibc 2.29)")
            _check(libc.posix_spawn_file_actions_addchdir_np(actions, os.fsencode(cwd)))
            libc.sigemptyset(default)
            libc.sigemptyset(empty)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                libc.sigaddset(default, int(sig))
            _check(libc.posix_spawnattr_setsigdefault(attributes, default))
            _check(libc.posix_spawnattr_setsigmask(attributes, empty))
            _check(libc.posix_spawnattr_setpgroup(attributes, 0))
            _check(libc.posix_spawnattr_setflags(attributes, ctypes.c_short(
                _SETPGROUP | _SETSIGDEF | _SETSIGMASK)))
            words = [os.fsencode(arg) for arg in argv]
            args = (ctypes.c_char_p * (len(words) + 1))(*words, None)
            pairs = [os.fsencode(f"{k}={v}") for k, v in env.items()]
            envp = (ctypes.c_char_p * (len(pairs) + 1))(*pairs, None)
            pid = ctypes.c_int()
            _check(libc.posix_spawn(ctypes.byref(pid), words[0], actions, attributes,
                                    args, envp))
            return pid.value
        finally:
            libc.posix_spawnattr_destroy(attributes)
    finally:
        libc.posix_spawn_file_actions_destroy(actions)


def _check(error: int) -> None:
    """posix_spawn's functions return the error number, and leave errno alone."""
    if error:
        raise OSError(error, os.strerror(error))


@contextmanager
def subreaper() -> Iterator[None]:
    """This process as a subreaper while the run lasts: a process the sandbox orphans
    (a daemon's double fork) is this one's child, not the machine's init's, so that the
    end of the run finds it (end_leftovers)."""
    from inner import prctl

    prctl.set_child_subreaper(True)
    try:
        yield
    finally:
        prctl.set_child_subreaper(False)


def _children() -> list[int]:
    """This process's children, read from /proc (each stat's ppid)."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


class ReaperPipe:
    """The write end of the pipe the inner's reaper watches (inner/reaper.py), held by
    this process alone; closed once, by whichever comes first: the end of the run's
    leftovers (which wakes the reaper to end the sandbox) or the way out of the launch."""

    def __init__(self, write: int) -> None:
        self.write: int | None = write
        self.inode = os.fstat(write).st_ino

    def close(self) -> None:
        if self.write is not None:
            write, self.write = self.write, None
            os.close(write)


# How long the reaper may take to end the sandbox, once woken, before the rounds below
# end what is left without it (its kill(-1) is one call; a machine under load is slow).
_REAPER_WAIT = 10.0


def _reaper_of(pipe: ReaperPipe) -> int | None:
    """A pidfd of the reaper: this process's child whose fd 0 is the pipe's read end
    (only the reaper holds it: the inner closed its own before the command ran)."""
    wanted = f"pipe:[{pipe.inode}]"
    for pid in _children():
        try:
            if os.readlink(f"/proc/{pid}/fd/0") != wanted:
                continue
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:  # still that process: its fd 0 read again once the pidfd holds it
            if os.readlink(f"/proc/{pid}/fd/0") == wanted:
                return pidfd
        except OSError:
            pass
        os.close(pidfd)
    return None


def _reaper_ends_the_sandbox(pipe: ReaperPipe) -> None:
    """Wake the reaper (its pipe closed) and wait for it: its kill(-1), scoped to the
    sandbox's Landlock domain, ends every process of the sandbox in one call, which no
    process of it can outrun by forking (a process forking when the signal comes is
    ended before its child runs). The rounds of end_leftovers, one pid at a time, chased
    a daemon that forks and exits in a loop for as long as it ran, and one killed meanwhile
    left it running: the reaper, one of the processes those rounds end, was gone."""
    import select

    reaper = _reaper_of(pipe)
    pipe.close()
    if reaper is None:
        return
    try:
        select.select([reaper], [], [], _REAPER_WAIT)  # a pidfd reads once it exited
    finally:
        os.close(reaper)


class Leftovers:
    """What the sandbox left, ended once (end_leftovers): at the command's end
    (supervise.finish, before it reaps the command) or on the way out of a launch that
    never got there; a second call does nothing, since by then the command may be reaped
    and its pid, the group's id, another process's."""

    def __init__(self, launched: Launched, *, keep: int,
                 reaper: ReaperPipe | None = None) -> None:
        self.launched, self.keep, self.reaper, self.done = launched, keep, reaper, False

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            end_leftovers(self.launched.pid, keep=self.keep, command=self.launched.pidfd,
                          reaper=self.reaper)


def end_leftovers(group: int, *, keep: int, command: int,
                  reaper: ReaperPipe | None = None) -> None:
    """Kill and reap what the sandbox left: the command (`command`, its pidfd; the
    group's leader), its process group, then every child of this process but the keeper
    (the orphans a subreaper gets), again while any is found; a child killed hands its
    own children to this process in turn. The command's zombie is left to whoever waits
    for it (supervise.finish), which reaps it after: until then its pid, and so the
    group's id, is no new process's, so the group killed is the sandbox's and never a
    host's given the number since (red team 30b)."""
    try:
        signal.pidfd_send_signal(command, signal.SIGKILL)
    except OSError:
        pass
    try:  # its end, unreaped: its children are this process's before the first round
        os.waitid(os.P_PIDFD, command, os.WEXITED | os.WNOWAIT)
    except OSError:
        pass
    if reaper is not None:  # the whole sandbox at once, where a reaper was left
        _reaper_ends_the_sandbox(reaper)
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(1000):  # each round a generation; 1000 is past any tree's depth here
        left = [pid for pid in _children() if pid not in (keep, group)]
        if not left:
            return
        for pid in left:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(pidfd)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
