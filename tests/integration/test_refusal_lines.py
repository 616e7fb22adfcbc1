"""A refused program's notice is a line of its own, whatever the sandbox is writing.

The shell writes its error on the refused exec in pieces (dash: three write() calls,
"/bin/sh: 1: ", "./p7", ": Permission denied\n"), on the stderr the supervisor says its
notice on. The notice is said before the refused exec goes on (watch.py), so it is
whole before the shell's first word: tried here hundreds of times in a run and across
runs, with every CPU kept busy beside it, each notice checked to start a line, once, and
before the shell's own line for the same program. Landlock still refuses alone: the
program sees EACCES, Landlock's answer, which the watch never gives.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.held import HeldCall
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns,
              pytest.mark.requires_landlock(abi=1), pytest.mark.requires_seccomp_notify]

LISTED = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cat", "python3"]\n'
PROGRAMS = 300  # refused programs in one run, each said once
RUNS = 10  # runs of the naming test itself, per watch (the runs above: 300 each)


@pytest.fixture(params=["compiled", "python"])
def watch_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The compiled hot path, and the pure-Python watch it falls back to."""
    if request.param == "compiled":
        from supervisor.linux.watch import compiled_available

        if not compiled_available():
            pytest.fail("the compiled exec watch was not built (setup.py needs gcc and "
                        "Python's headers)")
        return {}
    return {"LNK_EXEC_WATCH": "python"}


@pytest.fixture
def busy() -> Iterator[None]:
    """Every CPU kept busy beside the runs, so that the refused program, the shell and
    the watch's receivers are preempted at any point, as on a loaded host."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
               for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _programs(sandbox: Sandbox, count: int) -> None:
    """`count` files the spec does not list, each a program of its own (a script the
    kernel would run, were it allowed): p0 ... p{count-1} in the project."""
    for index in range(count):
        path = sandbox.project / f"p{index}"
        path.write_text("#!/bin/sh\necho RAN\n")
        path.chmod(0o755)
    sandbox.chown(sandbox.project)


def _lines(stderr: str, project: Path, count: int) -> None:
    """Every line of stderr is a whole notice or the shell's whole error line; each
    program named once, before the shell's line for it."""
    notice = re.compile(rf"lnk-sandbox: refused {re.escape(str(project))}/p(\d+) "
                        r"\(not in \[commands\]\): built inside a folder the sandbox "
                        r"writes, so never listed by learn; run it outside or list it by "
                        r"path")
    shell = re.compile(r"/bin/sh: \d+: \./p(\d+): Permission denied")
    named: dict[int, int] = {}
    failed: dict[int, int] = {}
    for number, line in enumerate(stderr.splitlines()):
        if match := notice.fullmatch(line):
            assert int(match.group(1)) not in named, f"named twice: {line}"
            named[int(match.group(1))] = number
        elif match := shell.fullmatch(line):
            failed[int(match.group(1))] = number
        else:
            raise AssertionError(f"line {number} is neither a notice nor the shell's: "
                                 f"{line!r}\n{stderr[:2000]}")
    assert sorted(named) == sorted(failed) == list(range(count))
    late = [index for index in range(count) if named[index] > failed[index]]
    assert not late, f"named after the shell said it failed: {late[:10]}"


@pytest.mark.kernel_matrix
def test_hundreds_of_refusals_in_one_run_each_start_a_line(
        sandbox: Sandbox, watch_env: dict[str, str], busy: None) -> None:
    _programs(sandbox, PROGRAMS)
    done = sandbox.run(
        "/bin/sh", "-c",
        f'echo STARTED; i=0; while [ $i -lt {PROGRAMS} ]; do ./p$i; i=$((i+1)); done; '
        "echo DONE",
        spec=LISTED, env=watch_env, timeout=120)
    assert done.stdout.splitlines() == ["STARTED", "DONE"], done.stderr[-2000:]
    _lines(done.stderr, sandbox.project, PROGRAMS)


