"""Seccomp user notification, the supervisor's side: RECV, ID_VALID, SEND, ADDFD.

Facts (checked on this kernel; see the reference, §1.3):
- Struct sizes from SECCOMP_GET_NOTIF_SIZES: seccomp_notif 80 bytes
  {u64 id; u32 pid; u32 flags; seccomp_data data (64)}, seccomp_notif_resp 24 bytes
  {u64 id; s64 val; s32 error; u32 flags}, seccomp_notif_addfd 24 bytes
  {u64 id; u32 flags; u32 srcfd; u32 newfd; u32 newfd_flags}.
- RECV needs a zeroed buffer (EINVAL otherwise) and ignores O_NONBLOCK: it blocks until
  a notification or a signal. epoll works on the listener; once no task uses the filter
  it reports EPOLLHUP and RECV answers ENOENT, which means the sandbox is gone.
- RECV may also answer ENOENT when the caller died between the poll and the RECV.
- `notif.pid` is the caller's TID in the RECV caller's pid namespace.
- ID_VALID after reading the caller's memory tells whether the pid still means the same
  caller (it may have died and the pid been reused).
- USER_NOTIF_FLAG_CONTINUE (with error 0, val 0) lets the call run as it is.
- ADDFD with ADDFD_FLAG_SEND installs the fd in the caller and completes its call with
  the new fd number, atomically; `newfd_flags` takes only O_CLOEXEC. A SEND for the same
  id afterwards answers ENOENT.
- A response's `error` is a negative errno.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct

from inner.syscalls import libc

NOTIF_RECV = 0xC0502100
NOTIF_SEND = 0xC0182101
NOTIF_ID_VALID = 0x40082102
NOTIF_ADDFD = 0x40182103

USER_NOTIF_FLAG_CONTINUE = 1
ADDFD_FLAG_SEND = 2

NOTIF_SIZE = 80
_NOTIF = struct.Struct("=QII iI Q 6Q")  # id, pid, flags, nr, arch, ip, args[6]
_RESP = struct.Struct("=QqiI")
_ADDFD = struct.Struct("=QIIII")


class Notification:
    """One received notification: the call, its caller and its arguments."""

    __slots__ = ("arch", "args", "id", "nr", "pid")

    def __init__(self, buffer: bytes = bytes(NOTIF_SIZE)):
        fields = _NOTIF.unpack(buffer)
        self.id: int = fields[0]
        self.pid: int = fields[1]
        self.nr: int = fields[3]
        self.arch: int = fields[4]
        self.args: tuple[int, ...] = fields[6:12]

    @staticmethod
    def of(notification_id: int, pid: int, nr: int, args: tuple[int, ...]) -> Notification:
        """One the compiled receiver already read (see _watch_build.py)."""
        made = Notification()
        made.id, made.pid, made.nr, made.args = notification_id, pid, nr, args
        return made


def receive(listener: int) -> Notification:
    """Block until a notification arrives; OSError(ENOENT) when the sandbox is gone."""
    buffer = bytearray(NOTIF_SIZE)  # zeroed, as RECV requires
    fcntl.ioctl(listener, NOTIF_RECV, buffer, True)
    return Notification(bytes(buffer))


def id_valid(listener: int, notification_id: int) -> bool:
    """Whether the caller of `notification_id` still waits (not dead, pid not reused)."""
    try:
        fcntl.ioctl(listener, NOTIF_ID_VALID, struct.pack("=Q", notification_id))
    except OSError as err:
        if err.errno == errno.ENOENT:
            return False
        raise
    return True


def send_continue(listener: int, notification_id: int) -> None:
    """Let the call go on as it is; ENOENT (the caller is gone) is not an error."""
    _send(listener, _RESP.pack(notification_id, 0, 0, USER_NOTIF_FLAG_CONTINUE))


def send_error(listener: int, notification_id: int, error: int) -> None:
    """Fail the call with `error` (a positive errno)."""
    _send(listener, _RESP.pack(notification_id, 0, -error, 0))


def send_value(listener: int, notification_id: int, value: int) -> None:
    """Make `value` the call's result: the supervisor did the call itself."""
    _send(listener, _RESP.pack(notification_id, value, 0, 0))


def _send(listener: int, response: bytes) -> None:
    try:
        fcntl.ioctl(listener, NOTIF_SEND, response)
    except OSError as err:
        if err.errno != errno.ENOENT:
            raise


def add_fd_and_send(listener: int, notification_id: int, fd: int, *, cloexec: bool) -> int:
    """Install `fd` in the caller and make it the call's result (ADDFD_FLAG_SEND)."""
    request = bytearray(
        _ADDFD.pack(notification_id, ADDFD_FLAG_SEND, fd, 0, os.O_CLOEXEC if cloexec else 0)
    )
    return int(fcntl.ioctl(listener, NOTIF_ADDFD, request, True))


class MemoryReader:
    """Reads NUL-terminated strings from other processes with process_vm_readv.

    process_vm_readv honours page protections, unlike /proc/PID/mem, which reads even a
    PROT_NONE page the kernel itself would refuse. Reads go page by page, so a string
    ending just before an unmapped page is still read whole. The buffer and the iovecs
    are made once: this sits on every exec's path.
    """

    PAGE = 4096

    def __init__(self) -> None:
        self._call = libc().process_vm_readv
        self._call.restype = ctypes.c_ssize_t
        self._call.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                               ctypes.c_ulong, ctypes.c_ulong)
        self._buffer = ctypes.create_string_buffer(self.PAGE)
        self._local = _Iovec(ctypes.cast(self._buffer, ctypes.c_void_p), 0)
        self._remote = _Iovec(None, 0)
        self._local_ref = ctypes.addressof(self._local)
        self._remote_ref = ctypes.addressof(self._remote)

    def read_string(self, pid: int, address: int, limit: int = 4096) -> bytes | None:
        """The string at `address` in `pid` (at most `limit` bytes), None if unreadable."""
        out = b""
        while len(out) < limit:
            size = self.PAGE - (address % self.PAGE)
            self._local.len = size
            self._remote.base = address
            self._remote.len = size
            count = self._call(pid, self._local_ref, 1, self._remote_ref, 1, 0)
            if count <= 0:
                return out or None
            data = self._buffer.raw[:count]
            end = data.find(b"\0")
            if end >= 0:
                return (out + data[:end])[:limit]
            out += data
            address += count
            if count < size:
                return out[:limit]
        return out[:limit]


    def read_bytes(self, pid: int, address: int, size: int) -> bytes | None:
        """`size` bytes at `address` in `pid` (at most a page), None if unreadable."""
        if not 0 < size <= self.PAGE:
            raise ValueError(f"read_bytes reads 1 to {self.PAGE} bytes, not {size}")
        buffer = ctypes.create_string_buffer(size)
        local = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), size)
        remote = _Iovec(address, size)
        count = self._call(pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
        if count != size:
            return None
        return buffer.raw[:size]


class _Iovec(ctypes.Structure):
    _fields_ = (("base", ctypes.c_void_p), ("len", ctypes.c_size_t))
