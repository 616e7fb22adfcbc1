"""A connection the proxy makes that can never end at this host: a classic BPF socket
filter (SO_ATTACH_FILTER) that drops every packet reaching the socket from the loopback
device.

own.py and routes.py judge an address before connecting, by its route and the
interfaces' addresses. Netfilter acts after that: a DNAT or REDIRECT in the host's
OUTPUT chain (kube-proxy's rules for a Service's externalIP or a node's LoadBalancer
address, any port forward written that way) leads a public address, whose route is
unicast and which no interface holds, to the host's own service. What holds whatever
the rules are is where the answer comes from: this host delivers to itself only over
the loopback device, so a socket that takes nothing from it cannot finish a handshake
with any socket of this host, while every other peer answers through another device.

Facts (Linux's, checked on this kernel):
- Everything this host sends to one of its own addresses, whatever rule rerouted it
  (ip_route_me_harder after a NAT), leaves and arrives on the loopback device: a local
  route's device is the namespace's loopback, whose index is always 1
  (LOOPBACK_IFINDEX).
- tcp_v4_rcv and tcp_v6_rcv run a socket's filter on every segment delivered to it,
  the SYN-ACK that a connecting socket waits for included (tcp_filter): dropped there,
  the handshake never ends, no ACK is sent, and the listener's program never accepts
  (its request socket, with this connection's ends, lives until its SYN-ACKs run out:
  sock_diag.py finds it, so the refusal is said at once instead of a timeout).
- SKF_AD_IFINDEX loads the index of the device the packet arrived on; attaching a
  filter is open to every user and applies to this socket alone.
- A VRF delivers to its own device rather than the loopback: not covered (no VRF is
  set up on a workstation or CI runner; a stated gap).
"""

from __future__ import annotations

import ctypes
import socket
import struct

SO_ATTACH_FILTER = 26  # asm-generic/socket.h; Python's socket module lacks the name
LOOPBACK_IFINDEX = 1
SKF_AD_OFF, SKF_AD_IFINDEX = -0x1000, 8
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06

_INSTRUCTION = struct.Struct("=HBBI")  # sock_filter: code, jt, jf, k
PROGRAM = (
    (BPF_LD_W_ABS, 0, 0, (SKF_AD_OFF + SKF_AD_IFINDEX) & 0xFFFFFFFF),  # the device's index
    (BPF_JEQ_K, 0, 1, LOOPBACK_IFINDEX),  # the loopback: next; else skip one
    (BPF_RET_K, 0, 0, 0),  # dropped
    (BPF_RET_K, 0, 0, 0xFFFFFFFF),  # kept whole
)
_CODE = ctypes.create_string_buffer(b"".join(_INSTRUCTION.pack(*op) for op in PROGRAM),
                                    len(PROGRAM) * _INSTRUCTION.size)


def refuse_loopback(sock: socket.socket) -> None:
    """Attach the filter to `sock`, before it connects. OSError where it cannot be."""
    # sock_fprog: the count, then a pointer to the instructions (kept alive above; the
    # kernel copies them while attaching).
    program = struct.pack("@HP", len(PROGRAM), ctypes.addressof(_CODE))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, program)


class KernelHere:
    """The proxy's `Here` on Linux (proxy/upstream.py): this filter on each guarded
    connection, and sock_diag's answer for one whose connect() waits."""

    def guard(self, sock: socket.socket) -> None:
        refuse_loopback(sock)

    def delivered(self, sock: socket.socket) -> bool:
        from .sock_diag import delivered_here

        return delivered_here(sock)
