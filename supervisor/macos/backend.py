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
  removed after (a session's is kept between its runs); /private/tmp stays closed unless
  granted (agent sockets live there).
- A timeout (deadline.py) kills the command's process group at the deadline, as the end
  of the command does; status 124.
- sandbox-exec's own failures (a profile this macOS rejects; a nested sandbox, exit 71)
  would look like the command's status. So a launch first asks whether this process is
  sandboxed already, then runs the readiness probe (probe.py) with its own profile:
  once per boot for a profile without a program list (passes kept, as a start keeps its
  checks), and for every run that reads the log, where the probe's report is also what
  proves the stream attached. A failure is lnk-sandbox's (125), said with its cause.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TextIO

from ..deadline import TIMEOUT_STATUS, Deadline, timed_out_message
from ..errors import LaunchError
from ..events import EventLog, say
from ..grants import Grant, Snapshot
from ..host_files import open_report
from ..installation import inner_source, interpreter
from ..netpolicy import Decide
from ..policy import MACOS_SYSTEM_FOLDERS
from ..run_types import Ended, FileOp
from ..signal_forwarding import SignalForwarding
from ..terminal import foreground_terminal, give_terminal
from .environment import sandbox_environment
from .host import boot_session, mac_host, sandboxed
from .logwatch import LOG, Lineage, LogStream, Namer, log_stream_argv
from .probe import PROBE_PROGRAM, ProbeResult, digest, finish_probe, run_probe, start_probe
from .profile import (
    SANDBOX_EXEC,
    MacHost,
    Profile,
    compile_profile,
    readable,
    sandbox_exec_argv,
)
from .programs import Toolchain, runs_instead

if TYPE_CHECKING:
    from .proxy import MacProxy

WAITID = hasattr(os, "waitid")  # not on macOS before Python 3.13
_UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}
TEMP_NAME = "the run's own temp folder (TMPDIR)"
PLAN_PROXY_PORTS = (3128, 1080)
NESTED = LaunchError(
    "lnk-sandbox runs inside a Seatbelt sandbox already, and sandboxes do not nest: "
    "sandbox-exec cannot apply a profile from here",
    hint="run lnk-sandbox outside the other sandbox (an agent that sandboxes its own "
    "commands must run this one unsandboxed: lnk-sandbox is the sandbox)")


@dataclass(frozen=True)
class Prepared:
    """A launch, compiled: the facts found, the command's environment, its profile."""

    host: MacHost
    env: dict[str, str]
    profile: Profile


def prepare(snapshot: Snapshot, *, temp: str | None, toolchain: Toolchain,
            learn: bool = False, with_terminals: bool = True,
            caller: Mapping[str, str] | None = None, proxy_ports: tuple[int, ...] = (),
            proxy_env: Mapping[str, str] | None = None) -> Prepared:
    """What this Mac holds for the launch, the environment and the profile built on it.
    The environment is built twice: the stubs' lookup reads its DEVELOPER_DIR, and git's
    settings follow what the profile lets the sandbox read. `proxy_ports` and `proxy_env`:
    proxy mode's ports on localhost and the variables naming them."""
    from ..view import view_for

    view = view_for(snapshot, MACOS_SYSTEM_FOLDERS)
    base = sandbox_environment(snapshot, temp, caller=caller, proxy=proxy_env)
    host = mac_host(snapshot, temp=temp, env=base, toolchain=toolchain,
                    with_terminals=with_terminals)
    host = dataclasses.replace(host, proxy_ports=proxy_ports)
    env = sandbox_environment(snapshot, temp, caller=caller, proxy=proxy_env,
                              readable=lambda path: readable(view, host, path))
    profile = compile_profile(view, host, learn=learn)
    return Prepared(host, env, profile)


def _found(command: str, env: dict[str, str]) -> bool:
    """Whether exec would find `command` (as execvp looks it up): a missing one is
    said as on Linux (127) without starting anything."""
    if "/" in command:
        return os.path.exists(command)
    path = env.get("PATH", "/usr/bin:/bin")
    return any(os.path.isfile(os.path.join(d or ".", command)) for d in path.split(":"))


