"""The Python API for harnesses: run a command, read and write a file, through a sandbox.

Each call is one supervisor process (`supervisor/child.py`), started by the harness's
own event loop as `lnk sandbox run` would be, so calls run side by side and a harness's
loop, threads and signals stay its own. The spec is validated and resolved here, once:
a `Sandbox` holds the snapshot (what the person allowed) and hands it to every call,
which never resolves a name again and cannot widen it: a call chooses its working
directory among what the sandbox sees, its timeout, its input and its variables, never
a grant.

A `Sandbox` also keeps a /tmp of its own between its calls (a folder in `$LNK_HOME`,
which no sandbox sees, bound at /tmp; removed when the Sandbox closes), so that one
command can leave a file in /tmp for the next, as in a container. The one-shot
functions use a fresh /tmp each, as `lnk sandbox run` does.

Cancelling a call (a cancel scope, a task group ending) sends the supervisor SIGTERM,
which reaches the command's own handler, and kills the whole tree after
`CANCEL_GRACE` seconds if it is still there.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from supervisor import errors
from supervisor.deadline import check_timeout
from supervisor.events import Event
from supervisor.grants import Snapshot
from supervisor.spec import Spec
from supervisor.state import remove_tree

from . import _arguments, _server

CANCEL_GRACE = 1.0
CHUNK = 1 << 16

# The child runs this very code: the folder holding `supervisor` goes first on its path,
# and `-I` keeps the working directory (a project the sandbox writes) off it.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(errors.__file__)))
_CHILD = (f"import sys; sys.path.insert(0, {_ROOT!r}); from supervisor.child import main; "
          "raise SystemExit(main(sys.argv[1:]))")

SpecSource = Spec | str | os.PathLike[str] | Mapping[str, Any] | None
"""A spec: a validated `Spec`, a TOML file's path, a dict (as tomllib would read the
file), or None for the embedded default (the working directory writable)."""


class Completed(subprocess.CompletedProcess[bytes]):
    """How a sandboxed command ended: `subprocess.CompletedProcess` (args, returncode,
    stdout, stderr; output None when not captured), and what the sandbox knows of it.

    `refusals`: each refusal of the run as the supervisor saw it (`Event`: a program the
    spec's list refused, a network name or address refused), never guessed from output.
    `timed_out`: the run's timeout killed it (returncode 124). `exec_errno`: the errno the
    command itself could not be run with (returncode 126 or 127), where the OS says it.
    """

    def __init__(self, args: Sequence[str], returncode: int, stdout: bytes | None,
                 stderr: bytes | None, *, refusals: tuple[Event, ...] = (),
                 timed_out: bool = False, exec_errno: int | None = None) -> None:
        super().__init__(list(args), returncode, stdout, stderr)
        self.refusals = refusals
        self.timed_out = timed_out
        self.exec_errno = exec_errno


def spec_from_toml(text: str, *, name: str = "<string>") -> Spec:
    """A spec from TOML text, validated as a file's would be (SpecError with the line)."""
    from supervisor.spec import parse_spec

    return parse_spec(text.encode("utf-8"), name)


def spec_from_dict(data: Mapping[str, Any], *, name: str = "<dict>") -> Spec:
    """A spec from plain data, validated by the same code as a file's (no line)."""
    from supervisor.spec import parse_spec_data

    return parse_spec_data(dict(data) if isinstance(data, Mapping) else data, name)


def load_spec(spec: SpecSource) -> Spec | None:
    """Any accepted form of a spec, validated; None for the embedded default."""
    if spec is None or isinstance(spec, Spec):
        return spec
    if isinstance(spec, str | os.PathLike):
        from supervisor.spec import load_spec as load_file

        return load_file(os.fspath(spec))
    if isinstance(spec, Mapping):
        return spec_from_dict(spec)
    raise TypeError(f"a spec is a Spec, a path or a dict, not {type(spec).__name__}")


def _decode_events(data: bytes) -> tuple[Event, ...]:
    events = []
    for line in data.splitlines():
        try:
            record = json.loads(line)
            events.append(Event(**record))
        except (ValueError, TypeError):
            continue
    return tuple(events)


def _raise_error(error: dict[str, Any]) -> None:
    """The child's SandboxError, raised here as the same class with the same fields."""
    name = error.get("class")
    message = str(error.get("message"))
    if name == "SpecError":
        raise errors.SpecError(message, file=str(error.get("file")), key=error.get("key"),
                               line=error.get("line"), hint=error.get("hint"))
    kinds: dict[str, type[errors.SandboxError]] = {
        "LaunchError": errors.LaunchError, "ConfinementError": errors.ConfinementError,
        "HelperError": errors.HelperError, "NotAllowedError": errors.NotAllowedError}
    raise kinds.get(str(name), errors.SandboxError)(message, hint=error.get("hint"),
                                                      errno=error.get("errno"))


class _Tail:
    """A stream's bytes, or its last `limit` bytes."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if self.limit is not None and len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]


async def _drain(stream: anyio.abc.ByteReceiveStream | None, into: _Tail) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into.add(chunk)


async def _feed(stream: anyio.abc.ByteSendStream | None, data: bytes | None) -> None:
    if stream is None:
        return
    try:
        view = memoryview(data or b"")
        while view:
            await stream.send(bytes(view[:CHUNK]))
            view = view[CHUNK:]
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
        pass  # the command stopped reading: what it read is what it got
    finally:
        await stream.aclose()


class _End:
    """One end of a pipe, closed once: by the task done with it, or by the call that
    made it (a task cancelled before it ran never reaches its own `finally`)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        os.set_blocking(fd, False)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            anyio.notify_closing(fd)
            os.close(fd)


async def _read_end(end: _End) -> bytes:
    """Everything until EOF from a pipe's read end, without blocking the loop."""
    chunks: list[bytes] = []
    await _drain_fd(end, chunks.append)
    return b"".join(chunks)


async def _drain_end(end: _End, into: _Tail) -> None:
    """A pipe's read end drained into `into` until EOF, without blocking the loop."""
    await _drain_fd(end, into.add)


async def _drain_fd(end: _End, take: Callable[[bytes], object]) -> None:
    """Each chunk of a pipe's read end handed to `take` until EOF; the end closed."""
    try:
        while end.fd is not None:
            try:
                chunk = os.read(end.fd, CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(end.fd)
                continue
            if not chunk:
                break
            take(chunk)
    finally:
        end.close()


async def _write_end(end: _End, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view and end.fd is not None:
            try:
                view = view[os.write(end.fd, view):]
            except BlockingIOError:
                await anyio.wait_writable(end.fd)
    except BrokenPipeError:
        pass  # the child is gone; its status says why
    finally:
        end.close()


async def _end(process: anyio.abc.Process) -> None:
    """A cancelled call: SIGTERM to the supervisor (the command's handler runs), the
    whole tree killed after CANCEL_GRACE, reaped either way."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            try:
                process.terminate()
            except ProcessLookupError:
                pass
            with anyio.move_on_after(CANCEL_GRACE):
                await process.wait()
            if process.returncode is None:
                process.kill()  # bwrap dies with it, and its PID namespace with bwrap
                await process.wait()


@dataclass
class _Call:
    argv: list[str]
    timeout: float | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    file: dict[str, Any] | None = None


class Sandbox:
    """A spec resolved and allowed once, for many calls; an async context manager.

    `spec`: see `SpecSource`. `cwd`: where the spec's `.` is, and each call's working
    directory by default (the current one otherwise). `yes`: allow a spec not allowed
    before without asking (a harness has no one to ask; at a terminal it asks, as the
    command line does). `fresh_tmp`: a fresh /tmp for every call instead of one kept for
    the session. `decide_fd`: in proxy mode, the harness's end of a decider socket
    (README: Deciding at run time), asked about each destination no list names, for
    `decide_timeout` seconds; it is passed to each call's supervisor, never to the
    sandbox. SpecError for the spec, NotAllowedError when it cannot be allowed.
    """

    def __init__(self, spec: SpecSource = None, *, cwd: str | os.PathLike[str] | None = None,
                 yes: bool = False, fresh_tmp: bool = False, decide_fd: int | None = None,
                 decide_timeout: float | None = None) -> None:
        _arguments.decider(decide_fd, decide_timeout)
        self._spec = spec
        self._cwd = None if cwd is None else os.path.realpath(os.fspath(cwd))
        self._yes = yes
        self._fresh_tmp = fresh_tmp
        self._decide_fd = decide_fd
        self._decide_timeout = decide_timeout
        self._snapshot: Snapshot | None = None
        self._tmp: str | None = None
        self._reports: str | None = None

    @property
    def snapshot(self) -> Snapshot:
        """What the person allowed, resolved: the same for every call."""
        if self._snapshot is None:
            raise RuntimeError("the Sandbox is not open: use `async with Sandbox(...)`")
        return self._snapshot

    @property
    def tmp(self) -> str | None:
        """The host folder the sandbox sees as /tmp (Linux), or TMPDIR (macOS); None
        with `fresh_tmp`."""
        return self._tmp

    # -- opening and closing -------------------------------------------------------------

    async def __aenter__(self) -> Sandbox:
        await anyio.to_thread.run_sync(self._open)
        return self

    def _open(self) -> None:
        from supervisor.api import ensure_allowed
        from supervisor.policy import Context
        from supervisor.stages import snapshot_for
        from supervisor.state import ensure_private_dir

        context = Context.current()
        if self._cwd is not None:
            if not os.path.isdir(self._cwd):
                raise errors.SandboxError(f"the working directory {self._cwd} does not exist")
            context = context._replace(cwd=self._cwd)
        snapshot = snapshot_for(load_spec(self._spec), context)
        ensure_allowed(snapshot, yes=self._yes, yes_word="yes=True")
        if self._decide_fd is not None:
            from supervisor.netpolicy import DEFAULT_DECIDE_TIMEOUT, Decide
            from supervisor.run import check_decide

            check_decide(Decide(self._decide_fd, DEFAULT_DECIDE_TIMEOUT
                                if self._decide_timeout is None else self._decide_timeout),
                         snapshot)
        self._reports = ensure_private_dir(snapshot.lnk_home, "harness/reports")
        if not self._fresh_tmp and sys.platform == "darwin":
            # macOS: the session's TMPDIR, where each run's own would be made (its
            # profile denies $LNK_HOME whole).
            self._tmp = os.path.realpath(tempfile.mkdtemp(prefix="lnk-sandbox-session-"))
        elif not self._fresh_tmp:
            sessions = ensure_private_dir(snapshot.lnk_home, "harness/tmp")
            _prune_sessions(sessions)
            self._tmp = os.path.join(sessions, f"{os.getpid()}-{secrets.token_hex(8)}")
            os.mkdir(self._tmp, 0o755)  # as a fresh tmpfs at /tmp would be; its parent is 0700
        self._snapshot = snapshot

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Remove the session's /tmp (the calls have ended: each is awaited)."""
        tmp, self._tmp = self._tmp, None
        self._snapshot = None
        if tmp is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_tree, tmp)

    # -- calls -------------------------------------------------------------------------

    async def run(self, argv: Sequence[str], *, cwd: str | None = None,
                  env: Mapping[str, str] | None = None, timeout: float | None = None,
                  stdin: bytes | str | None = None, capture: bool = True,
                  output_limit: int | None = None) -> Completed:
        """Run `argv` in the sandbox; how it ended (never raises for the command's own
        failure: see `Completed`).

        `cwd`: the working directory inside, a folder the sandbox sees (relative: to the
        Sandbox's); it never widens a grant. `env`: variables set for this command,
        after the spec's (a loader variable is refused, as in a spec). `timeout`:
        seconds, after which the command and everything it started are killed
        (`timed_out`, 124). `stdin`: the command's input (None: nothing, /dev/null).
        `capture`: collect stdout and stderr (else they, and stdin when no `stdin` is
        given, are the harness's own);
        `output_limit`: keep only each stream's last so many bytes.
        """
        argv = _arguments.words(argv)
        call = _Call(argv, check_timeout(timeout, where="timeout"), self._inside(cwd),
                     _arguments.variables(env))
        data = _arguments.data(stdin, "stdin")
        result, out, err, events = await self._call(
            call, stdin=data, capture=capture,
            output_limit=_arguments.size(output_limit, "output_limit"))
        return Completed(argv, result["status"], out, err, refusals=events,
                         timed_out=bool(result["timed_out"]),
                         exec_errno=result["exec_errno"])

    async def read_file(self, path: str, *, limit: int | None = None,
                        timeout: float | None = None) -> bytes:
        """The bytes of the file at `path` as the sandbox sees it (relative: to the
        Sandbox's working directory), read by the sandbox itself: OSError as the kernel
        answered it there (FileNotFoundError, PermissionError, IsADirectoryError; EINVAL
        for what is not a regular file; EFBIG past `limit` bytes), TimeoutError."""
        path = _arguments.path(path)
        call = _Call(["read", path], check_timeout(timeout, where="timeout"),
                     self._inside(None), file={"op": "read", "path": path,
                                               "limit": _arguments.size(limit, "limit")})
        result, out, err, _ = await self._call(call, stdin=None, capture=True,
                                               output_limit=None)
        _file_outcome(result, path, err)
        return out or b""

    async def write_file(self, path: str, data: bytes | str, *,
                         timeout: float | None = None) -> None:
        """Write `data` (text as UTF-8) as the whole content of the file at `path`, by
        the sandbox itself, making missing parent folders; OSError as `read_file`."""
        path = _arguments.path(path)
        content = _arguments.data(data, "data", none=False)
        call = _Call(["write", path], check_timeout(timeout, where="timeout"),
                     self._inside(None), file={"op": "write", "path": path})
        result, _, err, _ = await self._call(call, stdin=content, capture=True,
                                             output_limit=None)
        _file_outcome(result, path, err)

    def _inside(self, cwd: str | None) -> str | None:
        """A call's working directory, absolute as the sandbox sees it (None: the
        Sandbox's own, where the snapshot was made)."""
        if cwd is None:
            return None
        return os.path.normpath(os.path.join(self.snapshot.cwd, cwd))

    async def _call(self, call: _Call, *, stdin: bytes | None, capture: bool,
                    output_limit: int | None
                    ) -> tuple[dict[str, Any], bytes | None, bytes | None, tuple[Event, ...]]:
        snapshot = self.snapshot
        assert self._reports is not None
        report = os.path.join(self._reports, f"{os.getpid()}-{secrets.token_hex(8)}.jsonl")
        request = {"snapshot": snapshot.to_json(), "argv": call.argv, "timeout": call.timeout,
                   "cwd": call.cwd, "tmp": self._tmp, "env": call.env, "file": call.file,
                   "report": report,
                   "decide": None if self._decide_fd is None else {
                       "fd": self._decide_fd, "timeout": self._decide_timeout}}
        out, err = _Tail(output_limit), _Tail(output_limit)
        try:
            served = await _server.connection(snapshot.lnk_home, _ROOT)
            outcome = None
            if served is not None:
                try:
                    outcome = await self._served(served, request, stdin=stdin,
                                                 capture=capture, out=out, err=err)
                finally:
                    served.close()
            if outcome is None and _server.required():
                raise errors.SandboxError(
                    "the start server could not serve this call, and "
                    "LNK_START_SERVER=required asks for it")
            if outcome is None:  # no server served it (none can, or it refused): a child
                outcome = await self._spawned(request, stdin=stdin, capture=capture,
                                              out=out, err=err)
        finally:
            with anyio.CancelScope(shield=True):
                events = _take_report(report)
        result, status = outcome
        if result is None:
            raise errors.SandboxError(
                f"lnk-sandbox's supervisor ended without a result ({status})")
        if result.get("error"):
            _raise_error(result["error"])
        return (result, bytes(out.data) if capture else None,
                bytes(err.data) if capture else None, events)

    async def _served(self, served: _server.Served, request: dict[str, Any], *,
                      stdin: bytes | None, capture: bool, out: _Tail, err: _Tail
                      ) -> tuple[dict[str, Any] | None, str] | None:
        """The call run by the start server on `served`; None when it was not taken
        (nothing ran). Its standard files: pipes this process feeds and drains, when
        given input or capturing, else /dev/null for input and this process's own."""
        theirs: dict[int, int] = {}  # the run's descriptor number -> ours to send
        opened: list[int] = []  # the run's ends, closed here once sent
        feed: _End | None = None
        drains: list[tuple[_End, _Tail]] = []
        try:
            if stdin is not None:
                read_end, write_end = os.pipe2(os.O_CLOEXEC)
                opened.append(read_end)
                feed, theirs[0] = _End(write_end), read_end
            elif capture:
                theirs[0] = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                opened.append(theirs[0])
            else:
                theirs[0] = 0
            for number, tail in ((1, out), (2, err)):
                if capture:
                    read_end, write_end = os.pipe2(os.O_CLOEXEC)
                    opened.append(write_end)
                    drains.append((_End(read_end), tail))
                    theirs[number] = write_end
                else:
                    theirs[number] = number
            if self._decide_fd is not None:
                theirs[self._decide_fd] = self._decide_fd
            taken = await served.start(request, theirs)
        except BaseException:
            for end in (feed, *(end for end, _ in drains)):
                if end is not None:
                    end.close()
            raise
        finally:
            for fd in opened:
                os.close(fd)
        if not taken:
            for end in (feed, *(end for end, _ in drains)):
                if end is not None:
                    end.close()
            return None
        result: dict[str, Any] | None = None
        try:
            async with anyio.create_task_group() as group:
                if feed is not None:
                    group.start_soon(_write_end, feed, stdin or b"")
                for end, tail in drains:
                    group.start_soon(_drain_end, end, tail)
                result = await served.result()
        except BaseException:
            await served.end(CANCEL_GRACE, served.result)
            raise
        finally:
            for end in (feed, *(end for end, _ in drains)):
                if end is not None:
                    end.close()
        return result, "its start server's run was killed"

    async def _spawned(self, request: dict[str, Any], *, stdin: bytes | None, capture: bool,
                       out: _Tail, err: _Tail) -> tuple[dict[str, Any] | None, str]:
        """The call run by a supervisor process of its own (`supervisor/child.py`)."""
        request_read, request_write = os.pipe()
        result_read, result_write = os.pipe()
        pipe = subprocess.PIPE
        try:
            process = await anyio.open_process(
                [sys.executable, "-I", "-c", _CHILD, str(request_read), str(result_write),
                 str(os.getpid())],
                # Not captured, and no input given: the harness's own stdin, as at a
                # terminal (a hook's input through Claude Code's prefix, for one).
                stdin=pipe if stdin is not None else subprocess.DEVNULL if capture else None,
                stdout=pipe if capture else None, stderr=pipe if capture else None,
                pass_fds=(request_read, result_write,
                          *(() if self._decide_fd is None else (self._decide_fd,))),
                start_new_session=True)
        except BaseException:
            for fd in (request_read, request_write, result_read, result_write):
                os.close(fd)
            raise
        os.close(request_read)
        os.close(result_write)
        ends = (_End(request_write), _End(result_read))
        answer = b""

        async def read_result() -> None:
            nonlocal answer
            answer = await _read_end(ends[1])

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_write_end, ends[0], json.dumps(request).encode())
                group.start_soon(read_result)
                group.start_soon(_feed, process.stdin, stdin)
                group.start_soon(_drain, process.stdout, out)
                group.start_soon(_drain, process.stderr, err)
                await process.wait()
        except BaseException:
            await _end(process)
            raise
        finally:
            for end in ends:
                end.close()
            with anyio.CancelScope(shield=True):
                await process.aclose()
        try:
            result: dict[str, Any] = json.loads(answer)
        except ValueError:
            return None, f"status {process.returncode}"
        return result, ""


def _file_outcome(result: dict[str, Any], path: str, stderr: bytes | None) -> None:
    """A file operation's errno as the OSError it names (FileNotFoundError...)."""
    if result["timed_out"]:
        raise TimeoutError(f"{path}: the file operation ran past its timeout")
    code = result["exec_errno"]
    if code is not None:
        raise OSError(code, os.strerror(code), path)
    if result["status"] != 0:
        said = (stderr or b"").decode("utf-8", "replace").strip()
        raise errors.SandboxError(f"{path}: the file operation ended with status "
                                  f"{result['status']}" + (f": {said}" if said else ""))


def _take_report(path: str) -> tuple[Event, ...]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ()
    try:
        with os.fdopen(fd, "rb") as handle:
            return _decode_events(handle.read())
    finally:
        os.unlink(path)


def _prune_sessions(folder: str) -> None:
    """Remove the /tmp of sessions whose harness is gone (killed before it closed)."""
    for name in os.listdir(folder):
        pid = name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            remove_tree(os.path.join(folder, name))
        except PermissionError:
            continue


# -- one-shot calls and their synchronous forms ------------------------------------------


async def run(argv: Sequence[str], *, spec: SpecSource = None,
              cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
              timeout: float | None = None, stdin: bytes | str | None = None,
              capture: bool = True, yes: bool = False, output_limit: int | None = None,
              decide_fd: int | None = None, decide_timeout: float | None = None
              ) -> Completed:
    """Run `argv` in a sandbox of `spec`, as `cd CWD && lnk sandbox run` would: the
    spec's `.` is `cwd` (the current folder by default), /tmp is fresh. See `Sandbox`
    and `Sandbox.run` for the rest."""
    _arguments.words(argv)  # before the spec is resolved: a mistake costs nothing
    check_timeout(timeout, where="timeout")
    async with Sandbox(spec, cwd=cwd, yes=yes, fresh_tmp=True, decide_fd=decide_fd,
                       decide_timeout=decide_timeout) as sandbox:
        return await sandbox.run(argv, env=env, timeout=timeout, stdin=stdin,
                                 capture=capture, output_limit=output_limit)


async def read_file(path: str, *, spec: SpecSource = None,
                    cwd: str | os.PathLike[str] | None = None, yes: bool = False,
                    limit: int | None = None) -> bytes:
    """The file at `path` read through a sandbox of `spec` (see `Sandbox.read_file`)."""
    async with Sandbox(spec, cwd=cwd, yes=yes, fresh_tmp=True) as sandbox:
        return await sandbox.read_file(path, limit=limit)


async def write_file(path: str, data: bytes | str, *, spec: SpecSource = None,
                     cwd: str | os.PathLike[str] | None = None, yes: bool = False) -> None:
    """Write the file at `path` through a sandbox of `spec` (see `Sandbox.write_file`)."""
    async with Sandbox(spec, cwd=cwd, yes=yes, fresh_tmp=True) as sandbox:
        await sandbox.write_file(path, data)


def run_sync(argv: Sequence[str], **options: Any) -> Completed:
    """`run` for a caller without an event loop (it starts one for the call)."""
    return anyio.run(lambda: run(argv, **options))


def read_file_sync(path: str, **options: Any) -> bytes:
    """`read_file` for a caller without an event loop."""
    return anyio.run(lambda: read_file(path, **options))


def write_file_sync(path: str, data: bytes | str, **options: Any) -> None:
    """`write_file` for a caller without an event loop."""
    anyio.run(lambda: write_file(path, data, **options))


__all__ = ["CANCEL_GRACE", "Completed", "Sandbox", "SpecSource", "load_spec",
           "read_file", "read_file_sync", "remove_tree", "run", "run_sync", "spec_from_dict",
           "spec_from_toml", "write_file", "write_file_sync"]
