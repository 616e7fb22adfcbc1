"""The exec watch: refused programs named once, memory files sealed under a program list,
`learn` listing what ran, and nothing running unwatched once the supervisor is gone."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from supervisor.linux.openat2 import SYS_OPENAT2
from support.capabilities import missing
from support.held import HeldCall
from support.processes import descendants, wait_gone
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns,
              pytest.mark.requires_landlock(abi=1), pytest.mark.requires_seccomp_notify]

LISTED = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cat", "python3"]\n'


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


@pytest.mark.kernel_matrix
@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_a_refused_program_is_named_once_and_a_listed_one_not(
    sandbox: Sandbox, watch_env: dict[str, str]
) -> None:
    report = sandbox.base / "report.jsonl"
    done = sandbox.lnk(
        "run", "--report", str(report), "--", "/bin/sh", "-c",
        "echo STARTED; ls; echo LS=$?; ls /; echo LS=$?; cat /etc/hostname >/dev/null; "
        "echo CAT=$?",
        spec=LISTED, env=watch_env,
    )
    assert done.stdout.splitlines()[0] == "STARTED"
    assert done.stdout.count("LS=126") == 2  # EACCES from Landlock, as sh reports it
    assert "CAT=0" in done.stdout
    named = [line for line in done.stderr.splitlines() if line.startswith("lnk-sandbox: ")]
    assert named == ["lnk-sandbox: refused /usr/bin/ls (not in [commands])"]
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert events, "the report lists the refusals"
    assert {e["resolved"] for e in events} == {"/usr/bin/ls"}
    for event in events:
        assert set(event) == {"kind", "subject", "resolved", "rule", "pid", "time"}
        assert event["kind"] == "program"
        assert event["rule"] == "commands.programs"
        assert event["pid"] > 0


def _bwrap_of(supervisor: int) -> int:
    """The supervisor's bwrap: its one child named bwrap."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            comm, fields = stat[stat.index("(") + 1: stat.rindex(")")], stat.rsplit(")", 1)[1]
            if comm == "bwrap" and int(fields.split()[1]) == supervisor:
                return int(entry)
    raise AssertionError(f"no bwrap under {supervisor}")


@pytest.mark.kernel_matrix
@pytest.mark.requires_root  # to trace the supervisor, whoever runs it
def test_learn_lets_each_exec_go_on_first_and_still_names_it_after_the_sandbox_ended(
        sandbox: Sandbox, watch_env: dict[str, str]) -> None:
    """learn says nothing during the run, so its calls go on before they are judged:
    the program (and the sandbox) may have ended by then, and the watch, holding the
    sandbox's mounts, still finds the file. Forced here: the watch's judgement (its
    first openat2) is held with ptrace until bwrap has ended."""
    spec = sandbox.write_spec('[files]\nwrite = ["."]\n')
    with subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "learn", "--spec", str(spec), "--yes", "--",
         "/bin/sh", "-c", "echo STARTED; read go; /usr/bin/id -u >/dev/null; echo ID=$?"],
        cwd=sandbox.project, env=sandbox.env({**watch_env, "LNK_EXEC_WATCH_RECEIVERS": "1"}),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        try:
            assert process.stdout.readline() == "STARTED\n"
            bwrap = _bwrap_of(process.pid)
            with HeldCall(process.pid, SYS_OPENAT2) as held:
                process.stdin.write("go\n")
                process.stdin.flush()
                held.wait_held(timeout=30)
                assert not wait_gone({bwrap}, timeout=30), \
                    "the sandbox did not end while the judgement waited"
            out, err = process.communicate(timeout=60)
        except BaseException:
            process.kill()
            raise
    assert out.splitlines()[-1] == "ID=0"
    assert '    "id",' in err.splitlines(), err


def test_a_fifo_run_as_a_program_stalls_nothing(sandbox: Sandbox, watch_env: dict[str, str]
                                               ) -> None:
    """The kernel refuses to exec a FIFO; the watch judging it must not wait for a writer
    (a plain open would), or its receiver (here the only one) and every exec after wait."""
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "python3"]\n'
    done = sandbox.run(
        "/bin/sh", "-c",
        "echo STARTED; python3 -c 'import os; os.mkfifo(\"f\")'; ./f; echo F=$?; "
        "/bin/sh -c 'echo SECOND'",
        spec=spec, env={**watch_env, "LNK_EXEC_WATCH_RECEIVERS": "1"}, timeout=30)
    assert done.stdout.splitlines() == ["STARTED", "F=126", "SECOND"]
    assert f"lnk-sandbox: refused {sandbox.project}/f (not in [commands])" in done.stderr


