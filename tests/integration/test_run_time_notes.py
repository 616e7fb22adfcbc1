"""Run-time notes (issue 31): what a sandbox without a network or without nested
namespaces does to a program is said by lnk where it happens, once, as the real command's
transcript shows it, as root (root mode) and as the unprivileged test user."""

from __future__ import annotations

import secrets

import pytest

from support.sandbox import Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

NO_NETWORK = 'lnk-sandbox: no network in this sandbox ([network] mode = "none")\n'


def test_a_name_looked_up_without_a_network_is_said_once(sandbox: Sandbox) -> None:
    """`curl https://example.com` said only "Could not resolve host". Now the line above
    it says why; a second lookup in the same run (another name, another resolver: curl's
    glibc and Python's) says nothing more."""
    name = f"{secrets.token_hex(6)}.example"  # a name nobody listed: the class, not one
    done = sandbox.run("sh", "-c", "echo inside; curl -sS https://example.com; "
                       f"curl -sS http://{name}/; python3 -c \"import socket\n"
                       "try: socket.getaddrinfo('pypi.org', 443)\n"
                       "except OSError as e: print(e.errno == socket.EAI_AGAIN)\"")
    assert (done.returncode, done.stdout) == (0, "inside\nTrue\n"), done.stderr
    assert done.stderr == (NO_NETWORK + "curl: (6) Could not resolve host: example.com\n"
                           f"curl: (6) Could not resolve host: {name}\n")


def test_a_name_answered_inside_is_not_said(sandbox: Sandbox) -> None:
    """A name the sandbox's /etc/hosts answers (localhost's IPv4 address) asks no
    nameserver: no line. And the control: the same run, once it asks one, gets the line."""
    local = ("python3 -c \"import socket; print(socket.getaddrinfo('localhost', 80, "
             "socket.AF_INET)[0][4][0])\"")
    done = sandbox.run("sh", "-c", local)
    assert (done.returncode, done.stdout, done.stderr) == (0, "127.0.0.1\n", "")
    done = sandbox.run("sh", "-c", f"{local}; getent hosts example.com; echo $?")
    assert (done.returncode, done.stdout, done.stderr) == (0, "127.0.0.1\n2\n", NO_NETWORK)


def test_the_answer_is_refused_and_names_no_address(sandbox: Sandbox) -> None:
    """The query reaches the supervisor's socket inside the sandbox's own namespace and
    is answered REFUSED, its question copied, no address in it; nothing else is sent."""
    script = (
        "import socket, struct\n"
        "q = struct.pack('!HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0) + "
        "b'\\x07example\\x03com\\x00' + struct.pack('!HH', 1, 1)\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "s.settimeout(5)\n"
        "s.sendto(q, ('127.0.0.1', 53))\n"
        "a = s.recv(512)\n"
        "print(a[:2].hex(), hex(struct.unpack('!H', a[2:4])[0]), a[4:12].hex(), "
        "a[12:] == q[12:])\n")
    done = sandbox.run("python3", "-c", script)
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "1234 0x8105 0001000000000000 True\n", NO_NETWORK)


def test_no_line_where_the_sandbox_has_the_host_network(sandbox: Sandbox) -> None:
    """Mode "host": the host's resolver, untouched, and no line (the note is mode none's
    alone)."""
    done = sandbox.run("sh", "-c", "cat /etc/resolv.conf",
                       spec='[files]\nwrite = ["."]\n[network]\nmode = "host"\n')
    assert done.returncode == 0 and "127.0.0.1" not in done.stdout.replace(
        "nameserver 127.0.0.53", ""), done.stdout
    assert done.stderr == ""
