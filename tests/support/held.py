"""Hold a process's first call of one syscall until something else has happened: ptrace.

For races that scheduling decides: `HeldCall(pid, nr)` attaches to every thread of `pid`
(PTRACE_SEIZE with syscall stops), lets every call go on but the first entry to syscall
`nr`, which it keeps stopped before the kernel runs it, until `release()`. Only root (or
the same user, where Yama allows) can attach. The tracer is one thread of this process,
since ptrace requests must come from the thread that attached.

Facts (ptrace(2)): a seized thread stops with PTRACE_EVENT_STOP after PTRACE_INTERRUPT;
PTRACE_SYSCALL resumes it until the next syscall entry or exit, a stop whose signal is
SIGTRAP | 0x80 (PTRACE_O_TRACESYSGOOD); PTRACE_GET_SYSCALL_INFO (Linux 5.3) says which
call, whatever the architecture: op 1 is an entry, its number at offset 24. Any other
stop is a signal to deliver on resuming. PTRACE_DETACH needs the thread stopped.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time

PTRACE_SYSCALL = 24
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_GET_SYSCALL_INFO = 0x420E
PTRACE_O_TRACESYSGOOD = 1
PTRACE_EVENT_STOP = 128
SYSCALL_STOP = 0x80 | 5  # SIGTRAP | 0x80
WALL = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def _ptrace(request: int, tid: int, addr: int = 0, data: int = 0) -> int:
    result = _libc.ptrace(request, tid, addr, data)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), f"ptrace({request:#x}, {tid})")
    return int(result)


class HeldCall:
    """The first entry to syscall `nr` by any thread of `pid`, held until released."""

    def __init__(self, pid: int, nr: int) -> None:
        self.pid = pid
        self.nr = nr
        self.held: int | None = None  # the thread stopped at the call's entry
        self.error: BaseException | None = None
        self._release = threading.Event()
        self._attached = threading.Event()
        self._done = threading.Event()
        self._tracer = threading.Thread(target=self._trace, name="held-call", daemon=True)

    def __enter__(self) -> HeldCall:
        self._tracer.start()
        self._attached.wait(10)
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._done.wait(30)

    def wait_held(self, timeout: float) -> int:
        """The thread held at the call, once one is."""
        end = time.monotonic() + timeout
        while self.held is None and time.monotonic() < end and not self._done.is_set():
            time.sleep(0.005)
        if self.error is not None:
            raise self.error
        assert self.held is not None, f"no thread of {self.pid} made syscall {self.nr}"
        return self.held

    def release(self) -> None:
        self._release.set()

    # -- the tracer thread ----------------------------------------------------------------

    def _trace(self) -> None:
        threads: set[int] = set()
        try:
            for name in os.listdir(f"/proc/{self.pid}/task"):
                tid = int(name)
                try:
                    _ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD)
                    _ptrace(PTRACE_INTERRUPT, tid)
                except ProcessLookupError:
                    continue
                threads.add(tid)
            self._attached.set()
            self._serve(threads)
        except BaseException as err:
            self.error = err
        finally:
            self._attached.set()
            self._detach(threads)
            self._done.set()

    def _serve(self, threads: set[int]) -> None:
        """Resume every stop but the held call's until released; then let the held call
        go on (detached, it runs the call)."""
        while threads and not self._release.is_set():
            if not self._step(threads):
                time.sleep(0.001)
        if self.held is not None and self.held in threads:
            threads.discard(self.held)
            _ptrace(PTRACE_DETACH, self.held)

    def _step(self, threads: set[int]) -> bool:
        """Serve each thread's stop that is there; False when none was."""
        stopped = False
        for tid in list(threads):
            if tid == self.held:
                continue
            try:
                got, status = os.waitpid(tid, os.WNOHANG | WALL)
            except ChildProcessError:
                threads.discard(tid)
                continue
            if got == 0:
                continue
            stopped = True
            if not os.WIFSTOPPED(status):
                threads.discard(tid)  # the thread ended
                continue
            signal = os.WSTOPSIG(status)
            if signal == SYSCALL_STOP and self.held is None and self._is_entry_of(tid):
                self.held = tid  # not resumed: the call waits before the kernel runs it
                continue
            deliver = 0 if signal == SYSCALL_STOP or status >> 16 else signal
            _ptrace(PTRACE_SYSCALL, tid, 0, deliver)
        return stopped

    def _is_entry_of(self, tid: int) -> bool:
        info = ctypes.create_string_buffer(88)
        size = _ptrace(PTRACE_GET_SYSCALL_INFO, tid, len(info), ctypes.addressof(info))
        op, = struct.unpack_from("=B", info.raw, 0)
        return size >= 32 and op == 1 and struct.unpack_from("=Q", info.raw, 24)[0] == self.nr

    def _detach(self, threads: set[int]) -> None:
        """Stop each thread still traced and let it go."""
        for tid in threads:
            try:
                _ptrace(PTRACE_INTERRUPT, tid)
            except OSError:
                continue
        for tid in threads:
            while True:
                try:
                    _, status = os.waitpid(tid, WALL)
                except ChildProcessError:
                    break
                if not os.WIFSTOPPED(status):
                    break
                signal = os.WSTOPSIG(status)
                deliver = 0 if signal == SYSCALL_STOP or status >> 16 else signal
                try:
                    _ptrace(PTRACE_DETACH, tid, 0, deliver)
                except OSError:
                    pass
                break