def test_a_scripts_interpreter_is_judged_too(sandbox: Sandbox, watch_env: dict[str, str]
                                            ) -> None:
    script = sandbox.project / "tool.pl"
    script.write_text("#!/usr/bin/perl\nprint 1;\n")
    script.chmod(0o755)
    sandbox.chown()
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "' + str(script) + '"]\n'
    done = sandbox.run("/bin/sh", "-c", f"echo STARTED; {script}; echo RAN=$?", spec=spec,
                       env=watch_env)
    assert done.stdout.splitlines()[0] == "STARTED"
    assert "RAN=126" in done.stdout
    assert "refused /usr/bin/perl" in done.stderr


@pytest.mark.requires_memfd_noexec_seal
@pytest.mark.parametrize("flags", ["0x0", "0x10", "0x2", "0x1", "0x3"])
def test_memory_files_under_a_list_never_run(sandbox: Sandbox, flags: str,
                                            watch_env: dict[str, str]) -> None:
    result = sandbox.probe("memfd", flags, spec=LISTED, env=watch_env).expect(0)
    line = next(x for x in result.stdout.splitlines() if x.startswith("MEMFD "))
    fields = dict(item.split("=") for item in line.split()[1:])
    assert int(fields["seals"], 16) & 0x20  # F_SEAL_EXEC: never executable again
    assert fields["chmod"] == "1"  # EPERM
    assert fields["seal"] == "0"  # it can be sealed
    assert fields["mmap"] == "0"  # and mapped executable (JITs)
    assert fields["proc_exec"] == "13"  # EACCES through /proc/self/fd
    assert fields["fexecve"] == "1"  # EPERM from the filter
    assert fields["cloexec"] == ("1" if int(flags, 16) & 1 else "0")


@pytest.mark.kernel_matrix
@pytest.mark.requires_memfd_noexec_seal
@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_memory_files_asking_for_the_seal_run_as_they_are(sandbox: Sandbox) -> None:
    result = sandbox.probe("memfd", "0x8", spec=LISTED).expect(0)
    assert "proc_exec=13" in result.stdout and "chmod=1" in result.stdout


@pytest.mark.kernel_matrix
@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_memory_files_under_a_list_are_refused_where_the_kernel_cannot_seal(
        sandbox: Sandbox) -> None:
    """Before Linux 6.3 (emulated here: MFD_NOEXEC_SEAL answered EINVAL) the watch cannot
    seal, so under a list memfd_create is refused with ENOSYS; without a list memory
    files are made as asked."""
    sandbox.probe("memfd", "0x0", spec=LISTED, memfd_seal=False).expect(errno.ENOSYS)
    result = sandbox.probe("memfd", "0x0", memfd_seal=False).expect(0)
    assert "proc_exec=0" in result.stdout


@pytest.mark.kernel_matrix
def test_memory_files_of_huge_pages_are_refused(sandbox: Sandbox) -> None:
    """On every kernel: EINVAL, checked first, as on a kernel without huge pages."""
    sandbox.probe("memfd", "0x4", spec=LISTED).expect(22)


@pytest.mark.kernel_matrix
@pytest.mark.requires_memfd_noexec_seal
def test_a_jit_keeps_executable_memory_under_a_list(sandbox: Sandbox) -> None:
    code = (
        "import ctypes, mmap, os\n"
        "fd = os.memfd_create('jit', 0)\n"
        "os.write(fd, bytes([0xB8, 42, 0, 0, 0, 0xC3]).ljust(4096, b'\\0'))  # mov eax,42; ret\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.mmap.restype = ctypes.c_void_p\n"
        "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,"
        " ctypes.c_int, ctypes.c_long]\n"
        "address = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_SHARED,"
        " fd, 0)\n"
        "print('STARTED')\n"
        "print('RESULT', ctypes.CFUNCTYPE(ctypes.c_int)(address)())\n"
    )
    if os.uname().machine != "x86_64":
        pytest.skip("the machine code here is x86_64")
    done = sandbox.run(PYTHON_INSIDE, "-c", code, spec=LISTED)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["STARTED", "RESULT 42"]


