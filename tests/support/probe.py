"""A small program run inside the sandbox that reports exactly what the kernel said.

It prints `STARTED <pid> <uid>` first, so a test can tell "refused" from "never ran",
then performs one action and prints `RESULT ok` (exit 0) or `RESULT errno=N` (exit N):
tests assert EPERM, not "failed". Anything else exits 99 with a traceback.

Actions: write PATH | read PATH | list PATH | mkdir PATH | stat PATH | rename A B |
unlink PATH | exec PATH [ARG...] | connect HOST PORT | connect-unix PATH |
abstract NAME | env NAME |
caps | syscall NR [ARG...] | calls NR[,ARG...] ... | tiocsti | int80 | fexecve PATH |
memfd-exec FLAGS PATH | memfd FLAGS | sleep-handle SIG CODE

`memfd FLAGS` makes a memory file, writes /usr/bin/true into it, and reports each step:
`MEMFD seals=0xN chmod=E seal=E mmap=E proc_exec=E fexecve=E cloexec=0|1` (E: errno, 0
when the step worked; the execs run in a child).

`calls` makes each raw call in turn and prints `CALL <nr> <errno>` for each (0: it
succeeded), then `RESULT ok`: the program went on after every refusal.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported: the probe starts in every sandbox test
if TYPE_CHECKING:
    from collections.abc import Callable


def act(action: str, args: list[str]) -> None:
    if action == "write":
        fd = os.open(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"written by the probe\n")
        os.close(fd)
    elif action == "read":
        with open(args[0], "rb") as handle:
            sys.stdout.write("DATA " + handle.read(200).decode("utf-8", "replace") + "\n")
    elif action == "list":
        sys.stdout.write("LIST " + " ".join(sorted(os.listdir(args[0]))) + "\n")
    elif action == "mkdir":
        os.mkdir(args[0])
    elif action == "stat":
        os.stat(args[0])
    elif action == "rename":
        os.rename(args[0], args[1])
    elif action == "unlink":
        os.unlink(args[0])
    elif action == "exec":
        sys.stdout.flush()
        os.execv(args[0], args)
    elif action == "connect":
        import socket

        with socket.create_connection((args[0], int(args[1])), timeout=5):
            pass
    elif action == "connect-unix":
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(args[0])
    elif action == "abstract":
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect("\0" + args[0])
    elif action == "env":
        sys.stdout.write(f"ENV {args[0]}={os.environ.get(args[0], '<unset>')}\n")
    elif action == "caps":
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(("Cap", "Uid", "Gid", "NoNewPrivs", "Seccomp")):
                    sys.stdout.write(line)
    elif action == "syscall":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        numbers = [ctypes.c_long(int(a, 0)) for a in args]
        if libc.syscall(*numbers) == -1:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    elif action == "calls":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for spec in args:
            numbers = [ctypes.c_long(int(a, 0)) for a in spec.split(",")]
            ctypes.set_errno(0)
            result = libc.syscall(*numbers)
            code = ctypes.get_errno() if result == -1 else 0
            sys.stdout.write(f"CALL {spec.split(',')[0]} {code}\n")
        sys.stdout.flush()
    elif action == "tiocsti":
        import fcntl
        import struct

        _master, slave = os.openpty()
        fcntl.ioctl(slave, 0x1_0000_5412, struct.pack("c", b"x"))  # high bits set
    elif action == "int80":
        import ctypes
        import mmap

        # mov eax, 20 (i386 getpid); int 0x80; ret  -- returns -errno in eax
        machine = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(machine)
        address = ctypes.addressof(ctypes.c_char.from_buffer(page))
        result = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
        if result < 0:
            raise OSError(-result, os.strerror(-result))
        sys.stdout.write(f"PID {result}\n")
    elif action == "fexecve":
        fd = os.open(args[0], os.O_RDONLY)
        sys.stdout.flush()
        os.execve(fd, [args[0]], dict(os.environ))
    elif action == "memfd-exec":
        fd = os.memfd_create("probe", int(args[0], 0))
        with open(args[1], "rb") as handle:
            os.write(fd, handle.read())
        sys.stdout.flush()
        os.execv(f"/proc/self/fd/{fd}", [args[1]])
    elif action == "memfd":
        import fcntl
        import mmap

        fd = os.memfd_create("probe", int(args[0], 0))
        with open("/usr/bin/true", "rb") as handle:
            os.write(fd, handle.read())

        def step(work: Callable[[], object]) -> int:
            try:
                work()
            except OSError as err:
                return err.errno or -1
            return 0

        def in_child(work: Callable[[], object]) -> int:
            pid = os.fork()
            if pid == 0:
                os._exit(step(work) or 99)  # an exec that worked never returns: 0 below
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            return 0 if code == 0 else code

        def run_proc() -> None:
            os.execv(f"/proc/self/fd/{fd}", ["true"])

        def run_fd() -> None:
            os.execve(fd, ["true"], {})

        report = {
            "chmod": step(lambda: os.fchmod(fd, 0o755)),
            "seal": step(lambda: fcntl.fcntl(fd, 1033, 0x0001)),  # F_ADD_SEALS, F_SEAL_SEAL
            "mmap": step(lambda: mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED,
                                           prot=mmap.PROT_READ | mmap.PROT_EXEC).close()),
            "proc_exec": in_child(run_proc),
            "fexecve": in_child(run_fd),
        }
        seals = fcntl.fcntl(fd, 1034)
        cloexec = fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        fields = " ".join(f"{k}={v}" for k, v in report.items())
        sys.stdout.write(f"MEMFD seals={seals:#x} {fields} cloexec={cloexec}\n")
    elif action == "sleep-handle":
        import signal
        import time

        signal.signal(int(args[0]), lambda *_: os._exit(int(args[1])))
        sys.stdout.write("READY\n")
        sys.stdout.flush()
        time.sleep(60)
        os._exit(98)
    else:
        raise SystemExit(f"unknown action {action}")


def main() -> None:
    sys.stdout.write(f"STARTED {os.getpid()} {os.getuid()}\n")
    sys.stdout.flush()
    try:
        act(sys.argv[1], sys.argv[2:])
    except OSError as err:
        sys.stdout.write(f"RESULT errno={err.errno}\n")
        sys.stdout.flush()
        os._exit(err.errno or 1)
    sys.stdout.write("RESULT ok\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
