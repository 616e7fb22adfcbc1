"""Limits: a command that forks, allocates, fills /tmp, opens files or spins the CPU
without end is stopped at the run's limit, and the machine keeps what it had. Each
attack first proves it ran inside, then counts how far it got."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

FORK_BOMB = """
import errno, os, sys
print("STARTED", flush=True)
made = 0
while made < 5000:  # the bound if the limit fails: the test's machine survives it
    try:
        pid = os.fork()
    except OSError as err:
        print("REFUSED", errno.errorcode[err.errno], flush=True)
        break
    if pid == 0:
        __import__("time").sleep(60)
        os._exit(0)
    made += 1
print("MADE", made, flush=True)
"""

MEMORY_HOG = """
import sys
print("STARTED", flush=True)
held = []
for step in range(64):  # 4 GiB at most if the limit fails
    held.append(bytearray(64 << 20))  # touched: bytearray zero-fills every page
    print("HELD", (step + 1) * 64, flush=True)
print("ALL OF IT", flush=True)
"""

TMP_FILL = """
import errno, os
print("STARTED", flush=True)
written = 0
block = b"x" * (1 << 20)
try:
    with open("/tmp/fill", "wb", buffering=0) as out:
        while written < (256 << 20):
            out.write(block)
            written += len(block)
except OSError as err:
    print("REFUSED", errno.errorcode[err.errno], flush=True)
print("WROTE", written >> 20, flush=True)
st = os.statvfs("/tmp")
print("SIZE", st.f_blocks * st.f_frsize >> 20, flush=True)
"""

FILES = """
import errno, os, resource
print("STARTED", flush=True)
opened = 0
try:
    while opened < 100000:
        os.open("/dev/null", os.O_RDONLY)
        opened += 1
except OSError as err:
    print("REFUSED", errno.errorcode[err.errno], flush=True)
print("OPENED", opened, flush=True)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1000, hard + 1000))
    print("RAISED", flush=True)
except (OSError, ValueError) as err:
    print("NOT RAISED", type(err).__name__, flush=True)
"""

SPIN = """
import time
print("STARTED", flush=True)
start = time.monotonic()
while time.monotonic() - start < 30:
    pass
print("SPUN 30 s", flush=True)
"""


def _lines(stdout: str, word: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith(word + " ")
            or line == word]


def test_a_fork_bomb_stops_at_the_process_limit(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", FORK_BOMB, spec="[limits]\npids = 64\n",
                       timeout=120)
    assert "STARTED" in done.stdout, done.stderr
    assert _lines(done.stdout, "REFUSED") == ["EAGAIN"], done.stdout + done.stderr
    made = int(_lines(done.stdout, "MADE")[0])
    assert 0 < made < 64  # the shell-less run: python, bwrap's init and the children


def test_the_process_limit_is_per_run_not_per_person(sandbox: Sandbox) -> None:
    """Two runs of 40 processes each, at once, under a limit of 48: each run has its own
    count (one count for the person, or for SANDBOX_UID in root mode, would refuse one)."""
    hold = ("import os, time\nprint('STARTED', flush=True)\n"
            "for _ in range(40):\n"
            "    if os.fork() == 0:\n        time.sleep(5)\n        os._exit(0)\n"
            "print('HELD', flush=True)\n")
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: sandbox.run(PYTHON_INSIDE, "-c", hold,
                                                   spec="[limits]\npids = 48\n", timeout=120),
                             range(2)))
    for done in runs:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "HELD" in done.stdout


def _own_cgroup_is_delegated(uid: int) -> bool:
    """Whether this process's v2 cgroup is one the person could make children in."""
    text = Path("/proc/self/cgroup").read_text()
    unified = [line.split(":", 2)[2] for line in text.splitlines() if line.startswith("0::")]
    if not unified:
        return False
    folder = Path("/sys/fs/cgroup") / unified[0].lstrip("/")
    try:
        return (folder / "cgroup.procs").stat().st_uid == uid
    except OSError:
        return False


