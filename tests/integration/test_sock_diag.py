"""linux/sock_diag.py against this kernel: a connection ends at a socket of this host
exactly when a socket here has its local end as its remote one, whatever the family the
listener took it in, and whatever state the peer is in but TIME_WAIT."""

from __future__ import annotations

import secrets
import socket
import struct
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="sock_diag is Linux's")

from supervisor.linux.sock_diag import (  # noqa: E402
    INET_DIAG_BC_D_COND,
    _condition,
    delivered_here,
    sockets_facing,
)


def test_the_bytecode_accepts_at_its_end_and_rejects_past_it() -> None:
    """One D_COND op: `yes` is its whole length (the program's end: accept), `no` four
    bytes past it (reject); the host condition's port in host order, the address whole."""
    assert _condition(socket.AF_INET, bytes([203, 0, 113, 5]), 40000) == (
        struct.pack("=BBH", INET_DIAG_BC_D_COND, 16, 20)
        + struct.pack("=BBxxi", socket.AF_INET, 32, 40000) + bytes([203, 0, 113, 5]))
    assert len(_condition(socket.AF_INET6, bytes(16), 1)) == 28


@pytest.mark.parametrize(("family", "listen", "connect"), [
    (socket.AF_INET, "127.0.0.1", "127.0.0.1"),
    (socket.AF_INET6, "::", "127.0.0.1"),  # a dual-stack listener: a v4-mapped peer
    (socket.AF_INET6, "::1", "::1"),
])
@pytest.mark.parametrize("peer", ["queued", "accepted", "closed"])
def test_a_connection_to_this_host_is_found(family: int, listen: str, connect: str,
                                            peer: str) -> None:
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.bind((listen, 0))
        listener.listen(4)
        with socket.create_connection((connect, listener.getsockname()[1]),
                                      timeout=5) as client:
            if peer != "queued":
                accepted, _ = listener.accept()
                if peer == "closed":
                    accepted.close()
                    time.sleep(0.05)
            assert delivered_here(client)
            local = client.getsockname()
            assert sockets_facing(local[0], local[1]) == 1
            if peer == "accepted":
                accepted.close()


def test_an_end_no_socket_here_faces_is_not() -> None:
    """The control: the same question for an end nothing here is connected to (a
    documentation address, a random port) finds nothing."""
    port = 20000 + secrets.randbelow(40000)
    assert sockets_facing("198.51.100.77", port) == 0
    assert sockets_facing("2001:db8::77", port) == 0
    assert sockets_facing("::ffff:198.51.100.77", port) == 0


def test_the_socket_filter_keeps_a_handshake_with_this_host_from_ending() -> None:
    """socket_filter.py: a socket that takes nothing from the loopback device connects
    to no socket of this host (the listener's SYN-ACK is dropped, so nothing is ever
    accepted), and sock_diag finds the listener's half-open end facing it; the control
    is the same connection without the filter. Where this kernel refuses an
    unprivileged filter (EPERM), the proxy asks sock_diag once connected instead."""
    from supervisor.linux.socket_filter import refuse_loopback

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.settimeout(0.5)
        with socket.socket() as guarded:
            try:
                refuse_loopback(guarded)
            except PermissionError:
                pytest.skip("this kernel refuses this user a socket filter")
            guarded.settimeout(1)
            with pytest.raises(TimeoutError):
                guarded.connect(listener.getsockname())
            assert sockets_facing(*guarded.getsockname()[:2]) == 1
            with pytest.raises(TimeoutError):
                listener.accept()
        with socket.create_connection(listener.getsockname(), timeout=5):
            accepted, _ = listener.accept()
            accepted.close()
