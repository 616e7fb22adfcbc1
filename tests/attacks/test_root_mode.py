"""What uid 0 gets without a capability, tried from inside: sysctls and /proc's global
files, set-ID files, files only their owner may read, sockets of daemons that trust uid 0.

Each door is tried as root (root mode keeps uid 0 in a user namespace of its own) and as
the unprivileged user, with and without Landlock: the mounts and the filter close them
alone. Where the harm would be outside (a sysctl, a file's mode), the host is read back
afterwards with its own tools. docs/root-mode.md is the threat model these test.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

SUPPORT = Path(__file__).resolve().parents[1] / "support"
SURFACE = (SUPPORT / "surface.py").read_text()
EROFS, EACCES, EPERM = errno.EROFS, errno.EACCES, errno.EPERM


def _sysctl(name: str) -> str:
    return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def core_pattern() -> Iterator[str]:
    """The host's kernel.core_pattern, put back should a test change it."""
    path = Path("/proc/sys/kernel/core_pattern")
    before = path.read_text()
    yield before.strip()
    if path.read_text() != before and os.geteuid() == 0:
        path.write_text(before)


# -- /proc/sys and the other global files of /proc ----------------------------------------

def test_core_pattern_cannot_be_set_to_run_a_program_as_the_hosts_root(
        sandbox: Sandbox, landlock: bool, core_pattern: str) -> None:
    """The escape: `|program` in core_pattern, then a crash, and the kernel runs the
    program as the host's root in the host's namespaces."""
    planted = sandbox.project / "x.sh"
    ran = sandbox.base / "core-handler-ran"
    planted.write_text(f"#!/bin/sh\ntouch {ran}\n")
    planted.chmod(0o755)
    sandbox.chown(planted)
    code = (
        "import os, signal, sys\n"
        "print('STARTED', os.getuid(), flush=True)\n"
        "try:\n"
        f"    fd = os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY)\n"
        f"    os.write(fd, b'|{planted}')\n"
        "    print('WROTE', flush=True)\n"
        "except OSError as err:\n"
        "    print('ERRNO', err.errno, flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n"
        "os.waitpid(pid, 0)\n"
    )
    done = sandbox.run(PYTHON_INSIDE, "-c", code, landlock=landlock)
    lines = done.stdout.split("\n")
    assert lines[0] == f"STARTED {sandbox.who.uid if not sandbox.who.is_root else 0}", done
    # Run by root the mode bits would allow it: the read-only mount refuses. Run by a
    # person, the mode bits refuse first.
    assert f"ERRNO {EROFS if sandbox.who.is_root else EACCES}" in lines, done
    assert _sysctl("kernel.core_pattern") == core_pattern
    assert not ran.exists()


GLOBAL_WRITES = [
    ("/proc/sys/kernel/randomize_va_space", "kernel.randomize_va_space"),
    ("/proc/sys/kernel/panic_on_oops", "kernel.panic_on_oops"),
    ("/proc/sys/kernel/hostname", "kernel.hostname"),  # its own uts: read-only all the same
    ("/proc/sys/vm/overcommit_memory", "vm.overcommit_memory"),
    ("/proc/sys/fs/file-max", "fs.file-max"),
]


@pytest.mark.parametrize(("path", "name"), GLOBAL_WRITES)
def test_no_sysctl_is_written(sandbox: Sandbox, landlock: bool, path: str, name: str) -> None:
    before = _sysctl(name)
    # The probe opens with O_TRUNC, which asks the mount first: read-only in every mode.
    sandbox.probe("write", path, landlock=landlock).expect(EROFS)
    assert _sysctl(name) == before


def test_the_hosts_network_sysctls_in_host_mode(sandbox: Sandbox, landlock: bool) -> None:
    """Shared with the host, net.* is the host's own: uid 0 owns it there."""
    spec = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
    before = _sysctl("net.ipv4.ip_forward")
    result = sandbox.probe("write", "/proc/sys/net/ipv4/ip_forward", spec=spec,
                           landlock=landlock)
    if sandbox.who.is_root and not landlock:
        # Root with the host's network needs Landlock's socket scope: refused first.
        assert result.code == 125 and "abstract unix sockets" in result.stderr
    else:
        result.expect(EROFS)
    assert _sysctl("net.ipv4.ip_forward") == before


# Each where this kernel has it (sysrq-trigger and mtrr are build options).
OTHER_GLOBAL = [path for path in ("/proc/irq/default_smp_affinity", "/proc/mtrr",
                                  "/proc/sysrq-trigger", "/proc/sys/vm/drop_caches")
                if os.path.exists(path)]


