"""The inner confiner's entry: confine this process, then become the target.

Started by bwrap inside the sandbox as `python -I -S -c ... CONFIG_FD`, it reads its
whole configuration as JSON from the inherited fd and applies its steps in this order:

1. no_new_privs, then the seccomp filter, first of all, so that nothing the target runs
   can escape it and no step below runs unfiltered;
2. the listener fd (when the filter has one) sent to the supervisor at once, before any
   call the filter hands to it could wait on a listener nobody holds;
3. every import finished, since Landlock may close the interpreter's own files;
4. Landlock, which holds the file grants again inside the mounts;
5. default signal dispositions and an empty mask: Python ignores SIGPIPE and SIGXFSZ, bwrap
   was started with SIGINT, SIGTERM, SIGHUP and SIGQUIT ignored, and exec keeps an
   ignored signal ignored;
6. every fd closed but 0-2 and the status socket (close-on-exec, to report an exec failure);
7. the supervisor's go awaited (the network helper listening, the terminal handed over);
8. execve; a failure is reported on the status socket and exits 126 or 127.

Any failure before execve exits 125 and says why on the status socket: the target never
runs less confined than asked.
"""

from __future__ import annotations

import os

from . import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


class ConfinementFailure(Exception):
    """A step could not be applied; the target must not run."""


def _read_config(config_fd: int) -> dict[str, Any]:
    import json

    chunks = []
    while True:
        chunk = os.read(config_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(config_fd)
    config: dict[str, Any] = json.loads(b"".join(chunks))
    return config


def _restore_signals() -> None:
    import signal

    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if signal.getsignal(number) is not signal.SIG_DFL:
                signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            continue  # numbers the kernel reserves (glibc's SIGCANCEL, SIGSETXID)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _close_fds(keep: int) -> None:
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 20)
    os.set_inheritable(keep, False)


def _exec(argv: list[str], status: protocol.Channel) -> NoReturn:
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as err:
        code = err.errno or 0
        status.send_exec_failure(code, argv[0])
        os._exit(127 if code in (2, 20) else 126)  # ENOENT, ENOTDIR: not found


def main(config_fd: int) -> NoReturn:
    config = _read_config(config_fd)
    status = protocol.Channel(config["status_fd"])
    try:
        _restore_signals()
        _close_fds(status.fd)
        if not status.wait_for_go():
            os._exit(125)  # the supervisor is gone: nothing may run unsupervised
    except ConfinementFailure as err:
        status.send_confinement_failure(str(err))
        os._exit(125)
    _exec(config["argv"], status)
