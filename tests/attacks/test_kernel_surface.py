"""Known ways out of comparable sandboxes, run for real from inside: terminal injection,
mounts and nested namespaces, running code without the execute right, io_uring,
processes outside. Each probe proves it started, then asserts the exact failure."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from inner.syscalls import number
from support.processes import at_terminal
from support.sandbox import LNK, PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

EPERM, ENOSYS, EACCES = errno.EPERM, errno.ENOSYS, errno.EACCES
LISTED = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cat", "python3", "cp", "chmod"]\n'


def _codes(stdout: str) -> list[int]:
    return [int(line.split()[2]) for line in stdout.splitlines() if line.startswith("CALL ")]


# -- terminal injection (CVE-2017-5226) --------------------------------------------------

@pytest.mark.parametrize("request_code", ["0x5412", "0x100005412", "0x541C", "0xffffffff0000541c"])
def test_terminal_injection_at_a_real_terminal(sandbox: Sandbox, request_code: str) -> None:
    """TIOCSTI/TIOCLINUX on the terminal the sandbox shares with the person's shell."""
    code = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('STARTED', flush=True)\n"
        f"r = libc.ioctl(0, ctypes.c_ulong({request_code}), ctypes.c_char_p(b'x'))\n"
        "print('IOCTL', r, ctypes.get_errno(), flush=True)\n"
    )
    _, output = at_terminal([*sandbox.who.prefix, LNK, "sandbox", "run", "--", PYTHON_INSIDE,
                             "-c", code], cwd=sandbox.project, env=sandbox.env(), timeout=30)
    assert b"STARTED" in output
    assert f"IOCTL -1 {EPERM}".encode() in output


# -- mounts and namespaces ---------------------------------------------------------------