@pytest.mark.parametrize("path", OTHER_GLOBAL)
def test_other_global_files_of_proc(sandbox: Sandbox, landlock: bool, path: str) -> None:
    # Read-only, and run by root masked where others could not read it: either way the
    # probe's O_TRUNC asks the mount first.
    sandbox.probe("write", path, landlock=landlock).expect(EROFS)


def test_a_process_may_still_name_itself(sandbox: Sandbox, landlock: bool) -> None:
    """Its own /proc entries stay its own: glibc names a thread through comm."""
    code = ("import os\nprint('STARTED', flush=True)\n"
            "with open('/proc/self/comm', 'r+') as comm:\n    comm.write('renamed')\n"
            "print('COMM', open('/proc/self/comm').read().strip())\n")
    done = sandbox.run(PYTHON_INSIDE, "-c", code, landlock=landlock)
    assert done.stdout.split("\n")[:2] == ["STARTED", "COMM renamed"], done


# -- set-user-ID and set-group-ID files ---------------------------------------------------

SETID_CODE = """
import ctypes, os, stat
print("STARTED", os.getuid(), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def step(name, work):
    try:
        work()
        print(name, 0, flush=True)
    except OSError as err:
        print(name, err.errno, flush=True)
def raw(*args):
    if libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args]) == -1:
        raise OSError(ctypes.get_errno(), "")
with open("/usr/bin/id", "rb") as src, open("id", "wb") as dst:
    dst.write(src.read())
step("chmod4755", lambda: os.chmod("id", 0o4755))
step("chmod2755", lambda: os.chmod("id", 0o2755))
fd = os.open("id", os.O_RDONLY)
step("fchmod", lambda: os.fchmod(fd, 0o4755))
step("fchmodat2", lambda: raw(452, -100, b"id", 0o6755, 0))
step("open", lambda: os.close(os.open("made", os.O_CREAT | os.O_WRONLY, 0o4755)))
step("mknod", lambda: os.mknod("node", stat.S_IFREG | 0o2755))
step("openat2", lambda: raw(437, -100, b"id", ctypes.create_string_buffer(24), 24))
step("setcap", lambda: os.setxattr("id", "security.capability",
     bytes.fromhex("0100000200000000000000000000000000000000")))
step("chmod755", lambda: os.chmod("id", 0o755))
"""


def test_no_set_id_file_is_made(sandbox: Sandbox, landlock: bool) -> None:
    done = sandbox.run(PYTHON_INSIDE, "-c", SETID_CODE, landlock=landlock)
    lines = done.stdout.split("\n")
    assert lines[0].startswith("STARTED "), done
    results = dict(line.split() for line in lines[1:] if line)
    assert results == {
        "chmod4755": str(EPERM), "chmod2755": str(EPERM), "fchmod": str(EPERM),
        "fchmodat2": str(EPERM), "open": str(EPERM), "mknod": str(EPERM),
        "openat2": str(errno.ENOSYS),
        "setcap": str(EPERM),  # file capabilities need CAP_SETFCAP, which none holds
        "chmod755": "0",  # an ordinary mode works
    }, done
    copy = sandbox.project / "id"
    info = os.stat(copy)
    assert stat.S_IMODE(info.st_mode) == 0o755
    assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert not (sandbox.project / "made").exists() and not (sandbox.project / "node").exists()
    assert "security.capability" not in os.listxattr(copy)
    # The host's own tools agree: nothing here runs with more than its runner's rights.
    found = subprocess.run(["find", str(sandbox.project), "-perm", "/6000"],
                           capture_output=True, text=True, check=True)
    assert found.stdout == ""


def test_writes_are_mounted_nosuid(sandbox: Sandbox) -> None:
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; cat /proc/self/mountinfo")
    assert done.stdout.startswith("STARTED"), done
    for line in done.stdout.splitlines()[1:]:
        fields = line.split()
        if fields[4] == str(sandbox.project):
            assert "nosuid" in fields[5].split(","), line
            break
    else:
        pytest.fail(f"the project is not mounted:\n{done.stdout}")


# -- what only its owner may read ------------------------------------------------------------

OWNER_ONLY = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-",
              "/proc/slabinfo", "/proc/kmsg", "/proc/timer_list", "/proc/keys"]


