"""The inner confiner in a real sandbox: the seccomp filter's refusals, the program list
enforced by Landlock, and the launch failing closed where Landlock is missing.

Every test first proves its probe started inside. Tests of file and system-call rules
use an unrestricted spec, so that they run with and without Landlock; tests of the
program list need Landlock and say so.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from inner.syscalls import native_arch, number
from support.sandbox import PROBE_SOURCE, PYTHON_INSIDE, SUPPORT, ProbeResult, Sandbox

# Each test runs with both inner confiners: the compiled one and its Python fallback.
pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns,
              pytest.mark.usefixtures("inner")]

EPERM, ENOSYS, EINVAL = errno.EPERM, errno.ENOSYS, errno.EINVAL

# (call, arguments after the number, the errno the filter answers)
REFUSED = [
    ("kexec_load", "0,0,0,0", EPERM),
    ("kexec_file_load", "0,0,0,0,0", EPERM),
    ("init_module", "0,0,0", EPERM),
    ("finit_module", "0,0,0", EPERM),
    ("delete_module", "0,0", EPERM),
    ("bpf", "0,0,0", EPERM),
    ("keyctl", "0,0,0,0,0", EPERM),
    ("add_key", "0,0,0,0,0", EPERM),
    ("request_key", "0,0,0,0", EPERM),
    ("mount", "0,0,0,0,0", EPERM),
    ("umount2", "0,0", EPERM),
    ("pivot_root", "0,0", EPERM),
    ("chroot", "0", EPERM),
    ("open_tree", "0,0,0", ENOSYS),
    ("move_mount", "0,0,0,0,0", ENOSYS),
    ("fsopen", "0,0", ENOSYS),
    ("fsconfig", "0,0,0,0,0", ENOSYS),
    ("fsmount", "0,0,0", ENOSYS),
    ("fspick", "0,0,0", ENOSYS),
    ("mount_setattr", "0,0,0,0,0", ENOSYS),
    ("swapon", "0,0", EPERM),
    ("swapoff", "0", EPERM),
    ("reboot", "0,0,0,0", EPERM),
    ("acct", "0", EPERM),
    ("open_by_handle_at", "0,0,0", EPERM),
    ("userfaultfd", "0", EPERM),
    ("perf_event_open", "0,0,0,0,0", EPERM),
    ("io_uring_setup", "1,0", EPERM),
    ("io_uring_enter", "0,0,0,0,0,0", EPERM),
    ("io_uring_register", "0,0,0,0", EPERM),
    ("unshare", "0x10000000", EPERM),
    ("unshare", "0x20000", EPERM),
    ("setns", "0,0", EPERM),
    ("clone", "0x10000000,0,0,0,0", EPERM),
    ("clone", "0x40000000,0,0,0,0", EPERM),
    ("clone3", "0,0", ENOSYS),
    ("personality", "0x40000", EPERM),
    ("personality", "0x400000", EPERM),
    ("quotactl", "0,0,0,0", EPERM),
    ("syslog", "0,0,0", EPERM),
    ("settimeofday", "0,0", EPERM),
    ("clock_settime", "0,0", EPERM),
    ("kcmp", "0,0,0,0,0", EPERM),
    ("process_madvise", "0,0,0,0,0", EPERM),
    ("move_pages", "0,0,0,0,0,0", EPERM),
    ("migrate_pages", "0,0,0,0", EPERM),
    ("vmsplice", "0,0,0,0", EPERM),
    ("fanotify_init", "0,0", EPERM),
    ("sethostname", "0,0", EPERM),
    ("setdomainname", "0,0", EPERM),
    ("socket", "38,5,0", errno.EAFNOSUPPORT),
    ("socket", "40,1,0", errno.EAFNOSUPPORT),
    ("execveat", "0,0,0,0,0x1000", EPERM),
    ("memfd_create", "0,4", EINVAL),
    ("memfd_create", "0,0x5", EINVAL),
]
if native_arch() == "x86_64":
    REFUSED += [
        ("iopl", "3", EPERM),
        ("ioperm", "0,1,1", EPERM),
        ("uselib", "0", EPERM),
        ("ustat", "0,0", EPERM),
        ("sysfs", "1,0", EPERM),
        ("lookup_dcookie", "0,0,0", EPERM),
        ("nfsservctl", "0,0,0", EPERM),
    ]
# Allowed on purpose: a harmless personality, and an ordinary socket.
ALLOWED = [("personality", "0xffffffff"), ("socket", "1,1,0")]


def _calls(entries: list[tuple[str, str]]) -> list[str]:
    return [f"{number(name)},{args}" if args else str(number(name)) for name, args in entries]


def _codes(result: ProbeResult) -> list[int]:
    return [int(line.split()[2]) for line in result.stdout.splitlines()
            if line.startswith("CALL ")]


@pytest.mark.kernel_matrix
def test_every_refused_call_gets_its_errno_and_the_program_goes_on(
    sandbox: Sandbox, landlock: bool
) -> None:
    entries = [(name, args) for name, args, _ in REFUSED] + ALLOWED
    result = sandbox.probe("calls", *_calls(entries), landlock=landlock).expect(0)
    codes = _codes(result)
    assert len(codes) == len(entries), result.stdout
    expected = [code for _, _, code in REFUSED] + [0] * len(ALLOWED)
    mismatches = [
        (name, args, errno.errorcode.get(got, got), errno.errorcode.get(want, want))
        for (name, args), got, want in zip(entries, codes, expected, strict=True)
        if got != want
    ]
    assert mismatches == []
    assert "RESULT ok" in result.stdout


def test_tiocsti_with_high_bits_is_refused(sandbox: Sandbox) -> None:
    sandbox.probe("tiocsti").expect(EPERM)


@pytest.mark.skipif(native_arch() != "x86_64", reason="int 0x80 is an x86 instruction")
def test_an_i386_call_through_int_0x80_is_refused(sandbox: Sandbox) -> None:
    sandbox.probe("int80").expect(ENOSYS)


def test_running_a_file_descriptor_is_refused(sandbox: Sandbox, landlock: bool) -> None:
    result = sandbox.probe("fexecve", "/usr/bin/echo", landlock=landlock).expect(EPERM)
    assert "RESULT errno" in result.stdout


def test_no_nested_user_namespace_even_through_unshare_tool(sandbox: Sandbox) -> None:
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; unshare -U -r true; echo $?")
    lines = done.stdout.split()
    assert lines[0] == "STARTED"
    assert lines[-1] != "0"


def test_the_filter_and_no_new_privs_are_in_place(sandbox: Sandbox) -> None:
    result = sandbox.probe("caps").expect(0)
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["Seccomp"].strip() == "2"


LISTED = '[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cat"]\n'


@pytest.mark.kernel_matrix
@pytest.mark.requires_landlock(abi=1)
def test_a_program_list_runs_listed_programs_only(sandbox: Sandbox) -> None:
    done = sandbox.run(
        "/bin/sh", "-c",
        "echo STARTED; cat /etc/hostname >/dev/null && echo CAT-OK; ls / >/dev/null; "
        "echo LS=$?; /usr/bin/env true; echo ENV=$?",
        spec=LISTED,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED"
    assert "CAT-OK" in lines
    assert "LS=126" in lines  # sh's report of EACCES from execve
    assert "ENV=126" in lines
    assert "Permission denied" in done.stderr


@pytest.mark.requires_landlock(abi=1)
def test_a_copy_of_a_listed_program_does_not_run(sandbox: Sandbox) -> None:
    done = sandbox.run(
        "/bin/sh", "-c", "echo STARTED; cat /usr/bin/cat > ./mycat; chmod +x ./mycat; "
        "./mycat /etc/hostname >/dev/null; echo COPY=$?",
        spec=LISTED,
    )
    assert done.stdout.splitlines()[0] == "STARTED"
    assert "COPY=126" in done.stdout


@pytest.mark.requires_landlock(abi=1)
def test_the_command_itself_refused_by_the_list_is_126(sandbox: Sandbox) -> None:
    done = sandbox.run("/usr/bin/true", spec='[commands]\nprograms = []\n')
    assert done.returncode == 126
    assert "cannot run /usr/bin/true" in done.stderr
    listed = sandbox.run("/bin/sh", "-c", "exit 7", spec=LISTED)
    assert listed.returncode == 7


@pytest.mark.kernel_matrix
@pytest.mark.requires_landlock(abi=1)
def test_memory_files_under_a_list_are_refused_without_the_watch(sandbox: Sandbox) -> None:
    """Under another listener the sandbox's filter can have none: no watch to seal."""
    spec = '[files]\nwrite = ["."]\n[commands]\nprograms = ["python3"]\n'
    result = sandbox.probe("memfd-exec", "0", "/usr/bin/true", spec=spec, other_listener=True)
    result.expect(ENOSYS)
    assert "no exec watch" in result.stderr


