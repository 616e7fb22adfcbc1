"""What uid 0 gets without a capability, tried from inside: sysctls and /proc's global
files, set-ID files, files only their owner may read, the owner's rights over /dev's
nodes, the terminal and /proc, file leases, sockets of daemons that trust uid 0.

Each door is tried as root (root mode: uid 0 inside, SANDBOX_UID outside, its write
grants idmapped) and as the unprivileged user, with and without Landlock. Where the harm
would be outside (a sysctl, a file's mode), the host is read back afterwards with its
own tools. docs/root-mode.md is the threat model these test.
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
    # Run by root or by a person, the sandbox is not the host's uid 0: the mode bits
    # refuse first (and the read-only mount would after them).
    assert f"ERRNO {EACCES}" in lines, done
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
    sandbox.probe("write", "/proc/sys/net/ipv4/ip_forward", spec=spec,
                  landlock=landlock).expect(EROFS)
    assert _sysctl("net.ipv4.ip_forward") == before


# Each where this kernel has it (sysrq-trigger and mtrr are build options).
# A PCI device's config space (/proc/bus/pci), the modprobe path the kernel runs as root,
# binfmt_misc's register file (an interpreter for every matching exec of the host).
OTHER_GLOBAL = [path for path in ("/proc/irq/default_smp_affinity", "/proc/mtrr",
                                  "/proc/sysrq-trigger", "/proc/sys/vm/drop_caches",
                                  "/proc/bus/pci/00/00.0", "/proc/sys/kernel/modprobe",
                                  "/proc/sys/fs/binfmt_misc/register")
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
step("tmpfile", lambda: os.close(os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)))
if os.uname().machine == "x86_64":  # the old calls only x86_64 still has
    step("creat", lambda: raw(85, b"made", 0o4755))
    step("fchmodat", lambda: raw(268, -100, b"id", 0o2755))
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
        "openat2": str(errno.ENOSYS), "tmpfile": str(EPERM),
        **({"creat": str(EPERM), "fchmodat": str(EPERM)}
           if os.uname().machine == "x86_64" else {}),
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
    if path == "/proc/keys":
        result.expect(0)  # the keys its own uid may view: none of root's
        assert "DATA \n" in result.stdout or "DATA" in result.stdout
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

@pytest.mark.parametrize("mode", [0o600, 0o660, 0o666])
def test_a_root_daemons_socket_under_a_read_grant(root_sandbox: Sandbox, mode: int) -> None:
    """Run by root a grant is the sandbox's own (idmapped): a root daemon's socket under
    it would be one it may connect to as owner (dockerd's is root:docker 0660), and a
    0666 one one whose daemon may trust the peer uid. The launch is refused, naming the
    socket and the way out; hidden, the run goes on and the socket is not there."""
    folder = root_sandbox.base / "run"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(folder / "daemon.sock"))
    os.chmod(folder / "daemon.sock", mode)
    server.listen(4)
    try:
        spec = f'[files]\nwrite = ["."]\nread = ["{folder}"]\n'
        done = root_sandbox.run("/bin/true", spec=spec)
        assert done.returncode == 125, done
        assert f"{folder}/daemon.sock is a socket a root process listens on" in done.stderr
        hidden = spec + f'hide = ["{folder}/daemon.sock"]\n'
        root_sandbox.probe("connect-unix", str(folder / "daemon.sock"),
                           spec=hidden).expect(errno.ECONNREFUSED)
    finally:
        server.close()


def test_a_socket_a_read_grant_names_stays_the_daemons(root_sandbox: Sandbox) -> None:
    """A socket (or pipe) named by a read grant is bound as it is, not mapped: root's
    0600 socket stays closed to the sandbox's uid (the person names it in [network]
    unix to hand it over)."""
    folder = root_sandbox.base / "private"
    folder.mkdir(mode=0o700)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(folder / "daemon.sock"))
    os.chmod(folder / "daemon.sock", 0o600)
    server.listen(4)
    try:
        spec = f'[files]\nwrite = ["."]\nread = ["{folder}/daemon.sock"]\n'
        root_sandbox.probe("connect-unix", str(folder / "daemon.sock"),
                           spec=spec).expect(EACCES)
    finally:
        server.close()


@pytest.mark.parametrize("folder", ["/etc", "/etc/cron.d", "/usr/local/bin", "/var/lib",
                                   "/run", "/tmp", "/var/tmp"])
def test_root_refuses_a_write_grant_of_what_root_runs(root_sandbox: Sandbox,
                                                      folder: str) -> None:
    """Run by root the sandbox owns the files of what it writes: a system folder (cron,
    the loader's preload list, units), or a shared temp folder itself (other services'
    private files), is refused whether the spec names it or it is the working folder."""
    if not os.path.isdir(folder):
        pytest.skip(f"{folder} is not on this machine")
    done = root_sandbox.run("/bin/true", spec=f'[files]\nwrite = ["{folder}"]\n')
    assert done.returncode == 125, done
    # (The test's home is in /tmp: there the grant is refused first for holding it; a
    # folder of PATH, /usr/local/bin, first as what runs as the person whoever they are.)
    assert ("run by root, a sandbox owns the files of the folders it writes" in done.stderr
            or "holds the home folder" in done.stderr
            or "a folder of your PATH" in done.stderr), done.stderr
    done = root_sandbox.run("/bin/true", cwd=Path(folder))
    assert done.returncode == 125, done


def test_a_write_grant_holding_a_root_daemons_socket_is_refused(root_sandbox: Sandbox) -> None:
    """Run by root, a write grant is the sandbox's own: a root daemon's socket there
    would be one it may connect to as its owner."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = root_sandbox.project / "daemon.sock"
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(4)
    try:
        done = root_sandbox.run("/bin/true")
        assert done.returncode == 125, done
        assert f"{path} is a socket a root process listens on" in done.stderr
    finally:
        server.close()


