"""The run's keeper: a small process that ends what a killed supervisor left, at once.

A supervisor killed with SIGKILL in bwrap's first milliseconds can leave bwrap's first
child, pid 1 of the sandbox's pid namespace, alive: it waits on bwrap (an eventfd read,
SIGCHLD blocked) for the go bwrap, killed by its parent-death signal, never gives, and
asks for its own parent-death signal only after that wait (bubblewrap#633). Nothing of
the supervisor can act once it is dead; the keeper can. It is started with each run:

- as `python -I -S` on this file (the standard library only, as `inner/`), by libc's
  posix_spawn, never by a fork of the threaded supervisor; before the supervisor enters
  the run's cgroups (so `cgroup.kill` never kills it), and before bwrap (so there is no
  instant at which a run exists without one);
- with the read end of a pipe on fd 0 whose write end only the supervisor holds (close-
  on-exec: bwrap, the network helper and git never inherit it), /dev/null on fd 1 and 2,
  in a session of its own (no terminal, no Ctrl-C, out of bwrap's process group), as the
  supervisor's user: root in root mode, where the sandbox's own uid cannot signal it; a
  person's, where the sandbox, in a pid namespace of its own, cannot see it;
- it reads the pipe to its end: `kill FOLDER` lines name the run's cgroups that have
  `cgroup.kill`, `group PGID` the sandbox's process group where it has no pid namespace
  (direct.py), and a last `ended` line says the supervisor ended the run itself. At end
  of file without it (the supervisor died, however), the keeper kills the run's cgroups,
  then every process whose command line carries the run's mark (through a pidfd taken
  before the command line is read, so a reused pid is never the one killed) and the
  sandbox's process group, sweeping again while a sweep finds one (a clone made
  meanwhile), and exits. A group's id is not given to a new process while any of its
  members lives, so the group killed is the sandbox's while one of them is left.

What the keeper cannot do (it failed to start, or was killed) the next start still does
(runs.py); a failure to start is said once, and the run goes on.
"""

from __future__ import annotations

import os
import sys
import time

TAG = "LNK_SANDBOX_RUN_"  # bwrap's `--unsetenv LNK_SANDBOX_RUN_<token>` (runs.tag)
ENDED = b"ended\n"
KILL = b"kill "
GROUP = b"group "
_SIGKILL = 9
_SWEEPS_FOR = 2.0  # seconds: the sweeps' bound, however many processes keep appearing
_QUIET_SWEEPS = 3  # sweeps finding nothing, 10 ms apart, before the keeper is done


def mark(token: str) -> bytes:
    """The run's mark as it stands in /proc/PID/cmdline: bwrap's `--unsetenv NAME`,
    whole, the NULs around it included (12_3 is not 12_34), so that a file that happens
    to be named like a mark, or the keeper's own command line (the token alone), is never
    taken for one."""
    return b"\0--unsetenv\0" + (TAG + token.replace("-", "_")).encode() + b"\0"


def kill_marked(marks: list[bytes]) -> int:
    """SIGKILL every process whose command line holds one of `marks`; how many."""
    # _signal, not signal: signal.py's enums cost the keeper's start a millisecond.
    from _signal import pidfd_send_signal  # type: ignore[import-not-found]  # no stub

    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            pidfd = os.pidfd_open(int(name))
        except OSError:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                line = handle.read()
            if any(one in line for one in marks):
                pidfd_send_signal(pidfd, _SIGKILL)
                killed += 1
        except OSError:
            pass
        finally:
            os.close(pidfd)
    return killed


