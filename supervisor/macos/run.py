"""A run on macOS: the profile for this launch, sandbox-exec as the supervisor's child,
and `log stream` beside it while a program list (or learn) needs refusals named.

The supervisor stays the parent of /usr/bin/sandbox-exec (absolute: a sandbox-exec
earlier in PATH is not the one run), which applies the profile and execs the command in
the same process. Paths for tests alone: `MacLauncher(sandbox_exec=..., log=...)`, a
constructor argument, never an environment variable a sandbox could set.

Facts (not run on a Mac here):
- sandbox-exec execs the command itself, after the profile applies: the command is the
  process the supervisor started, and a refused command is Seatbelt's refusal of
  sandbox-exec's own exec, reported under its name and pid.
- Nothing like bwrap's pid 1 or die-with-parent exists: the command gets a process group
  of its own (the terminal's foreground group while it runs, as a shell does for a job),
  signals sent to the supervisor are passed to that group, and whatever is left in it
  when the command ends is killed, as the end of bwrap's namespace kills it on Linux.
  A process that leaves the group (setsid) or outlives a SIGKILLed supervisor is not
  reached: a stated gap of macOS.
- There is no fresh /tmp: each run gets a temp folder of its own (TMPDIR), writable,
  removed after; /private/tmp stays closed unless granted (agent sockets live there).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from ..dotfiles import Protected, analyze
from ..environment import build_environment
from ..errors import LaunchError
from ..events import EventLog, say
from ..grants import Grant, Snapshot
from ..netpolicy import Decide
from ..terminal import foreground_terminal, give_terminal
from .logwatch import LOG, Lineage, LogStream, Namer, log_stream_argv
from .profile import SANDBOX_EXEC, MacHost, Profile, compile_profile, sandbox_exec_argv

if TYPE_CHECKING:
    from .proxy import MacProxy

KILL_GRACE = 10.0
WAITID = hasattr(os, "waitid")  # not on macOS before Python 3.13
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
_UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}
TEMP_NAME = "the run's own temp folder (TMPDIR)"
PLAN_PROXY_PORTS = (3128, 1080)


def protections(snapshot: Snapshot) -> list[Protected]:
    """The dot files at the top of each write grant whose dot files are protected."""
    found: list[Protected] = []
    for grant in snapshot.visible():
        if grant.access == "write" and not grant.dot_files_writable and grant.is_dir:
            assert grant.target is not None
            found.extend(analyze(grant.target, home=snapshot.home).protected)
    return found


def profile_for(snapshot: Snapshot, *, temp: str | None, learn: bool = False,
                proxy_ports: tuple[int, ...] = ()) -> Profile:
    host = MacHost(home=os.path.realpath(snapshot.home), temp=temp, proxy_ports=proxy_ports)
    return compile_profile(snapshot, protections(snapshot), host, learn=learn)


def sandbox_environment(snapshot: Snapshot, temp: str | None,
                        proxy: dict[str, str] | None = None) -> dict[str, str]:
    """The command's whole environment, from `[env]`; dyld's injection variables
    (DYLD_*) never pass, as the loader's never do on Linux. `proxy`: proxy mode's
    variables; a named socket's variable (SSH_AUTH_SOCK) is kept as on Linux."""
    extra = {**snapshot.network.environment(), **(proxy or {})}
    if temp:
        extra["TMPDIR"] = temp + "/"
    env = build_environment(os.environ, keep=snapshot.env_keep, assign=snapshot.env_assign,
                            extra=extra)
    return {k: v for k, v in env.items() if not k.startswith("DYLD_")}


def _found(command: str, env: dict[str, str]) -> bool:
    """Whether exec would find `command` (as execvp looks it up): a missing one is
    said as on Linux (127) without starting anything."""
    if "/" in command:
        return os.path.exists(command)
    path = env.get("PATH", "/usr/bin:/bin")
    return any(os.path.isfile(os.path.join(d or ".", command)) for d in path.split(":"))


def print_plan(snapshot: Snapshot, command: list[str], out: TextIO) -> int:
    """`lnk sandbox plan --os macos`: the profile and its parameters, on any OS."""
    import shlex

    # Stand-ins for the folder each run makes (mkdtemp names it when the run starts) and
    # the proxy's ports (the kernel picks them when the run starts).
    temp = os.path.join(os.path.realpath(tempfile.gettempdir()), "lnk-sandbox-RUN")
    ports = PLAN_PROXY_PORTS if snapshot.network_mode == "proxy" else ()
    profile = profile_for(snapshot, temp=temp, proxy_ports=ports)
    out.write(f"# spec: {snapshot.source}\n# the Seatbelt profile for sandbox-exec (-p) "
              "and its parameters (-D); not run on this machine unless it is a Mac\n")
    out.write(profile.listing())
    out.write(f"# {TEMP_NAME}: made for each run, in place of {temp}\n")
    if ports:
        out.write(f"# the proxy's ports on localhost: picked for each run, in place of "
                  f"{ports[0]} (HTTP) and {ports[1]} (SOCKS5)\n")
    out.write("# command: " + shlex.join([SANDBOX_EXEC, "-p", "PROFILE",
                                          *(f"-D{k}=..." for k, _ in profile.parameters),
                                          "--", *command]) + "\n")
    return 0