def print_plan(snapshot: Snapshot, command: list[str], out: TextIO, *,
               toolchain: Toolchain | None = None) -> int:
    """`lnk sandbox plan --os macos`: the profile and its parameters, on any OS. Each
    path lnk writes here is `shown` (the profile's listing writes each parameter's value
    on its line as Python's repr), so no name starts a line of its own."""
    from ..terminal import shell_line, shown

    # A stand-in for the folder each run makes (mkdtemp names it when the run starts).
    temp = os.path.join(os.path.realpath(tempfile.gettempdir()), "lnk-sandbox-RUN")
    ports = PLAN_PROXY_PORTS if snapshot.settings.network_mode == "proxy" else ()
    profile = prepare(snapshot, temp=temp, toolchain=toolchain or Toolchain(),
                      with_terminals=False, proxy_ports=ports).profile
    out.write(f"# spec: {shown(snapshot.source)}\n# the Seatbelt profile for sandbox-exec "
              "(-p) and its parameters (-D); not run on this machine unless it is a Mac\n")
    out.write(profile.listing())
    out.write(f"# {TEMP_NAME}: made for each run, in place of {shown(temp)}\n")
    if ports:
        out.write(f"# the proxy's ports on localhost: picked for each run, in place of "
                  f"{ports[0]} (HTTP) and {ports[1]} (SOCKS5)\n")
    out.write("# command: " + shell_line([SANDBOX_EXEC, "-p", "PROFILE",
                                          *(f"-D{k}=..." for k, _ in profile.parameters),
                                          "--", *command]) + "\n")
    return 0


@dataclass
class _Outcome:
    status: int
    root_refused: bool = False
    seen: list[object] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    timed_out: bool = False


class _Child:
    """sandbox-exec, running: its group, the terminal, signals passed on to it."""

    def __init__(self, argv: list[str], env: dict[str, str], timeout: float | None = None):
        self.terminal = foreground_terminal()
        self.run_deadline = Deadline(timeout)
        self.timed_out = False
        defaults = {s for s in signal.valid_signals() if s not in _UNCATCHABLE}
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, setpgroup=0, setsigdef=defaults,
                                      setsigmask=())
        except OSError as err:
            raise LaunchError(f"cannot start {argv[0]}: {err.strerror}", errno=err.errno,
                              hint="sandbox-exec ships with macOS at /usr/bin/sandbox-exec"
                              ) from None
        self.status: int | None = None
        self.signals = SignalForwarding(self.pid, self.kill)
        self.signals.install()
        if self.terminal is not None:
            give_terminal(self.terminal, self.pid)
            self._signal_group(signal.SIGCONT)  # stopped if it read the terminal before

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def time_out(self) -> None:
        """The run's deadline passed with the command still running: kill its group."""
        self.timed_out = True
        self.kill()

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
            if not self.timed_out and self.run_deadline.passed():
                self.time_out()
            self.signals.overdue()
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
        self.signals.restore()
        if self.terminal is not None:
            give_terminal(self.terminal, os.getpgrp())