class Keeper:
    """The supervisor's side: the pipe's write end, and the keeper's start."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.fd = -1
        self.pid = 0
        self.failure: OSError | None = None

    def start(self) -> None:
        """Spawn the keeper (posix_spawn: no Python runs in the child). A failure is kept
        in `failure`, for the launching thread to say."""
        from ..installation import interpreter

        python = interpreter()[0]
        read_end, write_end = os.pipe()  # both close-on-exec
        try:
            self.pid = _spawn([python, "-I", "-S", __file__, self.token], read_end)
        except OSError as err:
            os.close(write_end)
            self.failure = err
        else:
            self.fd = write_end
        finally:
            os.close(read_end)

    def kill_also(self, folders: list[str]) -> None:
        """The run's cgroups with `cgroup.kill`, for the keeper to kill too."""
        self._send(b"".join(KILL + os.fsencode(f) + b"\n" for f in folders))

    def kill_group(self, pgid: int) -> None:
        """The sandbox's process group, for the keeper to kill too (no pid namespace
        ends it with bwrap: direct.py)."""
        self._send(GROUP + str(pgid).encode() + b"\n")

    def ended(self) -> None:
        """The run is over and ended by the supervisor: the keeper exits, killing none."""
        self._send(ENDED)
        self.close()

    def close(self) -> None:
        """Close the write end: without `ended` first, the keeper ends the run. It is
        reaped in the back (a process that runs many sandboxes, through the API, must not
        gather zombies), never waited for: the command's status is not held up by it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.pid:
            import threading

            threading.Thread(target=os.waitpid, args=(self.pid, 0), name="lnk-keeper",
                             daemon=True).start()
            self.pid = 0

    def _send(self, data: bytes) -> None:
        if self.fd < 0 or not data:
            return
        try:
            os.write(self.fd, data)  # a few bytes: a pipe takes them at once
        except OSError:
            self.close()  # the keeper is gone (killed): the next start is the fallback


_POSIX_SPAWN_SETSID = 0x80  # glibc 2.26 and musl: <spawn.h>


def _spawn(argv: list[str], stdin: int) -> int:
    """posix_spawn `argv` with `stdin` on fd 0, /dev/null on 1 and 2, in a session of its
    own and an empty environment; its pid. Through ctypes, which lets go of the GIL while
    the kernel makes the process and the child execs: os.posix_spawn (and subprocess)
    hold it, and the whole supervisor stopped for as long (measured on a loaded 2-CPU
    machine: 4 ms at the median, over 100 ms at worst)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    actions = ctypes.create_string_buffer(1024)  # posix_spawn_file_actions_t: 80 bytes
    attributes = ctypes.create_string_buffer(1024)  # posix_spawnattr_t: 336 bytes
    _check(libc.posix_spawn_file_actions_init(actions))
    try:
        _check(libc.posix_spawnattr_init(attributes))
        try:
            _check(libc.posix_spawn_file_actions_adddup2(actions, stdin, 0))
            _check(libc.posix_spawn_file_actions_addopen(actions, 1, os.devnull.encode(),
                                                         os.O_WRONLY, 0))
            _check(libc.posix_spawn_file_actions_adddup2(actions, 1, 2))
            _check(libc.posix_spawnattr_setflags(attributes,
                                                 ctypes.c_short(_POSIX_SPAWN_SETSID)))
            words = [os.fsencode(arg) for arg in argv]
            args = (ctypes.c_char_p * (len(words) + 1))(*words, None)
            env = (ctypes.c_char_p * 1)(None)
            pid = ctypes.c_int()
            _check(libc.posix_spawn(ctypes.byref(pid), words[0], actions, attributes,
                                    args, env))
            return pid.value
        finally:
            libc.posix_spawnattr_destroy(attributes)
    finally:
        libc.posix_spawn_file_actions_destroy(actions)


def _check(error: int) -> None:
    """posix_spawn's functions return the error number, and leave errno alone."""
    if error:
        raise OSError(error, os.strerror(error))


def _main(token: str) -> None:
    """The keeper: wait for the pipe's end, then end the run unless told it ended."""
    os.closerange(3, 1 << 20)  # nothing the supervisor's caller passed it (close_range)
    os.chdir("/")  # holding no folder of the person's
    data = b""
    while chunk := os.read(0, 4096):
        data += chunk
    if data.endswith(ENDED):
        return
    # The cgroups first: one write ends every process in them (root mode), which the
    # sweeps then find dying, or gone.
    for folder in (line[len(KILL):] for line in data.split(b"\n") if line.startswith(KILL)):
        try:
            fd = os.open(folder + b"/cgroup.kill", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            continue  # gone: the next start removed it
        try:
            os.write(fd, b"1")
        except OSError:
            pass
        finally:
            os.close(fd)
    marks = [mark(token)]
    groups = [int(line[len(GROUP):]) for line in data.split(b"\n")
              if line.startswith(GROUP) and line[len(GROUP):].isdigit()]
    deadline = time.monotonic() + _SWEEPS_FOR
    quiet = 0
    while quiet < _QUIET_SWEEPS and time.monotonic() < deadline:
        # A process killed is still listed, with its command line, until it has exited.
        quiet = 0 if kill_marked(marks) + _kill_groups(groups) else quiet + 1
        time.sleep(0.01 if quiet else 0.002)


def _kill_groups(groups: list[int]) -> int:
    """SIGKILL each group that still has a member; how many had one."""
    killed = 0
    for group in groups:
        if group > 1:
            try:
                os.killpg(group, _SIGKILL)
                killed += 1
            except OSError:
                pass  # gone: nothing of it is left
    return killed


if __name__ == "__main__":
    _main(sys.argv[1])
