"""Many file (and git) actions in one sandbox, each answered exactly: the attacker the
dot-file and git-metadata tests run inside.

File actions give an errno name ("OK" when done); `git ...` gives "exit N: <the last
line git wrote on stderr>"; `list` prints `LIST path [names]`. Relative paths are the
working directory's. The script prints STARTED first: a result counts only after it.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

from .sandbox import PYTHON_INSIDE, Sandbox

Action = tuple[str, ...]

SCRIPT = r"""
import errno, json, os, subprocess, sys
print("STARTED", os.getpid(), os.getuid(), flush=True)
results = {}
for action in json.loads(sys.argv[1]):
    kind, *args = action
    key = " ".join(action[:2] if kind in ("write", "append", "make", "replace") else action)
    try:
        if kind == "git":
            done = subprocess.run(["git", *args], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
            last = (done.stderr.strip().splitlines() or [""])[-1]
            results[key] = f"exit {done.returncode}: {last}" if done.returncode else "exit 0"
            continue
        if kind in ("write", "make"):  # make: an executable payload
            fd = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o755 if kind == "make" else 0o644)
            os.write(fd, (args[1] if len(args) > 1 else "written inside\n").encode())
            os.close(fd)
        elif kind == "append":  # the file must be there: nothing is made
            fd = os.open(args[0], os.O_WRONLY | os.O_APPEND)
            os.write(fd, args[1].encode())
            os.close(fd)
        elif kind == "replace":  # a new file written beside, renamed over the target
            aside = args[0] + ".new"
            with open(aside, "w") as handle:
                handle.write(args[1])
            try:
                os.rename(aside, args[0])
            finally:
                if os.path.lexists(aside):
                    os.unlink(aside)
        elif kind == "copy":
            import shutil
            shutil.copytree(args[0], args[1], symlinks=True)
        elif kind == "mkdir":
            os.mkdir(args[0])
        elif kind == "makedirs":
            os.makedirs(args[0])
        elif kind == "rename":
            os.rename(args[0], args[1])
        elif kind == "unlink":
            os.unlink(args[0])
        elif kind == "rmdir":
            os.rmdir(args[0])
        elif kind == "symlink":
            os.symlink(args[0], args[1])
        elif kind == "stat":
            os.stat(args[0])
        elif kind == "list":
            print("LIST", args[0], json.dumps(sorted(os.listdir(args[0]))), flush=True)
        else:
            raise SystemExit("unknown action " + kind)
        code = 0
    except OSError as err:
        code = err.errno
    results[key] = errno.errorcode.get(code, str(code)) if code else "OK"
print("RESULTS " + json.dumps(results), flush=True)
"""


def key(action: Action) -> str:
    """How the script names an action in its results (a payload is left out)."""
    kind = action[0]
    return " ".join(action[:2] if kind in ("write", "append", "make", "replace") else action)


def name(code: int | str) -> str:
    if isinstance(code, str):
        return code
    return errno.errorcode.get(code, str(code)) if code else "OK"


def run_actions(box: Sandbox, actions: list[Action], *, spec: str | None = None,
                cwd: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """Run the actions in one sandbox: their results by key, and every line printed.
    Fails unless the script started inside and finished."""
    done = box.run(PYTHON_INSIDE, "-c", SCRIPT, json.dumps([list(a) for a in actions]),
                   spec=spec, cwd=cwd)
    lines = done.stdout.splitlines()
    assert lines and lines[0].startswith("STARTED "), (
        f"the actions never started inside (exit {done.returncode}):\n{done.stderr}\n"
        f"{done.stdout}")
    assert done.returncode == 0, done.stderr
    return json.loads(lines[-1].removeprefix("RESULTS ")), lines
