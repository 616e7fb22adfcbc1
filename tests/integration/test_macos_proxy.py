"""macOS proxy mode end to end on Linux: the real launcher, the real proxy on loopback
ports of the supervisor, and the stand-in sandbox-exec (tests/support/macos_standins),
which records the profile and environment it was given and runs the command unconfined.

What a Mac would add is Seatbelt applying the profile; what is checked here is everything
around it: the profile admits the proxy's two ports and nothing else, the environment
names them (NODE_USE_ENV_PROXY too), and the command's clients go through the proxy,
which decides as on Linux (lists, address guard, refusals reported).
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.grants import Grant, Snapshot
from supervisor.macos.backend import MacLauncher
from supervisor.netpolicy import NetworkRules
from support.host_server import HostServer
from support.snapshots import a_snapshot

STANDINS = Path(__file__).resolve().parent.parent / "support" / "macos_standins"
REFUSED = "not-allowed.invalid"


@pytest.fixture
def server() -> Iterator[HostServer]:
    with HostServer(body=lambda path: b"served\n") as one:
        yield one


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = tmp_path / "standin"
    shared.mkdir()
    monkeypatch.setenv("LNK_STANDIN_DIR", str(shared))
    return shared


NO_RULES = NetworkRules()


def snapshot(folder: Path, allow: tuple[str, ...], *, mode: str = "proxy",
             rules: NetworkRules = NO_RULES) -> Snapshot:
    project = folder.parent / "proj"
    project.mkdir(exist_ok=True)
    return a_snapshot(
        Grant(".", str(project), "write", "files.write[0]", "files.write[0]", 2),
        source="spec.toml", home=str(folder.parent), cwd=str(project), uid=os.geteuid(),
        network_mode=mode, allow=allow, assign=(("LNK_STANDIN_DIR", str(folder)),),
        network=rules)


def launcher() -> MacLauncher:
    return MacLauncher(sandbox_exec=str(STANDINS / "sandbox-exec"), log=str(STANDINS / "log"))


def recorded(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / "sandbox-exec.json").read_text())
    return data


def test_the_proxy_runs_on_loopback_ports_the_profile_alone_admits(
        folder: Path, server: HostServer, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.txt"
    report = tmp_path / "report.jsonl"
    script = (
        f'curl -sS --noproxy "" http://localhost:{server.port}/absolute > {out}; '
        f'curl -sS --noproxy "" -p http://localhost:{server.port}/tunnel >> {out}; '
        f'curl -sS --noproxy "" -x "$ALL_PROXY" http://localhost:{server.port}/socks >> {out}; '
        f'curl -s --noproxy "" -o /dev/null -w "%{{http_code}}\\n" http://{REFUSED}/ >> {out}')
    status = launcher().run(snapshot(folder, (f"localhost:{server.port}",)),
                            ["sh", "-c", script], report=str(report))
    assert status == 0
    assert out.read_text().splitlines() == ["served", "served", "served", "403"]
    assert server.paths == ["/absolute", "/tunnel", "/socks"]

    seen = recorded(folder)
    env = seen["env"]
    assert isinstance(env, dict)
    http_port = int(env["HTTP_PROXY"].rsplit(":", 1)[1])
    socks_port = int(env["ALL_PROXY"].rsplit(":", 1)[1])
    assert env["HTTP_PROXY"] == env["https_proxy"] == f"http://127.0.0.1:{http_port}"
    assert env["ALL_PROXY"] == f"socks5h://127.0.0.1:{socks_port}"
    assert env["NODE_USE_ENV_PROXY"] == "1"
    assert env["NO_PROXY"] == "localhost,127.0.0.1,::1"
    profile = seen["profile"]
    assert isinstance(profile, str)
    # The only addresses the profile admits are the proxy's two ports on localhost.
    assert sorted(re.findall(r'\(remote ip "([^"]+)"\)', profile)) == sorted(
        [f"localhost:{http_port}", f"localhost:{socks_port}"])
    assert "(local ip" not in profile and "mDNSResponder" not in profile
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["subject"], e["rule"]) for e in events] == [(f"{REFUSED}:80", "network.allow")]
    assert f"lnk-sandbox: refused {REFUSED}:80 (not in [network] allow)" in capfd.readouterr().err


def test_the_address_guard_holds_on_macos_too(folder: Path, server: HostServer,
                                              tmp_path: Path) -> None:
    """`localhost` without a port resolves to the host's loopback: refused, reported, once
    for each address the machine's /etc/hosts gives it (a Debian install lists ::1 too)."""
    out = tmp_path / "out.txt"
    report = tmp_path / "report.jsonl"
    script = (f'curl -s --noproxy "" -o /dev/null -w "%{{http_code}}\\n" '
              f'http://localhost:{server.port}/ > {out}')
    status = launcher().run(snapshot(folder, ("localhost",)), ["sh", "-c", script],
                            report=str(report))
    assert status == 0
    assert out.read_text() == "403\n"
    assert server.paths == []
    events = [json.loads(line) for line in report.read_text().splitlines()]
    loopback = {info[4][0] for info in socket.getaddrinfo("localhost", server.port,
                                                         type=socket.SOCK_STREAM)}
    assert "127.0.0.1" in loopback
    assert sorted((e["subject"], e["resolved"], e["rule"]) for e in events) == sorted(
        (f"localhost:{server.port}", address, "network.address") for address in loopback)


def test_forward_and_expose_are_profile_rules_on_macos(folder: Path) -> None:
    rules = NetworkRules(forward=(5432,), expose=(3000,))
    status = launcher().run(snapshot(folder, (), mode="none", rules=rules), ["true"])
    assert status == 0
    profile = recorded(folder)["profile"]
    assert isinstance(profile, str)
    assert '(allow network-outbound (remote ip "localhost:5432"))' in profile
    assert '(allow network-bind (local ip "localhost:3000"))' in profile
    assert '(allow network-inbound (local ip "localhost:3000"))' in profile
    assert "localhost:3128" not in profile
