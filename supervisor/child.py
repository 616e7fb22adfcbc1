"""The supervisor process the Python API starts for each call (`python -I -m supervisor.child`).

Why a process of its own, not a call in the harness's: a run installs signal handlers
(the main thread's alone may), owns a terminal's foreground, runs its own event loop and
waits on bwrap as its parent; a harness has its own loop, threads and signals, and many
calls at once. So each call is one supervisor, as `lnk sandbox run` is, with the spec
resolved and allowed once by the harness (the snapshot, handed over whole and never
resolved again) and the command's stdin, stdout and stderr the child's own.

The request is one JSON object read from the descriptor named by the first argument:
`snapshot` (its JSON), `argv`, `timeout`, `cwd`, `tmp`, `env` (pairs, set last), `file`
(a FileOp, or null), `report` (a path in `$LNK_HOME` for the refusals), `decide` (the
decider's fd, passed on, and timeout, or null); the third
argument is the harness's pid, whose end ends the run. The result is
one JSON object written to the descriptor named by the second: `status`, `timed_out`,
`exec_errno`, and `error` (the SandboxError's class, message, hint and, for a spec's,
file, key and line) when lnk-sandbox itself refused or failed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .errors import SandboxError, SpecError
from .system import traits


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _error(err: SandboxError) -> dict[str, Any]:
    found: dict[str, Any] = {"class": type(err).__name__, "message": err.message,
                             "hint": err.hint, "errno": err.errno}
    if isinstance(err, SpecError):
        found.update(file=err.file, key=err.key, line=err.line)
    return found


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """Run what `request` asks; the result (see the module's docstring)."""
    from .grants import Snapshot
    from .run import launch_snapshot
    from .run_types import FileOp

    snapshot = Snapshot.from_json(request["snapshot"])
    env = tuple((str(k), str(v)) for k, v in request.get("env") or ())
    if env:
        # The call's variables, validated by the harness's side as a spec's [env] set,
        # are set after the spec's own: a harness's value for this one command.
        snapshot = snapshot._replace(settings=snapshot.settings._replace(
            env_assign=(*snapshot.settings.env_assign, *env)))
    file_op = FileOp(**request["file"]) if request.get("file") else None
    cwd = request.get("cwd")
    if cwd is None and traits().starts_in_parent_folder and os.path.isdir(snapshot.cwd):
        os.chdir(snapshot.cwd)  # sandbox-exec starts where its parent is
    decide = None
    if request.get("decide"):
        from .netpolicy import DEFAULT_DECIDE_TIMEOUT, Decide

        timeout = request["decide"]["timeout"]
        decide = Decide(int(request["decide"]["fd"]),
                        DEFAULT_DECIDE_TIMEOUT if timeout is None else float(timeout))
    ended = launch_snapshot(snapshot, list(request["argv"]), report=request.get("report"),
                            timeout=request.get("timeout"), cwd=cwd,
                            tmp=request.get("tmp"), file_op=file_op, decide=decide)
    return {"status": ended.status, "timed_out": ended.timed_out,
            "exec_errno": ended.exec_errno, "error": None}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The result of `request` (see the module's docstring), whatever happened: this
    process's (`main`) or a start server's run's (linux/startrun.py)."""
    result: dict[str, Any] = {"status": 125, "timed_out": False, "exec_errno": None,
                              "error": None}
    try:
        if "unreadable" in request:
            raise SandboxError(f"the request to lnk-sandbox's supervisor cannot be read: "
                               f"{request['unreadable']}")
        result = serve(request)
    except SandboxError as err:
        result["error"] = _error(err)
    except KeyboardInterrupt:
        result["status"] = 128 + 2
    except Exception as err:  # a bug of lnk-sandbox's: said, and a SandboxError there
        import traceback  # (with tokenize and textwrap: 2 ms of every call's start)

        traceback.print_exc()
        result["error"] = _error(SandboxError(f"lnk-sandbox failed: {err!r}"))
    return result


def _end_with(parent: int) -> None:
    """SIGTERM when the harness that started this supervisor is gone, however it went (a
    SIGKILL included): its command then ends as a supervisor's SIGTERM ends one, its own
    handler first, the tree killed after the grace. Linux's parent-death signal; checked
    once set, since the parent may be gone already."""
    if not traits().parent_death_signal:
        return  # macOS has none: a harness killed outright leaves its run to finish
    import signal

    from inner.syscalls import libc

    pr_set_pdeathsig = 1
    libc().prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    from .terminal import standard_streams

    standard_streams()  # the harness's own, when not captured, may be closed
    request_fd, result_fd = int(argv[0]), int(argv[1])
    if len(argv) > 2:
        _end_with(int(argv[2]))
    for fd in (request_fd, result_fd):
        os.set_inheritable(fd, False)  # never bwrap's, the helper's or the sandbox's
    try:
        request = json.loads(_read_all(request_fd))
    except ValueError as err:
        request = {"unreadable": str(err)}
    result = answer(request)
    data = json.dumps(result).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(result_fd, view):]
    os.close(result_fd)
    sys.stdout.flush()
    return int(result["status"])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