@pytest.mark.kernel_matrix
def test_without_a_list_memory_files_are_made_as_asked(sandbox: Sandbox, landlock: bool) -> None:
    result = sandbox.probe("calls", f"{number('memfd_create')},0,1", landlock=landlock)
    result.expect(0)
    assert _codes(result) == [errno.EFAULT]  # the kernel read the NULL name: the call ran


def test_without_landlock_a_program_list_refuses_the_launch(sandbox: Sandbox) -> None:
    done = sandbox.run("/bin/sh", "-c", "echo STARTED", spec=LISTED, landlock=False)
    assert done.returncode == 125
    assert "STARTED" not in done.stdout
    assert "no Landlock" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.kernel_matrix
def test_without_landlock_an_unrestricted_spec_runs_confined_by_bwrap_and_the_filter(
    sandbox: Sandbox,
) -> None:
    result = sandbox.probe("write", "/usr/lnk-probe", landlock=False).expect(errno.EROFS)
    assert result.stderr.count("no Landlock") == 1
    sandbox.probe("write", str(sandbox.home / "x"), landlock=False).expect(errno.ENOENT)
    sandbox.probe("calls", f"{number('unshare')},0x10000000", landlock=False).expect(0)
    sandbox.probe("write", str(sandbox.project / "ok"), landlock=False).expect(0)