def test_the_naming_test_run_again_and_again_never_misses(
        sandbox: Sandbox, watch_env: dict[str, str], busy: None) -> None:
    """tests/integration/test_exec_watch.py's naming test, as it failed 18 times in
    120 runs and 2 in 42: its one refusal said on a line of its own every time."""
    missed = []
    for attempt in range(RUNS):
        done = sandbox.run(
            "/bin/sh", "-c", "echo STARTED; ls; echo LS=$?; ls /; echo LS=$?",
            spec=LISTED, env=watch_env)
        named = [line for line in done.stderr.splitlines() if line.startswith("lnk-sandbox: ")]
        if (done.stdout.splitlines() != ["STARTED", "LS=126", "LS=126"] or named != [
                "lnk-sandbox: refused /usr/bin/ls (not in [commands])"]):
            missed.append((attempt, done.stdout, done.stderr))
    assert not missed, f"{len(missed)} of {RUNS} missed; the first: {missed[0]}"


@pytest.mark.parametrize("append", [False, True])
def test_a_notice_after_a_partial_line_begins_a_line_of_its_own(
        sandbox: Sandbox, watch_env: dict[str, str], append: bool) -> None:
    """Where stderr keeps what was written (a file), the notice after half a line the
    sandbox left begins with a newline: `2>file` and `2>>file` alike. After a whole
    line, nothing is added."""
    log = sandbox.base / "stderr.txt"
    log.write_text("before\n" if append else "")
    sandbox.chown(log)
    spec = sandbox.write_spec(LISTED)
    command = (f"{LNK} sandbox run --spec {spec} --yes -- /bin/sh -c "
               "'printf half >&2; ls; printf \"whole\\n\" >&2; ls /'")
    with open(log, "a" if append else "w") as stderr:
        done = subprocess.run([*sandbox.who.prefix, "/bin/sh", "-c", command],
                              cwd=sandbox.project, env=sandbox.env(watch_env),
                              stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=60)
    assert done.returncode == 126, log.read_text()  # the shell's, for an exec refused
    assert log.read_text() == ("before\n" if append else "") + (
        "half\nlnk-sandbox: refused /usr/bin/ls (not in [commands])\n"
        "/bin/sh: 1: ls: Permission denied\nwhole\n/bin/sh: 1: ls: Permission denied\n")


@pytest.mark.requires_root  # to trace the supervisor, whoever runs it
def test_the_refused_exec_waits_for_its_notice_and_landlock_refuses_it(
        sandbox: Sandbox, watch_env: dict[str, str]) -> None:
    """The supervisor's write of the notice is held (ptrace): the refused exec has not
    gone on meanwhile, so the shell has said nothing of it; released, the program gets
    EACCES from Landlock (the watch only ever lets a call go on)."""
    script = ("import os, sys\nprint('STARTED', flush=True)\nsys.stdin.readline()\n"
              "try:\n    os.execv('/usr/bin/ls', ['ls'])\nexcept OSError as err:\n"
              "    print('ERRNO', err.errno, flush=True)\n")
    with subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec", str(sandbox.write_spec(LISTED)),
         "--yes", "--", PYTHON_INSIDE, "-c", script],
        cwd=sandbox.project, env=sandbox.env({**watch_env, "LNK_EXEC_WATCH_RECEIVERS": "1"}),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            assert process.stdout.readline() == "STARTED\n"
            with HeldCall(process.pid, _SYS_WRITE) as held:
                process.stdin.write("go\n")
                process.stdin.flush()
                thread = held.wait_held(timeout=30)
                fd = int(Path(f"/proc/{process.pid}/task/{thread}/syscall").read_text()
                         .split()[1], 16)
                assert fd == 2, "the first write held is not the notice on stderr"
                # Were the exec let go on, Landlock's answer would be printed at once.
                early = select.select([process.stdout], [], [], 1.0)[0]
                assert not early, "the exec went on before its notice was written"
            out, err = process.communicate(timeout=60)
        except BaseException:
            process.kill()
            raise
    assert out == "ERRNO 13\n"
    assert err.splitlines()[0] == "lnk-sandbox: refused /usr/bin/ls (not in [commands])"


_SYS_WRITE = {"x86_64": 1, "aarch64": 64}[os.uname().machine]