def test_a_memory_hog_is_killed_at_the_limit_or_the_launch_refused(sandbox: Sandbox) -> None:
    """Root makes the run a memory cgroup; a person gets one only where their own cgroup
    is delegated to them. Elsewhere a memory limit the spec sets refuses the launch."""
    done = sandbox.run(PYTHON_INSIDE, "-c", MEMORY_HOG, spec='[limits]\nmemory = "256M"\n',
                       timeout=120)
    assert "Traceback" not in done.stderr
    if not (sandbox.who.is_root or _own_cgroup_is_delegated(sandbox.who.uid)):
        assert done.returncode == 125, done.stdout + done.stderr
        assert "STARTED" not in done.stdout
        assert "limits.memory" in done.stderr and "cgroup" in done.stderr
        return
    assert "STARTED" in done.stdout, done.stderr
    assert "ALL OF IT" not in done.stdout
    held = [int(x) for x in _lines(done.stdout, "HELD")]
    assert max(held, default=0) < 256
    assert done.returncode == 137, done.stderr
    assert "reached its memory limit" in done.stderr


def test_filling_tmp_stops_at_its_size(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", TMP_FILL, spec='[limits]\ntmp = "32M"\n')
    assert "STARTED" in done.stdout, done.stderr
    assert _lines(done.stdout, "REFUSED") == ["ENOSPC"], done.stdout
    assert int(_lines(done.stdout, "WROTE")[0]) <= 32
    assert _lines(done.stdout, "SIZE") == ["32"]


def test_the_default_tmp_has_the_default_size(sandbox: Sandbox) -> None:
    from supervisor.limits import Limits, resolve

    probe = "import os;s=os.statvfs('/tmp');print('STARTED');print('SIZE', s.f_blocks*s.f_frsize)"
    done = sandbox.run(PYTHON_INSIDE, "-c", probe)
    assert "STARTED" in done.stdout, done.stderr
    assert _lines(done.stdout, "SIZE") == [str(resolve(Limits()).tmp)]


def test_open_files_stop_at_the_limit_and_it_cannot_be_raised(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", FILES, spec="[limits]\nfiles = 64\n")
    assert "STARTED" in done.stdout, done.stderr
    assert _lines(done.stdout, "REFUSED") == ["EMFILE"]
    assert int(_lines(done.stdout, "OPENED")[0]) < 64
    assert "RAISED" not in done.stdout.split("NOT RAISED")[0]
    assert _lines(done.stdout, "NOT RAISED")


def test_a_spinning_process_is_stopped_at_its_cpu_time(sandbox: Sandbox) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", SPIN, spec="[limits]\ncpu = 1\n", timeout=60)
    assert "STARTED" in done.stdout, done.stderr
    assert "SPUN" not in done.stdout
    assert done.returncode in (128 + 24, 128 + 9), done.returncode  # SIGXCPU, then SIGKILL


def test_lifting_the_process_limit_is_written_as_none(sandbox: Sandbox) -> None:
    probe = ("import resource; print('STARTED')\n"
             "print('NPROC', resource.getrlimit(resource.RLIMIT_NPROC)[0])")
    limited = sandbox.run(PYTHON_INSIDE, "-c", probe, spec="[limits]\npids = 100\n")
    assert _lines(limited.stdout, "NPROC") == ["100"], limited.stderr
    lifted = sandbox.run(PYTHON_INSIDE, "-c", probe, spec='[limits]\npids = "none"\n')
    assert "STARTED" in lifted.stdout, lifted.stderr
    assert _lines(lifted.stdout, "NPROC") != ["100"]


RELAY_FLOOD = """
import os, select, socket, struct, sys, time
path = sys.argv[1]
print("STARTED", flush=True)
opened = []
for _ in range(300):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # A full backlog makes a blocking connect wait (SO_SNDTIMEO bounds it): the relay
    # stopped accepting.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 1, 0))
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        break
    sock.setblocking(False)
    opened.append(sock)
for sock in opened:
    try:
        sock.send(b"x")
    except OSError:
        pass
answered = set()
deadline = time.monotonic() + 3
while time.monotonic() < deadline and len(answered) < len(opened):
    ready, _, _ = select.select([s for s in opened if s not in answered], [], [], 0.2)
    for sock in ready:
        if sock.recv(1) == b"x":
            answered.add(sock)
print("OPENED", len(opened), "ANSWERED", len(answered), flush=True)
print("HELD", flush=True)
time.sleep(3)
"""


@pytest.mark.requires_root
def test_the_socket_relay_serves_a_bounded_number_of_connections(
        root_sandbox: Sandbox) -> None:
    """Run by root, each connection to a named socket costs the supervisor two threads
    outside the run's cgroups: a flood of them is served only up to the relay's cap, and
    the supervisor's threads stay bounded (counted on the host while the flood holds)."""
    import socket
    import subprocess
    import threading

    from supervisor.linux.socket_relay import MAX_CONNECTIONS

    path = root_sandbox.base / "echo.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(512)
    served: list[socket.socket] = []

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(64):
                conn.sendall(data)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            served.append(conn)
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    spec_text = f'[files]\nread = ["."]\n[network]\nunix = ["{path}"]\n'
    spec = root_sandbox.write_spec(spec_text)
    command = [LNK, "sandbox", "run", "--yes", "--spec", str(spec), "--",
               PYTHON_INSIDE, "-c", RELAY_FLOOD, str(path)]
    with subprocess.Popen(command, cwd=root_sandbox.working_directory(spec_text),
                          env=root_sandbox.env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
        assert run.stdout is not None
        lines = []
        for line in run.stdout:
            lines.append(line.strip())
            if line.startswith("HELD"):
                threads = len(os.listdir(f"/proc/{run.pid}/task"))
                break
        _, errors = run.communicate(timeout=60)
    listener.close()
    assert lines[0] == "STARTED", errors
    counts = lines[1].split()
    opened, answered = int(counts[1]), int(counts[3])
    assert opened > MAX_CONNECTIONS  # the flood got past the cap's number, queued
    assert 0 < answered <= MAX_CONNECTIONS, lines
    assert threads <= 2 * MAX_CONNECTIONS + 32, threads


MACHINE_TABLES = """
import ctypes, errno, os, resource, socket
print("STARTED", flush=True)
libc = ctypes.CDLL(None, use_errno=True)
context = ctypes.c_ulong(0)
# io_setup(nr_events, &ctx): x86_64 206, aarch64 0
number = 206 if os.uname().machine == "x86_64" else 0
made = 0
for _ in range(64):
    context.value = 0
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(1024), ctypes.byref(context)) != 0:
        print("IO_SETUP", errno.errorcode[ctypes.get_errno()], flush=True)
        break
    made += 1
print("AIO_CONTEXTS", made, flush=True)
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2)  # NETLINK_USERSOCK
    print("USERSOCK made", flush=True)
except OSError as err:
    print("USERSOCK", errno.errorcode[err.errno], flush=True)
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()  # NETLINK_ROUTE: ip, libc
print("ROUTE made", flush=True)
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
    print("CORE raised", flush=True)
except (OSError, ValueError):
    print("CORE", resource.getrlimit(resource.RLIMIT_CORE), flush=True)
"""


def test_the_machines_own_tables_and_core_files_are_out_of_reach(sandbox: Sandbox) -> None:
    """Kernel AIO contexts come from one table for the machine (fs.aio-max-nr), netlink's
    program-to-program queues are memory no cgroup is charged for, and a core file may
    start the host's own crash handler: none of them is the sandbox's."""
    before = int(Path("/proc/sys/fs/aio-nr").read_text())
    done = sandbox.run(PYTHON_INSIDE, "-c", MACHINE_TABLES)
    assert "STARTED" in done.stdout, done.stderr
    lines = done.stdout.splitlines()
    assert "IO_SETUP ENOSYS" in lines and "AIO_CONTEXTS 0" in lines, lines
    assert "USERSOCK EPROTONOSUPPORT" in lines and "ROUTE made" in lines, lines
    assert "CORE (0, 0)" in lines, lines
    assert int(Path("/proc/sys/fs/aio-nr").read_text()) <= before + 4096  # others' noise