@pytest.mark.parametrize("flags", [
    "0x0", pytest.param("0x10", marks=pytest.mark.requires_memfd_noexec_seal)])
@pytest.mark.kernel_matrix
def test_without_a_list_memory_files_run_as_asked(sandbox: Sandbox, flags: str) -> None:
    """Plain and (where the kernel has it) MFD_EXEC: executable, as asked."""
    result = sandbox.probe("memfd", flags).expect(0)
    assert "proc_exec=0" in result.stdout and "chmod=0" in result.stdout


@pytest.mark.kernel_matrix
def test_learn_lists_what_ran_and_leaves_out_what_the_sandbox_wrote(
    sandbox: Sandbox, watch_env: dict[str, str]
) -> None:
    subprocess.run(["git", "init", "-q", str(sandbox.project)], check=True)
    script = sandbox.project / "build.sh"
    script.write_text(
        "#!/bin/sh\n"
        "git status --short >/dev/null\n"
        "echo hello | sed s/h/H/\n"
        "printf '#!/bin/sh\\necho helper ran\\n' > ./helper.sh\n"
        "chmod +x ./helper.sh\n"
        "./helper.sh\n"
    )
    script.chmod(0o755)
    sandbox.chown()
    done = sandbox.lnk("learn", "--", "/bin/sh", str(script), env=watch_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello\nhelper ran\n"  # the command's own output, alone
    lines = done.stderr.splitlines()
    start = lines.index("[commands]")
    entries = {line.split('"')[1]: line for line in lines[start:] if line.startswith('    "')}
    assert {"git", "sed", "sh", "chmod"} <= set(entries)
    assert "interpreter" in entries["sh"]
    assert "interpreter" not in entries["git"]
    assert all("helper" not in name for name in entries)
    assert any(line.startswith(f"# left out {sandbox.project}/helper.sh: in a folder the "
                               "sandbox writes") for line in lines)
    assert list(entries) == sorted(entries)


@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_learn_writes_nothing(sandbox: Sandbox) -> None:
    spec_text = '[files]\nwrite = ["."]\n'
    spec = sandbox.write_spec(spec_text)
    done = sandbox.lnk("learn", "--spec", str(spec), "--yes", "--", "/bin/true")
    assert done.returncode == 0
    assert spec.read_text() == spec_text
    assert "[commands]" in done.stderr


@pytest.mark.kernel_matrix
@pytest.mark.usefixtures("inner")  # the compiled inner and its Python fallback
def test_nothing_runs_unwatched_once_the_supervisor_is_gone(sandbox: Sandbox) -> None:
    loop = ("echo STARTED; echo READY; "
            "while :; do cat /dev/null; echo ran >> execs.log; done")
    process = subprocess.Popen(
        [*sandbox.who.prefix, LNK, "sandbox", "run", "--spec",
         str(sandbox.write_spec(LISTED)), "--yes", "--", "/bin/sh", "-c", loop],
        cwd=sandbox.project, env=sandbox.env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "STARTED\n"
    assert process.stdout.readline() == "READY\n"
    time.sleep(0.3)  # the loop runs a while: execs the watch judges
    tree = descendants(process.pid)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert not wait_gone(tree), "the sandbox outlived its supervisor"
    log = sandbox.project / "execs.log"
    count = log.read_text().count("ran")
    time.sleep(0.5)  # a while in which a loop left running would have run more
    assert log.read_text().count("ran") == count  # the loop (and its execs) ended


def test_node_keeps_working_under_a_list(sandbox: Sandbox) -> None:
    """A real JIT: V8 maps memory executable (and may make memory files for it)."""
    node = "/usr/bin/node"
    if not os.access(node, os.X_OK):
        missing("node is not installed in /usr/bin (ci/setup.sh --test: apt-get install nodejs)")
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["/usr/bin/node"]\n'
    done = sandbox.run(node, "-e", "console.log('STARTED', [1, 2, 3].map(x => x * 2).join())",
                       spec=spec)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "STARTED 2,4,6\n"