def _widened(sandbox: Sandbox, extra: str, landlock: bool, *command: str) -> ProbeResult:
    args = [sys.executable, str(SUPPORT / "widened.py"), extra, "--", *command]
    if not landlock:
        args = [sys.executable, str(SUPPORT / "no_landlock.py"), *args]
    done = subprocess.run([*sandbox.who.prefix, *args], cwd=sandbox.project,
                          env=sandbox.env(), capture_output=True, text=True, timeout=60)
    return ProbeResult(done.returncode, done.stdout, done.stderr)


@pytest.mark.kernel_matrix
def test_landlock_holds_the_grants_again_inside_a_wide_mount(
    sandbox: Sandbox, landlock: bool
) -> None:
    """A test-only plan binds one more folder writable that no grant names: Landlock
    still refuses the write; the no-Landlock emulation shows the test can fail."""
    # Outside /tmp: the sandbox's own /tmp is writable, and Landlock's rights there hold
    # beneath it, mounts included.
    extra = Path(tempfile.mkdtemp(prefix="lnk-test-wide-", dir="/var/tmp"))
    sandbox.chown(extra)
    # Writable by anyone: root mode runs as another uid, and the folder's mode must not
    # be what refuses the write without Landlock.
    extra.chmod(0o777)
    try:
        result = _widened(sandbox, str(extra), landlock, PYTHON_INSIDE, "-c", PROBE_SOURCE,
                          "write", str(extra / "f"))
        if landlock:
            result.expect(errno.EACCES)
            assert not (extra / "f").exists()
        else:
            result.expect(0)
            assert (extra / "f").exists()
    finally:
        shutil.rmtree(extra)


def test_an_inherited_descriptor_is_closed_even_without_landlock(sandbox: Sandbox) -> None:
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        from support.sandbox import LNK

        command = [sys.executable, str(SUPPORT / "no_landlock.py"), LNK, "sandbox", "run", "--",
                   "/bin/sh", "-c", f"echo STARTED; echo leak >&{write_end}; echo $?"]
        done = subprocess.run([*sandbox.who.prefix, *command], cwd=sandbox.project,
                              env=sandbox.env(), capture_output=True, text=True,
                              pass_fds=(write_end,), timeout=60)
    finally:
        os.close(write_end)
        leaked = os.read(read_end, 100)
        os.close(read_end)
    assert done.stdout.split()[0] == "STARTED"
    assert leaked == b""
    assert done.stdout.split()[-1] != "0"