@pytest.mark.parametrize("path", OWNER_ONLY)
def test_files_only_root_may_read(sandbox: Sandbox, landlock: bool, path: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"{path} is not on this machine")
    result = sandbox.probe("read", path, landlock=landlock)
    if path == "/proc/keys" and not sandbox.who.is_root:
        result.expect(0)  # the keys a person may view are their own: root's, for root
    else:
        result.expect(EACCES)


def test_a_folder_only_root_may_list(sandbox: Sandbox, landlock: bool) -> None:
    path = "/etc/ssl/private"
    assert os.stat(path).st_mode & 0o005 != 0o005, "set-up: a private folder"
    sandbox.probe("list", path, landlock=landlock).expect(EACCES)


def test_a_file_the_spec_names_stays_readable(root_sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\nread = ["/etc/shadow"]\n'
    result = root_sandbox.probe("read", "/etc/shadow", spec=spec).expect(0)
    assert "DATA root:" in result.stdout


# -- sockets of daemons that trust uid 0 -----------------------------------------------------

@pytest.mark.parametrize("mode", [0o600, 0o660])
def test_a_root_only_socket_under_a_read_grant(root_sandbox: Sandbox, mode: int) -> None:
    """A daemon's socket that only root may connect to (dockerd's is root:docker 0660)
    would take the sandbox's uid 0 for root. One that anyone may use stays usable."""
    folder = root_sandbox.base / "run"
    folder.mkdir()
    servers = []
    try:
        for name, socket_mode in (("daemon.sock", mode), ("public.sock", 0o666)):
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(folder / name))
            os.chmod(folder / name, socket_mode)
            server.listen(4)
            servers.append(server)
        spec = f'[files]\nwrite = ["."]\nread = ["{folder}"]\n'
        code = ("import os, socket\nprint('STARTED', flush=True)\n"
                "for name in ('daemon.sock', 'public.sock'):\n"
                "    s = socket.socket(socket.AF_UNIX)\n"
                "    try:\n"
                f"        s.connect('{folder}/' + name); print(name, 0)\n"
                "    except OSError as err:\n        print(name, err.errno)\n")
        done = root_sandbox.run(PYTHON_INSIDE, "-c", code, spec=spec)
        assert done.stdout.split("\n")[:3] == [
            "STARTED", f"daemon.sock {EACCES}", "public.sock 0"], done
    finally:
        for server in servers:
            server.close()


def test_root_with_the_hosts_network_needs_landlocks_socket_scope(root_sandbox: Sandbox) -> None:
    spec = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
    done = root_sandbox.run("/bin/true", spec=spec, landlock=False)
    assert done.returncode == 125
    assert "abstract unix sockets" in done.stderr and "Landlock" in done.stderr
    check = root_sandbox.lnk("check", spec=spec, landlock=False)
    assert "abstract unix sockets" in check.stdout and check.returncode == 1


# -- the class: nothing outside the grants writable, nothing private readable -------------

def _others_may_read(path: str) -> bool:
    """Whether a user who is neither owner nor in the group could read `path` here."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        try:
            if not os.stat(folder).st_mode & 0o001:
                return False
        except OSError:
            return False
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return True  # gone since: nothing to compare
    return bool(mode & 0o004) and (not stat.S_ISDIR(mode) or bool(mode & 0o001))


def test_nothing_outside_the_grants_is_writable_or_private_readable(
        sandbox: Sandbox, landlock: bool) -> None:
    """Inside, on the default spec: every file and folder visible but the write grant,
    /tmp, /dev (the sandbox's own minimal one) and lnk-sandbox's own read-only code
    cannot be written, and nothing others could not read on the host can be read."""
    tops = ["/"]
    skip = [str(sandbox.project), "/tmp", "/dev", "/run/lnk-sandbox"]
    done = sandbox.run(PYTHON_INSIDE, "-c", SURFACE, *tops, "--", *skip,
                       landlock=landlock, timeout=300)
    lines = done.stdout.splitlines()
    assert lines[0] == "STARTED" and lines[-1].startswith("DONE "), done.stderr[-2000:]
    assert int(lines[-1].split()[1]) > 10_000  # the walk saw the system folders
    writable = [line[2:] for line in lines if line.startswith("W ")]
    assert writable == [], writable[:20]
    readable = [line[2:] for line in lines if line.startswith("R ")]
    own_network = "/proc/sys/net"  # the sandbox's own network namespace, not the host's
    private = [path for path in readable
               if not path.startswith(own_network) and not _others_may_read(path)]
    assert private == [], private[:20]
