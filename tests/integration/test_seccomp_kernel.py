"""inner.seccomp against the real kernel: exact errnos from a filtered child.

Each test forks a child that sets no_new_privs, installs the real filter for this
machine's architecture, makes each call for real (raw system calls through ctypes, so no
libc wrapper stands between), and sends every outcome back through a pipe as "ok" or an
errno name. The parent asserts them exactly, and that the child exited 0 after its last
call: a kill (SIGSYS) anywhere would lose the rest and show as a signal.

Arguments are chosen so that a call the filter wrongly let through fails harmlessly with
the kernel's own errno (EFAULT, EBADF, EINVAL), never with the filter's: the tests run as
root, where a real reboot(), sethostname() or clone(CLONE_NEWUSER) would do something.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import select
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from inner import prctl, seccomp, syscalls
from supervisor.linux import notify

pytestmark = pytest.mark.kernel_matrix

ARCH = syscalls.native_arch()
TABLE = syscalls.TABLES[ARCH]
TIMEOUT = 20.0

CLONE_SIGHAND = 0x800  # without CLONE_VM the kernel answers EINVAL: no process is made
CLONE_NEWUSER = 0x10000000
TIOCSTI, TIOCLINUX, TIOCGWINSZ = 0x5412, 0x541C, 0x5413
TIOCSETD, TIOCGETD, TIOCEXCL, TIOCNXCL = 0x5423, 0x5424, 0x540C, 0x540D
MFD_CLOEXEC, MFD_HUGETLB, MFD_NOEXEC_SEAL, MFD_EXEC = 1, 4, 8, 0x10
AT_FDCWD = -100

# Arguments that fail harmlessly should the filter let the call through.
HARMLESS: dict[str, tuple[int, ...]] = {
    "kexec_load": (0, 0, 0, 0xFFFF0000),  # unknown flags: EINVAL (0 would unload)
    "kexec_file_load": (-1, -1, 0, 0, 0),  # EBADF
    "finit_module": (-1, 0, 0),
    "acct": (1,),  # EFAULT (NULL would turn accounting off)
    "sethostname": (0, 65),  # longer than the kernel takes: EINVAL
    "setdomainname": (0, 65),
    "reboot": (0, 0, 0, 0),  # no magic numbers: EINVAL
    "unshare": (CLONE_NEWUSER,),  # in a child: harmless even if it ran
    "setns": (-1, 0),
    "quotactl_fd": (-1, 0, 0, 0),
    "open_by_handle_at": (-1, 0, 0),
    "name_to_handle_at": (-1, 0, 0, 0, 0),
    "process_madvise": (-1, 0, 0, 0, 0),
    "vmsplice": (-1, 0, 0, 0),
    "perf_event_open": (0, 0, -1, -1, 0),
    "move_mount": (-1, 0, -1, 0, 0),
    "open_tree": (-1, 0, 0),
    "open_tree_attr": (-1, 0, 0, 0, 0),
    "fsmount": (-1, 0, 0),
    "fspick": (-1, 0, 0),
    "fsconfig": (-1, 0, 0, 0, 0),
    "mount_setattr": (-1, 0, 0, 0, 0),
}
REFUSED = {name: action for name, action, checks in seccomp.POLICY
           if not checks and name in TABLE and isinstance(action, int)}


def outcome(action: Callable[[], object]) -> str:
    """"ok", or the errno name of the OSError `action` raised."""
    try:
        action()
    except OSError as err:
        return errno.errorcode.get(err.errno or 0, str(err.errno))
    return "ok"


def attempt(name: str, *args: object) -> str:
    return outcome(lambda: syscalls.syscall(name, *args))


def name(code: int) -> str:
    return errno.errorcode[code]


class Child:
    """A forked child that confines itself, runs `probe` and reports its outcomes.

    With `listener`, the child sends the listener fd over a unix socket (SCM_RIGHTS)
    before any call could wait on it, as the inner does; `listener_fd()` receives it.
    """

    def __init__(self, probe: Callable[[], dict[str, str]], *, memfd: str = "allow",
                 exec_notify: bool = False, listener: bool = False) -> None:
        self._reader, writer = os.pipe()
        parent_end, child_end = socket.socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns into pytest
            try:
                os.close(self._reader)
                parent_end.close()
                devnull = os.open(os.devnull, os.O_RDWR)
                for std in (0, 1, 2):
                    os.dup2(devnull, std)
                os.setsid()  # no terminal: vhangup() would hang up nothing
                prctl.set_no_new_privs()
                program = seccomp.build_program(ARCH, memfd=memfd, exec_notify=exec_notify)
                lfd = seccomp.install(program, listener=listener)
                if lfd is not None:
                    socket.send_fds(child_end, [b"L"], [lfd])
                    os.close(lfd)
                results = probe()
                os.write(writer, "\n".join(f"{k}={v}" for k, v in results.items()).encode())
                os._exit(0)
            except BaseException as err:  # said to the parent: the child has no stderr
                os.write(writer, f"{type(err).__name__}: {err}".encode()[:4000])
            finally:
                os._exit(70)
        os.close(writer)
        child_end.close()
        self._socket = parent_end
        self._deadline = time.monotonic() + TIMEOUT

    def listener_fd(self) -> int:
        self._socket.settimeout(TIMEOUT)
        _, fds, _, _ = socket.recv_fds(self._socket, 16, 1)
        assert len(fds) == 1, "the child sent no listener"
        return fds[0]

    def results(self) -> dict[str, str]:
        """Its outcomes, once it exited 0 (killed or failed: the test fails)."""
        chunks = []
        try:
            while True:
                left = self._deadline - time.monotonic()
                if left <= 0 or not select.select([self._reader], [], [], left)[0]:
                    os.kill(self.pid, signal.SIGKILL)
                    pytest.fail("the filtered child hung")
                chunk = os.read(self._reader, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(self._reader)
            self._socket.close()
            _, status = os.waitpid(self.pid, 0)
        text = b"".join(chunks).decode()
        assert os.WIFEXITED(status), f"the child was killed by signal {os.WTERMSIG(status)}"
        assert os.WEXITSTATUS(status) == 0, f"the child failed: {text}"
        return dict(line.split("=", 1) for line in text.splitlines())


def confined(probe: Callable[[], dict[str, str]], *, memfd: str = "allow",
             exec_notify: bool = False, listener: bool = False) -> dict[str, str]:
    return Child(probe, memfd=memfd, exec_notify=exec_notify, listener=listener).results()


# ---- calls refused by name ---------------------------------------------------------------

def test_every_refused_call_gets_its_errno_and_the_child_runs_on() -> None:
    def probe() -> dict[str, str]:
        results = {n: attempt(n, *HARMLESS.get(n, (0, 0, 0, 0, 0, 0))) for n in REFUSED}
        results["getpid after them all"] = "ok" if os.getpid() > 0 else "no"
        return results

    results = confined(probe)
    assert results == {**{n: name(e) for n, e in REFUSED.items()},
                       "getpid after them all": "ok"}


def test_unshare_mount_and_clone3() -> None:
    def probe() -> dict[str, str]:
        return {
            "unshare(CLONE_NEWUSER)": attempt("unshare", CLONE_NEWUSER),
            "mount": attempt("mount", 0, 0, 0, 0, 0),
            "clone3": attempt("clone3", 0, 0),
            "new user namespace?": str(os.readlink("/proc/self/ns/user")),
        }

    before = os.readlink("/proc/self/ns/user")
    assert confined(probe) == {"unshare(CLONE_NEWUSER)": "EPERM", "mount": "EPERM",
                               "clone3": "ENOSYS", "new user namespace?": before}


def test_clone_refuses_namespaces_but_forks_threads_and_spawns() -> None:
    """clone3's ENOSYS sends glibc's posix_spawn to clone, which the filter can read."""

    def probe() -> dict[str, str]:
        import threading

        results = {}
        for flag in (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                     0x40000000):
            results[f"clone {flag:#x}"] = attempt("clone", flag | CLONE_SIGHAND, 0, 0, 0, 0)
        # Let through: the kernel's own EINVAL (CLONE_SIGHAND without CLONE_VM).
        results["clone no namespace"] = attempt("clone", CLONE_SIGHAND, 0, 0, 0, 0)
        results["clone NEWUSER in the high word"] = attempt(
            "clone", (CLONE_NEWUSER << 32) | CLONE_SIGHAND, 0, 0, 0, 0)
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        results["fork"] = str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        box: list[int] = []
        thread = threading.Thread(target=lambda: box.append(1))
        thread.start()
        thread.join()
        results["thread"] = str(box)
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 5"], {})
        results["posix_spawn"] = str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        return results

    results = confined(probe)
    for flag in ("0x20000", "0x2000000", "0x4000000", "0x8000000", "0x10000000",
                 "0x20000000", "0x40000000"):
        assert results.pop(f"clone {flag}") == "EPERM", flag
    assert results == {"clone no namespace": "EINVAL",
                       "clone NEWUSER in the high word": "EINVAL",
                       "fork": "7", "thread": "[1]", "posix_spawn": "5"}


def test_personality() -> None:
    def probe() -> dict[str, str]:
        results = {}
        for persona in (0x8, 0x20000, 0x20008, 0x1_0000_0000, 0xFFFFFFFF, 0x0040000,
                        0x0400000):
            results[f"{persona:#x}"] = attempt("personality", persona)
        results["now"] = f"{syscalls.syscall('personality', 0xFFFFFFFF):#x}"
        return results

    assert confined(probe) == {"0x8": "ok", "0x20000": "ok", "0x20008": "ok",
                               "0x100000000": "ok", "0xffffffff": "ok",
                               "0x40000": "EPERM", "0x400000": "EPERM", "now": "0x0"}


def test_socket_families() -> None:
    def probe() -> dict[str, str]:
        def make(family: int, kind: int) -> str:
            return outcome(lambda: os.close(syscalls.syscall("socket", family, kind, 0)))

        return {"AF_ALG": make(38, socket.SOCK_SEQPACKET),
                "AF_VSOCK": make(40, socket.SOCK_STREAM),
                "AF_ALG, high bits": make(0x1_0000_0026, socket.SOCK_SEQPACKET),
                "AF_UNIX": make(socket.AF_UNIX, socket.SOCK_STREAM),
                "AF_INET": make(socket.AF_INET, socket.SOCK_DGRAM)}

    assert confined(probe) == {"AF_ALG": "EAFNOSUPPORT", "AF_VSOCK": "EAFNOSUPPORT",
                               "AF_ALG, high bits": "EAFNOSUPPORT", "AF_UNIX": "ok",
                               "AF_INET": "ok"}


def test_terminal_injection_is_refused_on_the_low_word() -> None:
    def probe() -> dict[str, str]:
        _, tty = os.openpty()
        char = ctypes.c_char(b"x")
        size = ctypes.create_string_buffer(8)
        return {
            "TIOCSTI": attempt("ioctl", tty, TIOCSTI, ctypes.byref(char)),
            "TIOCSTI, high bits": attempt("ioctl", tty, 0x1_0000_0000 | TIOCSTI,
                                          ctypes.byref(char)),
            "TIOCLINUX": attempt("ioctl", tty, TIOCLINUX, ctypes.byref(char)),
            "TIOCGWINSZ": attempt("ioctl", tty, TIOCGWINSZ, size),
            "TIOCGWINSZ, high bits": attempt("ioctl", tty, 0x1_0000_0000 | TIOCGWINSZ, size),
            # What would outlast the run on the person's terminal: N_NULL (27) as its line
            # discipline, exclusive mode; and reading them back, which stays open.
            "TIOCSETD": attempt("ioctl", tty, TIOCSETD, ctypes.byref(ctypes.c_int(27))),
            "TIOCSETD, high bits": attempt("ioctl", tty, 0x1_0000_0000 | TIOCSETD,
                                           ctypes.byref(ctypes.c_int(27))),
            "TIOCEXCL": attempt("ioctl", tty, TIOCEXCL, None),
            "TIOCGETD": attempt("ioctl", tty, TIOCGETD, size),
            "TIOCNXCL": attempt("ioctl", tty, TIOCNXCL, None),
        }

    assert confined(probe) == {"TIOCSTI": "EPERM", "TIOCSTI, high bits": "EPERM",
                               "TIOCLINUX": "EPERM", "TIOCGWINSZ": "ok",
                               "TIOCGWINSZ, high bits": "ok", "TIOCSETD": "EPERM",
                               "TIOCSETD, high bits": "EPERM", "TIOCEXCL": "EPERM",
                               "TIOCGETD": "ok", "TIOCNXCL": "ok"}


# ---- the arch check -----------------------------------------------------------------------

I386_GETPID = bytes([0xB8, 20, 0, 0, 0,  # mov eax, 20 (getpid in the i386 table)
                     0xCD, 0x80,  # int 0x80
                     0xC3])  # ret


def int_0x80_getpid() -> int:
    page = mmap.mmap(-1, mmap.PAGESIZE,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(I386_GETPID)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return int(ctypes.CFUNCTYPE(ctypes.c_int)(address)())


def test_i386_calls_through_int_0x80_get_enosys() -> None:
    if ARCH != "x86_64":
        pytest.skip("int 0x80 is x86's")
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if int_0x80_getpid() == os.getpid() else 1)
        finally:
            os._exit(70)
    status = os.waitpid(pid, 0)[1]
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        pytest.skip(f"this kernel runs no i386 calls (status {status:#x}): nothing to refuse")

    def probe() -> dict[str, str]:
        x32_getpid = syscalls.libc().syscall(ctypes.c_long(0x40000000 | 39))
        return {"int 0x80 getpid": str(int_0x80_getpid()),
                "x32 getpid": "ok" if x32_getpid >= 0 else name(ctypes.get_errno())}

    assert confined(probe) == {"int 0x80 getpid": str(-errno.ENOSYS), "x32 getpid": "ENOSYS"}


# ---- running a file by descriptor -----------------------------------------------------------

def test_fexecve_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def probe() -> dict[str, str]:
        fd = os.open("/bin/sh", os.O_RDONLY)
        argv = ["sh", "-c", f"touch {marker}"]
        results = {"fexecve": outcome(lambda: os.execve(fd, argv, {}))}
        # execveat by path runs (in a child, which it replaces).
        pid = os.fork()
        if pid == 0:
            path = ctypes.c_char_p(b"/bin/sh")
            args = (ctypes.c_char_p * 4)(b"sh", b"-c", b"exit 3", None)
            env = (ctypes.c_char_p * 1)(None)
            syscalls.syscall("execveat", AT_FDCWD, path, args, env, 0)
            os._exit(70)
        results["execveat by path"] = str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        return results

    assert confined(probe) == {"fexecve": "EPERM", "execveat by path": "3"}
    assert not marker.exists()


# ---- memory files -------------------------------------------------------------------------

def memfd(flags: int) -> str:
    return outcome(lambda: os.close(syscalls.syscall("memfd_create", ctypes.c_char_p(b"t"),
                                                     flags)))


@pytest.mark.parametrize("mode", seccomp.MEMFD_MODES)
def test_memfd_create(mode: str) -> None:
    """HUGETLB: EINVAL in every mode; "notify" without a listener fails closed (ENOSYS).

    What the filter lets through gets the kernel's own answer, taken outside the filter:
    MFD_NOEXEC_SEAL and MFD_EXEC are "ok" from Linux 6.3, EINVAL before.
    """
    sealed = memfd(MFD_NOEXEC_SEAL)
    executable = memfd(MFD_EXEC)
    flags = {"0": 0, "CLOEXEC": MFD_CLOEXEC, "EXEC": MFD_EXEC, "HUGETLB": MFD_HUGETLB,
             "HUGETLB|NOEXEC_SEAL": MFD_HUGETLB | MFD_NOEXEC_SEAL,
             "NOEXEC_SEAL": MFD_NOEXEC_SEAL, "NOEXEC_SEAL|CLOEXEC": MFD_NOEXEC_SEAL | 1}

    def probe() -> dict[str, str]:
        return {label: memfd(value) for label, value in flags.items()}

    plain = "ok" if mode == "allow" else "ENOSYS"
    assert confined(probe, memfd=mode) == {
        "0": plain, "CLOEXEC": plain, "EXEC": executable if mode == "allow" else "ENOSYS",
        "HUGETLB": "EINVAL",
        "HUGETLB|NOEXEC_SEAL": "EINVAL", "NOEXEC_SEAL": sealed, "NOEXEC_SEAL|CLOEXEC": sealed}


@pytest.mark.requires_seccomp_notify
def test_install_errors() -> None:
    with pytest.raises(ValueError):
        seccomp.install(b"\x06\x00", listener=False)

    def probe() -> dict[str, str]:
        bad = struct.pack("=HBBI", 0x20, 0, 0, 66)  # a load past seccomp_data
        second = seccomp.build_program(ARCH, memfd="allow", exec_notify=False)
        return {"bad program": outcome(lambda: seccomp.install(bad, listener=False)),
                "second listener": outcome(lambda: seccomp.install(second, listener=True))}

    assert confined(probe, listener=True, memfd="notify") == {
        "bad program": "EINVAL", "second listener": "EBUSY"}


# ---- the listener ---------------------------------------------------------------------------

def test_probes_answer_without_installing() -> None:
    assert seccomp.flags_supported(0)
    assert not seccomp.flags_supported(1 << 20)
    assert not seccomp.flags_supported(seccomp.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
    assert seccomp.action_available(seccomp.SECCOMP_RET_ALLOW)
    assert not seccomp.action_available(0x7FC10000)
    assert seccomp.notif_sizes()[0] >= notify.NOTIF_SIZE
    status = Path("/proc/self/status").read_text()
    assert "\nSeccomp:\t0\n" in status, "a probe installed a filter"


def receive(listener: int) -> tuple[int, int, int, tuple[int, ...]]:
    """One notification: (id, pid, nr, args), read with the zeroed buffer RECV needs."""
    assert select.select([listener], [], [], TIMEOUT)[0], "no notification came"
    buffer = bytearray(notify.NOTIF_SIZE)
    fcntl.ioctl(listener, notify.NOTIF_RECV, buffer, True)
    ident, pid, _, nr, _, _, *args = struct.unpack("=QIIiIQ6Q", buffer)
    return ident, pid, nr, tuple(args)


def answer(listener: int, ident: int, *, error: int = 0, flags: int = 0) -> None:
    fcntl.ioctl(listener, notify.NOTIF_SEND,
                struct.pack("=QqiI", ident, 0, error, flags))


@pytest.mark.requires_seccomp_notify
def test_the_listener_sees_unsealed_memory_files_and_execs() -> None:
    assert seccomp.listener_supported()
    sealed = memfd(MFD_NOEXEC_SEAL)  # the kernel's own answer: EINVAL before Linux 6.3

    def probe() -> dict[str, str]:
        return {"memfd plain": memfd(0),
                "memfd sealed": memfd(MFD_NOEXEC_SEAL),
                "memfd huge": memfd(MFD_HUGETLB),
                "execve": outcome(lambda: os.execv("/nonexistent/x", ["x"]))}

    child = Child(probe, memfd="notify", exec_notify=True, listener=True)
    listener = child.listener_fd()
    try:
        ident, pid, nr, args = receive(listener)
        assert (pid, nr, args[1]) == (child.pid, TABLE["memfd_create"], 0)
        answer(listener, ident, error=-errno.ENOSYS)
        ident, pid, nr, _ = receive(listener)
        assert (pid, nr) == (child.pid, TABLE["execve"])
        answer(listener, ident, flags=notify.USER_NOTIF_FLAG_CONTINUE)
        results = child.results()
        assert results == {"memfd plain": "ENOSYS", "memfd sealed": sealed,
                           "memfd huge": "EINVAL", "execve": "ENOENT"}
        # Nothing else came: with its only user gone the listener hangs up, and polls
        # so (POLLHUP without POLLIN), which is what ends the exec watch's receivers.
        # They never receive then: Linux 6.18 answers such a RECV with ENOENT, but 6.1
        # blocks in it for ever.
        poller = select.poll()
        poller.register(listener, select.POLLIN)
        ready = poller.poll(int(TIMEOUT * 1000))
        assert ready, "the listener never hung up"
        assert ready[0][1] & select.POLLHUP and not ready[0][1] & select.POLLIN
    finally:
        os.close(listener)