def test_a_daemon_sees_another_uid_than_root(sandbox: Sandbox) -> None:
    """The peer uid a daemon reads from a socket (SO_PEERCRED): never the host's 0.
    Without Landlock, whose scope would close the host's abstract sockets first (that
    is test_kernel_surface's), so the connection is made and its peer read."""
    from supervisor.linux.idmapped import SANDBOX_UID

    name = f"lnk-peer-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(4)
    server.settimeout(30)
    spec = '[files]\nwrite = ["."]\n[network]\nmode = "host"\n'
    try:
        import threading

        peers: list[int] = []

        def accept() -> None:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            peers.append(int.from_bytes(creds[4:8], "little"))
            conn.close()

        thread = threading.Thread(target=accept)
        thread.start()
        result = sandbox.probe("abstract", name, spec=spec, landlock=False)
        thread.join(60)  # the connection waits in the backlog until accepted (under load)
        server.close()
        thread.join()
        result.expect(0)
        assert peers == [SANDBOX_UID if sandbox.who.is_root else sandbox.who.uid]
    finally:
        server.close()


def test_the_owners_rights_over_devices_terminal_and_proc(sandbox: Sandbox,
                                                         landlock: bool) -> None:
    """chmod of /dev's nodes (the host's), of the output file and of /proc's global
    files, and a lease on a system file: each needs the owner, which the sandbox is not."""
    output = sandbox.base / "output.log"
    lease_target = "/etc/hostname" if os.path.exists("/etc/hostname") else "/etc/passwd"
    code = (
        "import errno, fcntl, os\nprint('STARTED', flush=True)\n"
        "def step(name, work):\n"
        "    try:\n        work(); print(name, 0, flush=True)\n"
        "    except OSError as err:\n        print(name, err.errno, flush=True)\n"
        "step('dev', lambda: os.chmod('/dev/full', 0o606))\n"
        "step('stdout', lambda: os.fchmod(1, 0o777))\n"
        "step('proc', lambda: os.chmod('/proc/cgroups', 0o400))\n"
        f"fd = os.open('{lease_target}', os.O_RDONLY)\n"
        "step('lease', lambda: fcntl.fcntl(fd, 1024, fcntl.F_RDLCK))\n"
    )
    modes = {path: os.stat(path).st_mode for path in ("/dev/full", "/proc/cgroups")}
    with output.open("w") as handle:
        output.chmod(0o600)
        done = subprocess.run(
            [*sandbox.who.prefix, *_run_command(sandbox, code, landlock)],
            cwd=sandbox.project, env=sandbox.env(), stdout=handle, stderr=subprocess.PIPE,
            text=True, timeout=60)
    lines = output.read_text().split("\n")
    assert lines[0] == "STARTED", (lines, done.stderr)
    results = dict(line.split() for line in lines[1:] if line)
    # A lease: refused by the filter in every mode (EPERM), whoever owns the file.
    assert results == {"dev": str(EPERM), "stdout": str(EPERM), "proc": str(EPERM),
                       "lease": str(EPERM)}, (results, done.stderr)
    for path, mode in modes.items():
        assert os.stat(path).st_mode == mode
    assert stat.S_IMODE(output.stat().st_mode) == 0o600