@dataclass
class _Outcome:
    status: int
    root_refused: bool = False
    seen: list[object] = field(default_factory=list)


class _Child:
    """sandbox-exec, running: its group, the terminal, signals passed on to it."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.terminal = foreground_terminal()
        defaults = {s for s in signal.valid_signals() if s not in _UNCATCHABLE}
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, setpgroup=0, setsigdef=defaults,
                                      setsigmask=())
        except OSError as err:
            raise LaunchError(f"cannot start {argv[0]}: {err.strerror}", errno=err.errno,
                              hint="sandbox-exec ships with macOS at /usr/bin/sandbox-exec"
                              ) from None
        self.status: int | None = None
        self.deadline: float | None = None
        self.pending: set[int] = set()
        self.previous = {sig: signal.signal(sig, self._on_signal) for sig in _FORWARDED}
        if self.terminal is not None:
            give_terminal(self.terminal, self.pid)
            self._signal_group(signal.SIGCONT)  # stopped if it read the terminal before

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        self._signal_group(sig)
        if sig in (signal.SIGTERM, signal.SIGHUP):
            if sig in self.pending:
                self.kill()
            self.pending.add(sig)
            self.deadline = time.monotonic() + KILL_GRACE

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def poll(self) -> int | None:
        """The wait status once sandbox-exec (the command) ended, else None.

        Where waitid is there (Linux; macOS from Python 3.13), the end is seen without
        reaping (WNOWAIT), so the group's leftovers are killed while the command still
        holds the group's id. Elsewhere the command is reaped first: the id stays the
        group's while anything is left in it (neither kernel hands out a pid that names a
        live group), so only an empty group's id could have been reused meanwhile."""
        if self.status is None:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                self.deadline = None
                self.kill()
            if WAITID:
                ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if ended is not None and ended.si_pid == self.pid:
                    self._end_group(reaped=False)
            else:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.status = status
                    self._end_group(reaped=True)
        return self.status

    def _end_group(self, *, reaped: bool, limit: float = 0.5) -> None:
        """The run ends with its command: kill what is left in its group, reap the
        command, then wait a little for the rest to be gone (a kill is delivered, not
        done, when it returns)."""
        self._signal_group(signal.SIGKILL)
        if not reaped:
            _, self.status = os.waitpid(self.pid, 0)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                os.killpg(self.pid, 0)
            except OSError:
                return
            time.sleep(0.002)

    def wait(self) -> int:
        delay = 0.0005
        while (status := self.poll()) is None:
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        return status

    async def wait_async(self) -> int:
        import anyio

        delay = 0.0005
        while (status := self.poll()) is None:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.01)
        return status

    def close(self) -> None:
        """Kill the run's group if it still runs, reap, restore signals and terminal."""
        if self.status is None:
            self.kill()
            _, self.status = os.waitpid(self.pid, 0)
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        if self.terminal is not None:
            give_terminal(self.terminal, os.getpgrp())


