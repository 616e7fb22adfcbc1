"""A small program run inside the sandbox that reports exactly what the kernel said.

It prints `STARTED <pid> <uid>` first, so a test can tell "refused" from "never ran",
then performs one action and prints `RESULT ok` (exit 0) or `RESULT errno=N` (exit N):
tests assert EPERM, not "failed". Anything else exits 99 with a traceback.

Actions: write PATH | read PATH | list PATH | mkdir PATH | stat PATH | rename A B |
unlink PATH | exec PATH [ARG...] | connect HOST PORT | abstract NAME | env NAME |
caps | syscall NR [ARG...] | sleep-handle SIG CODE
"""

import os
import sys


def act(action: str, args: list) -> None:
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
    elif action == "abstract":
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect("\0" + args[0])
    elif action == "env":
        sys.stdout.write(f"ENV {args[0]}={os.environ.get(args[0], '<unset>')}\n")
    elif action == "caps":
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("Cap", "Uid", "Gid", "NoNewPrivs", "Seccomp")):
                    sys.stdout.write(line)
    elif action == "syscall":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        numbers = [ctypes.c_long(int(a, 0)) for a in args]
        if libc.syscall(*numbers) == -1:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
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
