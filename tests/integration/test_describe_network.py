"""describe says every key of [network] a person is asked to allow: what the proxy
refuses even when allowed, the ports forwarded in and exposed out, the unix sockets."""

from __future__ import annotations

import socket

from support.sandbox import Sandbox


def test_describe_names_deny_forward_expose_and_unix(sandbox: Sandbox) -> None:
    agent = sandbox.base / "agent.sock"
    with socket.socket(socket.AF_UNIX) as bound:  # a socket file: describe never connects
        bound.bind(str(agent))
    sandbox.chown(agent)
    spec = (
        '[files]\nwrite = ["."]\n'
        '[network]\nmode = "proxy"\nallow = ["*.example.org"]\n'
        'deny = ["bad.example.org", "198.51.100.0/24"]\n'
        f'forward = [5432]\nexpose = [8080]\n'
        f'unix = ["{agent}", {{ path = "{sandbox.base}/gone.sock", optional = true }}]\n'
    )
    done = sandbox.lnk("describe", spec=spec)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "  refused even when allowed: bad.example.org, 198.51.100.0/24" in lines
    assert ("  forwarded in: the host's loopback port 5432, at the sandbox's 127.0.0.1:5432"
            "    (network.forward)") in lines
    assert ("  exposed out: the sandbox's port 8080, at the host's 127.0.0.1:8080"
            "    (network.expose)") in lines
    assert any(line.startswith(f"  unix socket: {agent}") for line in lines), lines
    assert any(line.startswith(f"  unix socket: {sandbox.base}/gone.sock")
               and "(missing: left out)" in line for line in lines), lines