class MacLauncher:
    """Runs snapshots under Seatbelt. `sandbox_exec` and `log` are for tests only."""

    def __init__(self, *, sandbox_exec: str = SANDBOX_EXEC, log: str = LOG,
                 attach_timeout: float = 2.0, quiet: float = 0.3, settle_limit: float = 2.0):
        self.sandbox_exec = sandbox_exec
        self.log = log
        self.attach_timeout = attach_timeout
        self.quiet = quiet
        self.settle_limit = settle_limit

    def run(self, snapshot: Snapshot, argv: list[str], *, report: str | None = None,
            decide: Decide | None = None) -> int:
        events = EventLog(report)
        try:
            outcome = self._launch(snapshot, argv, learn=False, events=events, decide=decide)
        finally:
            events.close()
        return outcome.status

    def learn(self, snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
        from ..learn import render, summarize
        from ..linux.watch import Executed

        snapshot = snapshot._replace(programs=None)
        temp_holder: list[str] = []
        outcome = self._launch(snapshot, argv, learn=True, events=None, temp_out=temp_holder)
        seen = [item for item in outcome.seen if isinstance(item, Executed)]
        judged = snapshot
        if temp_holder:  # a program run from the run's temp folder is never offered
            judged = snapshot._replace(grants=(*snapshot.grants, Grant(
                "$TMPDIR", temp_holder[0], "write", TEMP_NAME, None, None)))
        learned, left = summarize(seen, judged)
        return outcome.status, render(learned, left, argv)

    # -- one launch --------------------------------------------------------------------

    def _launch(self, snapshot: Snapshot, argv: list[str], *, learn: bool,
                events: EventLog | None, temp_out: list[str] | None = None,
                decide: Decide | None = None) -> _Outcome:
        temp = os.path.realpath(tempfile.mkdtemp(prefix="lnk-sandbox-"))
        if temp_out is not None:
            temp_out.append(temp)
        proxy = None
        try:
            if snapshot.network_mode == "proxy":  # the proxy loads only for proxy mode
                from .proxy import MacProxy

                proxy = MacProxy(snapshot, events, decide)
            env = sandbox_environment(snapshot, temp,
                                      proxy.environment() if proxy else None)
            if not _found(argv[0], env):
                say(f"cannot run {argv[0]}: not found")
                return _Outcome(127)
            profile = profile_for(snapshot, temp=temp, learn=learn,
                                  proxy_ports=proxy.ports if proxy else ())
            for note in profile.notes:
                say(note)
            command = sandbox_exec_argv(profile, argv, sandbox_exec=self.sandbox_exec)
            if not learn and snapshot.programs is None:
                if proxy is None:
                    return self._finish(self._plain(command, env), None)
                return self._finish(self._supervised(command, env, None, proxy), None)
            namer = Namer(events, learn=learn)
            return self._finish(self._supervised(command, env, namer, proxy, learn=learn),
                                namer)
        finally:
            if proxy is not None:
                proxy.close()
            shutil.rmtree(temp, ignore_errors=True)

    def _plain(self, command: list[str], env: dict[str, str]) -> int:
        """No program list and no proxy: nothing to name or serve, so no event loop."""
        child = _Child(command, env)
        try:
            return child.wait()
        finally:
            child.close()

    def _supervised(self, command: list[str], env: dict[str, str], namer: Namer | None,
                    proxy: MacProxy | None, *, learn: bool = False) -> int:
        """The command under the event loop: with `log stream` read beside it to name
        refused programs (`namer`), and the proxy served (`proxy`)."""
        import anyio

        stream = None
        if namer is not None:
            stream = LogStream(log_stream_argv(self.log), namer)
            try:
                stream.start()
            except OSError as err:
                self._without_log(learn, f"cannot start {self.log}: {err.strerror}")
                stream = None
                if proxy is None:
                    return self._plain(command, env)

        async def supervise() -> int:
            status = 0
            problem: Exception | None = None
            async with anyio.create_task_group() as group:
                if proxy is not None:
                    group.start_soon(proxy.serve)
                if stream is not None:
                    group.start_soon(stream.read)
                try:
                    if stream is not None and not await stream.wait_attached(
                            self.attach_timeout):
                        why = "it ended" if stream.ended else (
                            f"it did not attach within {self.attach_timeout:g} s")
                        self._without_log(learn, f"{self.log} stream cannot be read: {why}")
                    child = _Child(command, env)
                    if namer is not None:
                        namer.lineage = Lineage(child.pid)
                    try:
                        status = await child.wait_async()
                        if stream is not None:
                            await stream.settle(quiet=self.quiet, limit=self.settle_limit)
                    finally:
                        child.close()
                except Exception as err:  # raised after the group, not wrapped in one
                    problem = err
                finally:
                    group.cancel_scope.cancel()
            if problem is not None:
                raise problem
            return status

        try:
            return _run_loop(supervise)
        finally:
            if stream is not None:
                stream.stop()

    def _without_log(self, learn: bool, why: str) -> None:
        if learn:
            raise LaunchError(
                f"learn reads Seatbelt's reports from the system log, and {why}",
                hint="run lnk sandbox learn outside any sandbox: `log` refuses to run "
                "inside one")
        say(f"{why}: the program list still holds, but refused programs go unnamed")

    @staticmethod
    def _finish(status: int, namer: Namer | None) -> _Outcome:
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        refused = namer is not None and namer.root_refused
        if refused and code != 0:
            code = 126  # Seatbelt refused sandbox-exec's exec of the command itself
        return _Outcome(code, refused, list(namer.seen) if namer else [])


def _run_loop(main: Callable[[], Awaitable[int]]) -> int:
    import anyio

    options: dict[str, object] = {}
    try:
        import uvloop  # noqa: F401

        options["use_uvloop"] = True
    except ImportError:
        pass
    return anyio.run(main, backend="asyncio", backend_options=options)


def preflight_macos(snapshot: Snapshot, *, sandbox_exec: str = SANDBOX_EXEC) -> None:
    """What a launch checks before starting sandbox-exec, without starting it."""
    if not os.access(sandbox_exec, os.X_OK):
        raise LaunchError(f"{sandbox_exec} is missing", hint="sandbox-exec ships with macOS")
    profile_for(snapshot, temp=None)


def run_macos(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
              decide: Decide | None = None) -> int:
    return MacLauncher().run(snapshot, argv, report=report, decide=decide)


def learn_macos(snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
    return MacLauncher().learn(snapshot, argv)


__all__ = ["MacLauncher", "learn_macos", "preflight_macos", "print_plan", "profile_for",
           "run_macos"]