@pytest.mark.kernel_matrix
def test_a_nested_user_namespace_to_remount_read_only_binds(sandbox: Sandbox,
                                                           landlock: bool) -> None:
    done = sandbox.run(
        "/bin/sh", "-c",
        "echo STARTED; unshare -U -r -m sh -c 'mount -o remount,bind,rw /usr && echo RW'; "
        "echo UNSHARE=$?; touch /usr/lnk-probe; echo TOUCH=$?",
        landlock=landlock,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED"
    assert "RW" not in lines
    assert "UNSHARE=1" in lines and "TOUCH=1" in lines
    assert not os.path.exists("/usr/lnk-probe")


@pytest.mark.kernel_matrix
def test_mount_the_new_mount_api_and_pivot_root(sandbox: Sandbox, landlock: bool) -> None:
    calls = [
        (f"{number('mount')},0,0,0,0x20,0", EPERM),  # MS_REMOUNT
        (f"{number('umount2')},0,2", EPERM),
        (f"{number('fsopen')},0,0", ENOSYS),
        (f"{number('open_tree')},-100,0,1", ENOSYS),
        (f"{number('mount_setattr')},-100,0,0,0,0", ENOSYS),
        (f"{number('pivot_root')},0,0", EPERM),
        (f"{number('chroot')},0", EPERM),
        (f"{number('unshare')},0x20000", EPERM),
        (f"{number('setns')},0,0", EPERM),
    ]
    result = sandbox.probe("calls", *(c for c, _ in calls), landlock=landlock).expect(0)
    assert _codes(result.stdout) == [code for _, code in calls]


def test_root_mode_remounts_nothing(root_sandbox: Sandbox) -> None:
    done = root_sandbox.run(
        "/bin/sh", "-c",
        "echo STARTED; id -u; mount -o remount,rw /usr; echo R1=$?; "
        "mount -o remount,rw /; echo R2=$?; mount -t proc proc /tmp; echo R3=$?",
    )
    lines = done.stdout.splitlines()
    assert lines[:2] == ["STARTED", "0"]
    assert {"R1=32", "R2=32", "R3=32"} <= set(lines)  # mount(8): the call was refused


# -- running code without the execute right ---------------------------------------------

@pytest.mark.kernel_matrix
@pytest.mark.requires_landlock(abi=1)
@pytest.mark.requires_seccomp_notify
@pytest.mark.requires_memfd_noexec_seal
@pytest.mark.parametrize("flags", ["0x0", "0x10", "0x1"])
def test_code_run_from_memory(sandbox: Sandbox, flags: str) -> None:
    result = sandbox.probe("memfd", flags, spec=LISTED).expect(0)
    assert "proc_exec=13" in result.stdout and "fexecve=1" in result.stdout
    assert "chmod=1" in result.stdout


@pytest.mark.kernel_matrix
@pytest.mark.requires_landlock(abi=1)
def test_a_hugetlb_memory_file(sandbox: Sandbox) -> None:
    sandbox.probe("memfd", "0x4", spec=LISTED).expect(errno.EINVAL)


@pytest.mark.kernel_matrix
def test_fexecve_and_execveat_by_descriptor(sandbox: Sandbox, landlock: bool) -> None:
    sandbox.probe("fexecve", "/usr/bin/true", landlock=landlock).expect(EPERM)
    calls = [f"{number('execveat')},0,0,0,0,0x1000", f"{number('execveat')},3,0,0,0,0x1100"]
    result = sandbox.probe("calls", *calls, landlock=landlock).expect(0)
    assert _codes(result.stdout) == [EPERM, EPERM]


@pytest.mark.requires_landlock(abi=1)
def test_a_copy_of_an_allowed_program_in_a_written_folder(sandbox: Sandbox) -> None:
    done = sandbox.run("/bin/sh", "-c",
                       "echo STARTED; cp /usr/bin/cat ./cat2; chmod 755 ./cat2; "
                       "./cat2 /etc/hostname > /dev/null; echo RAN=$?", spec=LISTED)
    assert done.stdout.splitlines()[0] == "STARTED"
    assert "RAN=126" in done.stdout
    assert "refused" in done.stderr and "cat2" in done.stderr


@pytest.mark.requires_landlock(abi=1)
def test_the_loader_runs_a_readable_file_the_stated_gap(sandbox: Sandbox) -> None:
    """`ld.so ./x` runs a program the list does not name: the record's stated gap, shown
    exactly as stated, and named by `check`."""
    loader = os.path.realpath("/lib64/ld-linux-x86-64.so.2" if os.uname().machine == "x86_64"
                              else "/lib/ld-linux-aarch64.so.1")
    spec = LISTED.replace('"chmod"]', f'"chmod", "{loader}"]')
    done = sandbox.run("/bin/sh", "-c",
                       f"echo STARTED; cp /usr/bin/id ./id2; {loader} ./id2 -u; echo LD=$?; "
                       "./id2 -u; echo DIRECT=$?", spec=spec)
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED"
    assert "LD=0" in lines  # the gap: the loader ran a file the list does not name
    assert "DIRECT=126" in lines  # the file itself is still refused
    report = sandbox.lnk("check", spec=spec)
    assert "ld.so ./x" in report.stdout


# -- io_uring, and processes outside -----------------------------------------------------

@pytest.mark.kernel_matrix
def test_io_uring_is_unavailable_to_open_around_the_filter(sandbox: Sandbox,
                                                          landlock: bool) -> None:
    calls = [f"{number('io_uring_setup')},8,0", f"{number('io_uring_enter')},3,1,0,0,0,0",
             f"{number('io_uring_register')},3,0,0,0"]
    result = sandbox.probe("calls", *calls, landlock=landlock).expect(0)
    assert _codes(result.stdout) == [EPERM, EPERM, EPERM]


@pytest.mark.kernel_matrix
def test_no_process_outside_is_visible_or_signalled(sandbox: Sandbox, landlock: bool) -> None:
    outside = subprocess.Popen(["sleep", "30"])
    try:
        code = (
            "import os, signal\n"
            "print('STARTED')\n"
            "print('PIDS', ' '.join(p for p in os.listdir('/proc') if p.isdigit()))\n"
            f"try:\n    os.kill({outside.pid}, 0); print('KILL ok')\n"
            "except OSError as e:\n    print('KILL', e.errno)\n"
            "try:\n    os.kill(-1, signal.SIGKILL)\n"
            "except OSError as e:\n    print('ALL', e.errno)\n"
        )
        done = sandbox.run(PYTHON_INSIDE, "-c", code, landlock=landlock)
        lines = done.stdout.splitlines()
        assert lines[0] == "STARTED"
        assert f"KILL {errno.ESRCH}" in lines
        pids = [int(pid) for pid in lines[1].split()[1:]]
        assert all(pid < 10 for pid in pids)  # the sandbox's own pid namespace
        assert outside.poll() is None  # kill(-1) reached nothing outside
    finally:
        outside.kill()
        outside.wait()


def test_host_path_sockets_are_not_reached_through_the_default_grants(sandbox: Sandbox) -> None:
    for path in ("/run/dbus/system_bus_socket", "/var/run/docker.sock", "/run/docker.sock",
                 "/tmp/.X11-unix/X0"):
        sandbox.probe("stat", path).expect(errno.ENOENT)


def test_the_environment_cannot_load_code_into_the_sandbox(sandbox: Sandbox) -> None:
    env = {"LD_PRELOAD": "/tmp/evil.so", "LD_AUDIT": "/tmp/evil.so",
           "LD_LIBRARY_PATH": "/tmp/evil", "GCONV_PATH": "/tmp/evil", "GLIBC_TUNABLES":
           "glibc.malloc.check=3"}
    result = sandbox.run("/usr/bin/env", env=env)
    assert result.returncode == 0
    names = {line.split("=", 1)[0] for line in result.stdout.splitlines()}
    assert names.isdisjoint(env)


@pytest.mark.kernel_matrix
def test_the_hosts_abstract_sockets_in_host_mode(sandbox: Sandbox, landlock: bool) -> None:
    """With the host's network shared, Landlock's scope closes the host's abstract
    sockets (ABI 6+); without it they are reachable: the gap `check` states."""
    import socket

    from support import capabilities

    name = f"lnk-attack-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(4)
    try:
        spec = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
        result = sandbox.probe("abstract", name, spec=spec, landlock=landlock)
        if landlock and capabilities.landlock_abi() >= 6:
            result.expect(EPERM)
        elif not landlock:
            result.expect(0)  # the stated gap, exactly as stated
            report = sandbox.lnk("check", spec=spec, landlock=False)
            assert "abstract unix sockets" in report.stdout
        else:
            pytest.skip("Landlock below ABI 6 has no scopes: the gap case is the other one")
    finally:
        server.close()