class MacLauncher:
    """Runs snapshots under Seatbelt. Every argument but the timeouts is for tests only:
    stand-ins for sandbox-exec and `log`, a toolchain of fake stubs, and the answer to
    "is this process sandboxed already"."""

    def __init__(self, *, sandbox_exec: str = SANDBOX_EXEC, log: str = LOG,
                 toolchain: Toolchain | None = None,
                 nested: Callable[[], bool] = sandboxed, boot: Callable[[], str] = boot_session,
                 attach_timeout: float = 5.0, quiet: float = 0.3, settle_limit: float = 2.0,
                 probe_timeout: float = 20.0):
        self.sandbox_exec = sandbox_exec
        self.log = log
        self.toolchain = toolchain or Toolchain()
        self.nested = nested
        self.boot = boot
        self.attach_timeout = attach_timeout
        self.quiet = quiet
        self.settle_limit = settle_limit
        self.probe_timeout = probe_timeout

    def run(self, snapshot: Snapshot, argv: list[str], *, report: str | None = None,
            decide: Decide | None = None, timeout: float | None = None) -> int:
        return self.launch(snapshot, argv, report=report, decide=decide,
                           timeout=timeout).status

    def launch(self, snapshot: Snapshot, argv: list[str], *, report: str | None = None,
               decide: Decide | None = None, timeout: float | None = None,
               temp: str | None = None) -> _Outcome:
        """One run; `temp`, a session's temp folder to use (and keep) as the run's own."""
        events = EventLog(open_report(report) if report else None)
        try:
            outcome = self._launch(snapshot, argv, learn=False, events=events, decide=decide,
                                   timeout=timeout, session_temp=temp)
        finally:
            events.close()
        if outcome.timed_out and timeout is not None:
            say(timed_out_message(timeout))
        return outcome

    def learn(self, snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
        from ..events import Executed
        from ..learn import LeftOut, render, summarize

        snapshot = snapshot._replace(programs=None)
        temp_holder: list[str] = []
        outcome = self._launch(snapshot, argv, learn=True, events=None, temp_out=temp_holder)
        seen = [item for item in outcome.seen if isinstance(item, Executed)]
        judged = snapshot
        if temp_holder:  # a program run from the run's temp folder is never offered
            judged = snapshot._replace(grants=(*snapshot.grants, Grant(
                "$TMPDIR", temp_holder[0], "write", TEMP_NAME, None, None)))
        learned, left = summarize(seen, judged)
        # A stub's tool is allowed with the stub (programs.py): only the stub is offered.
        paths = {item.path for item in learned}
        instead: dict[str, str] = {}
        for item in learned:
            for path, why in runs_instead(item.path, self.toolchain, outcome.env):
                if path in paths and path != item.path:
                    instead.setdefault(path, f"runs in place of {item.entry} ({why}); "
                                             f"listing {item.entry} allows it")
        learned = [item for item in learned if item.path not in instead]
        left = sorted([*left, *(LeftOut(p, why) for p, why in instead.items())],
                      key=lambda x: x.path)
        return outcome.status, render(learned, left, argv)

    # -- one launch --------------------------------------------------------------------

    def _launch(self, snapshot: Snapshot, argv: list[str], *, learn: bool,
                events: EventLog | None, temp_out: list[str] | None = None,
                decide: Decide | None = None, timeout: float | None = None,
                session_temp: str | None = None) -> _Outcome:
        if self.nested():
            raise NESTED
        temp = os.path.realpath(session_temp or tempfile.mkdtemp(prefix="lnk-sandbox-"))
        if temp_out is not None:
            temp_out.append(temp)
        proxy = None
        try:
            if snapshot.settings.network_mode == "proxy":  # the proxy loads only for proxy mode
                from .proxy import MacProxy

                proxy = MacProxy(snapshot, events, decide)
            prepared = prepare(snapshot, temp=temp, toolchain=self.toolchain, learn=learn,
                               proxy_ports=proxy.ports if proxy else (),
                               proxy_env=proxy.environment() if proxy else None)
            env, profile = prepared.env, prepared.profile
            if not _found(argv[0], env):
                say(f"cannot run {argv[0]}: not found")
                return _Outcome(127, env=env)
            for note in profile.notes:
                say(note)
            command = sandbox_exec_argv(profile, argv, sandbox_exec=self.sandbox_exec)
            if not learn and snapshot.programs is None:
                self._check_profile(snapshot, profile, env)
                if proxy is None:
                    return self._finish(self._plain(command, env, timeout), None, env)
                ended = self._watched(command, env, profile, None, snapshot, proxy=proxy,
                                      timeout=timeout)
                return self._finish(ended, None, env)
            from ..learn import written_folders

            namer = Namer(events, learn=learn, written=written_folders(snapshot))
            ended = self._watched(command, env, profile, namer, snapshot, learn=learn,
                                  proxy=proxy, timeout=timeout)
            return self._finish(ended, namer, env)
        finally:
            if proxy is not None:
                proxy.close()
            if session_temp is None:
                shutil.rmtree(temp, ignore_errors=True)

    def _check_profile(self, snapshot: Snapshot, profile: Profile,
                       env: dict[str, str]) -> None:
        """The readiness probe without the log: once per boot for this profile's text,
        passes kept (LaunchError when it fails)."""
        from ..capabilities import CheckCache

        cache = CheckCache(snapshot.lnk_home, boot=self.boot())
        key = "macos_profile:" + digest(profile)
        if cache.get(key) is True:
            return
        result = run_probe(self.sandbox_exec, profile, env, timeout=self.probe_timeout)
        if not result.ok:
            raise result.problem(self.sandbox_exec)
        cache.record(key, True)

    def _plain(self, command: list[str], env: dict[str, str],
               timeout: float | None = None) -> tuple[int, bool]:
        """No program list: nothing to name, so no log and no event loop. The wait
        status, and whether the timeout ended it."""
        child = _Child(command, env, timeout)
        try:
            return child.wait(), child.timed_out
        finally:
            child.close()

    def _probe_once(self, profile: Profile, env: dict[str, str], namer: Namer) -> ProbeResult:
        """One reported probe; its pid is known to the namer before it can exec."""
        try:
            probe = start_probe(self.sandbox_exec, profile, env, report=True)
        except OSError as err:
            raise LaunchError(f"cannot start {self.sandbox_exec}: {err.strerror}",
                              errno=err.errno,
                              hint="sandbox-exec ships with macOS at /usr/bin/sandbox-exec"
                              ) from None
        namer.probes.add(probe.pid)
        return finish_probe(probe, self.probe_timeout)

    async def _ready(self, stream: LogStream, namer: Namer, profile: Profile,
                     env: dict[str, str]) -> bool:
        """Probe until one probe's report is read (True), the stream ends or the time is
        up (False). A probe sandbox-exec fails is a LaunchError whatever the log does."""
        import anyio

        namer.probe_program = PROBE_PROGRAM
        deadline = time.monotonic() + self.attach_timeout
        while True:
            result = await anyio.to_thread.run_sync(self._probe_once, profile, env, namer)
            if not result.ok:
                raise result.problem(self.sandbox_exec)
            until = min(deadline, time.monotonic() + 0.5)
            while (result.pid not in namer.probes_seen and not stream.ended
                   and time.monotonic() < until):
                await anyio.sleep(0.005)
            if result.pid in namer.probes_seen:
                return True
            if stream.ended or time.monotonic() >= deadline:
                return False

    def _watched(self, command: list[str], env: dict[str, str], profile: Profile,
                 namer: Namer | None, snapshot: Snapshot, *, learn: bool = False,
                 proxy: MacProxy | None = None, timeout: float | None = None
                 ) -> tuple[int, bool]:
        """The command under the event loop: with `log stream` read beside it to name
        refused programs (`namer`), and the proxy served (`proxy`)."""
        with ExitStack() as stack:
            stream = None
            if namer is not None:
                stream = LogStream(log_stream_argv(self.log), namer)
                try:
                    stream.start()
                except OSError as err:
                    self._without_log(learn, f"cannot start {self.log}: {err.strerror}",
                                      "`log` ships with macOS at /usr/bin/log")
                    self._check_profile(snapshot, profile, env)
                    stream = None
                    if proxy is None:
                        return self._plain(command, env, timeout)
                else:
                    stack.callback(stream.stop)  # stopped once the loop has ended
            return _run_loop(partial(self._supervise, command, env, profile, namer, stream,
                                     learn=learn, proxy=proxy, timeout=timeout))
        raise AssertionError("unreachable")  # the stack swallows nothing

    async def _supervise(self, command: list[str], env: dict[str, str], profile: Profile,
                         namer: Namer | None, stream: LogStream | None, *, learn: bool,
                         proxy: MacProxy | None, timeout: float | None) -> tuple[int, bool]:
        """The command to its end, with the proxy served and the log read beside it in
        one task group; the child closed on every way out."""
        import anyio

        status = 0
        timed_out = False
        problem: Exception | None = None
        async with anyio.create_task_group() as group:
            if proxy is not None:
                group.start_soon(proxy.serve)
            if stream is not None:
                group.start_soon(stream.read)
            try:
                if stream is not None and namer is not None and not await self._ready(
                        stream, namer, profile, env):
                    self._without_log(learn, *stream.failure())
                with closing(_Child(command, env, timeout)) as child:
                    if namer is not None:
                        namer.lineage = Lineage(child.pid)
                    status = await child.wait_async()
                    timed_out = child.timed_out
                    if stream is not None:
                        await stream.settle(quiet=self.quiet, limit=self.settle_limit)
            except Exception as err:  # raised after the group, not wrapped in one
                problem = err
            finally:
                group.cancel_scope.cancel()
        if problem is not None:
            raise problem
        return status, timed_out

    def _without_log(self, learn: bool, what: str, fix: str) -> None:
        if learn:
            raise LaunchError(f"learn reads Seatbelt's reports from the system log, and {what}",
                              hint=fix)
        say(f"{what}: the program list still holds, but refused programs go unnamed "
            f"(to name them: {fix})")

    @staticmethod
    def _finish(ended: tuple[int, bool], namer: Namer | None, env: dict[str, str]) -> _Outcome:
        status, timed_out = ended
        if timed_out:
            return _Outcome(TIMEOUT_STATUS, seen=list(namer.seen) if namer else [], env=env,
                            timed_out=True)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
        refused = namer is not None and namer.root_refused
        if refused and code != 0:
            code = 126  # Seatbelt refused sandbox-exec's exec of the command itself
        return _Outcome(code, refused, list(namer.seen) if namer else [], env)


def _run_loop(main: Callable[[], Awaitable[tuple[int, bool]]]) -> tuple[int, bool]:
    import anyio

    options: dict[str, object] = {}
    try:
        import uvloop  # noqa: F401

        options["use_uvloop"] = True
    except ImportError:
        pass
    return anyio.run(main, backend="asyncio", backend_options=options)


def preflight_macos(snapshot: Snapshot, *, sandbox_exec: str = SANDBOX_EXEC) -> None:
    """What a launch checks before starting sandbox-exec, without starting the command:
    for a command saved to run later. Not nesting, nor the probe: `wrap` may be run
    inside an agent's sandbox for a service that runs the command outside; the launch
    asks both then."""
    if not os.access(sandbox_exec, os.X_OK):
        raise LaunchError(f"{sandbox_exec} is missing", hint="sandbox-exec ships with macOS")
    prepare(snapshot, temp=None, toolchain=Toolchain(), with_terminals=False)


def run_macos(snapshot: Snapshot, argv: list[str], *, report: str | None = None,
              decide: Decide | None = None, timeout: float | None = None,
              tmp: str | None = None) -> _Outcome:
    return MacLauncher().launch(snapshot, argv, report=report, decide=decide,
                                timeout=timeout, temp=tmp)


def launch_macos(snapshot: Snapshot, argv: list[str], *, report: str | None,
                 decide: Decide | None, timeout: float | None, cwd: str | None,
                 tmp: str | None, file_op: FileOp | None) -> Ended:
    """One run, said as the hall's launch says it (run.launch_snapshot)."""
    if cwd is not None:
        os.chdir(cwd)  # sandbox-exec starts where its parent is
    if file_op is not None:
        argv = mac_file_op_argv(file_op)
    mac = run_macos(snapshot, argv, report=report, decide=decide, timeout=timeout, tmp=tmp)
    # The file operation's command exits with its errno (inner/fileop.py).
    failed = file_op is not None and 0 < mac.status < 124
    return Ended(mac.status, mac.timed_out, mac.status if failed else None)


def mac_file_op_argv(file_op: FileOp) -> list[str]:
    """macOS has no inner: the file operation runs as the command, inner/fileop.py's own
    source under this interpreter (which the profile must let run)."""
    with open(os.path.join(inner_source(), "fileop.py"), encoding="utf-8") as handle:
        source = handle.read()
    code = source + "\nimport sys\nsys.exit(standalone(sys.argv[1:]))\n"
    limit = "" if file_op.limit is None else str(file_op.limit)
    return [interpreter()[0], "-I", "-S", "-c", code, file_op.op, file_op.path, limit]


def learn_macos(snapshot: Snapshot, argv: list[str]) -> tuple[int, str]:
    return MacLauncher().learn(snapshot, argv)


__all__ = ["MacLauncher", "launch_macos", "learn_macos", "mac_file_op_argv", "preflight_macos",
           "prepare", "print_plan", "run_macos"]