def _run_command(box: Sandbox, code: str, landlock: bool) -> list[str]:
    import sys

    from support.sandbox import LNK, SUPPORT

    command = [LNK, "sandbox", "run", "--", PYTHON_INSIDE, "-c", code]
    if not landlock:
        command = [sys.executable, str(SUPPORT / "no_landlock.py"), *command]
    return command


def test_a_private_file_replaced_during_the_run_stays_private(root_sandbox: Sandbox) -> None:
    """The way passwd and configuration tools write: a new file renamed over the old.
    Nothing about the path is masked: the sandbox is another user, so the new file is
    as closed to it as the old one."""
    secret = Path("/etc") / f"lnk-test-secret-{os.getpid()}"
    secret.write_text("first\n")
    secret.chmod(0o600)
    try:
        lnk = subprocess.Popen(
            _run_command(root_sandbox, (
                "import time\nprint('STARTED', flush=True)\ntime.sleep(1.5)\n"
                "try:\n"
                f"    print('READ', open('{secret}').read().strip(), flush=True)\n"
                "except OSError as err:\n    print('ERRNO', err.errno, flush=True)\n"),
                landlock=True),
            cwd=root_sandbox.project, env=root_sandbox.env(), stdout=subprocess.PIPE,
            text=True)
        assert lnk.stdout is not None
        assert lnk.stdout.readline().strip() == "STARTED"
        fresh = secret.with_name(secret.name + "+")
        fresh.write_text("second\n")
        fresh.chmod(0o600)
        fresh.rename(secret)
        out, _ = lnk.communicate(timeout=60)
        assert out.strip() == f"ERRNO {EACCES}"
    finally:
        secret.unlink(missing_ok=True)


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


def test_the_shells_open_files_keep_their_flags(sandbox: Sandbox, landlock: bool) -> None:
    """stdout is the file the harness or shell gave: O_NONBLOCK set on it inside would
    stay on the shell's file after the run (its next read fails with EAGAIN)."""
    import fcntl

    read_end, write_end = os.pipe()
    try:
        code = ("import fcntl, os\nprint('STARTED', flush=True)\n"
                "fcntl.fcntl(1, fcntl.F_SETFL, fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK)\n")
        done = subprocess.run([*sandbox.who.prefix, *_run_command(sandbox, code, landlock)],
                              cwd=sandbox.project, env=sandbox.env(), stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert os.read(read_end, 100) == b"STARTED\n"
        assert not fcntl.fcntl(write_end, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_whole_root_granted_for_reading(sandbox: Sandbox) -> None:
    """read = ["/"]: the host's root, read-only (the inner's package goes in the fresh
    /dev, where bwrap may make its mount point)."""
    done = sandbox.run("/bin/sh", "-c", "echo STARTED; test -r /usr/bin/env && echo READ; "
                       "touch /usr/lnk-probe; echo TOUCH=$?",
                       spec='[files]\nread = ["/"]\nwrite = ["."]\n')
    lines = done.stdout.splitlines()
    assert lines[:2] == ["STARTED", "READ"] and "TOUCH=1" in lines, done
    assert not os.path.exists("/usr/lnk-probe")
